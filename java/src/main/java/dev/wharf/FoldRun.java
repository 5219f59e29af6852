// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Objects;

/**
 * The run a {@link Fold} receives: a view of the generation an update is writing. Valid only
 * during the callback (its methods then throw {@link IllegalStateException}); the update owns
 * it, so it is never closed by the callback.
 */
public final class FoldRun extends NativeHandle<SWIGTYPE_p_wharf_run> {
  private final String container;

  FoldRun(SWIGTYPE_p_wharf_run pointer, String container) {
    super(pointer);
    this.container = container;
  }

  @Override
  String describe() {
    return "fold run of " + container;
  }

  @Override
  void free(SWIGTYPE_p_wharf_run pointer) {
    // The update ends its run itself.
  }

  /**
   * A constant of the generation being written (derived ones included, to be computed):
   * dtype, shape and storage {@link TensorView#address() address}, valid during the
   * callback. Derived constants are written there by the caller's own code (native kernels on
   * {@link #stream()} on CUDA; host memory on the host backend, see {@link #writableBuffer}).
   *
   * @param fqn the constant's name
   * @return the constant's view
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn}
   */
  public TensorView tensor(String fqn) {
    Objects.requireNonNull(fqn, "fqn");
    return withPointer(p -> {
      wharf_tensor_view view = new wharf_tensor_view();
      try {
        WharfNative.wharf_run_tensor(p, fqn, view);
        return TensorView.copyOf(this, fqn, view);
      } finally {
        view.delete();
      }
    });
  }

  /**
   * A writable direct buffer over a constant's storage (host backend, or host-placed
   * constants): how a Java fold writes a derived constant. Valid during the callback only.
   *
   * @param fqn the constant's name
   * @return a native-order buffer of the constant's bytes
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn}
   * @throws UnsupportedOperationException if the constant is in CUDA memory
   */
  public java.nio.ByteBuffer writableBuffer(String fqn) {
    TensorView view = tensor(fqn);
    if (view.deviceType() != DeviceType.CPU) {
      throw new UnsupportedOperationException("constant '" + fqn + "' is in CUDA memory; write it with a kernel");
    }
    return withPointer(p -> {
      ViewRegistry.handedOut(this, view.address(), view.byteSize());
      return WharfNative.wharf_swig_byte_view(view.address(), view.byteSize());
    }).order(java.nio.ByteOrder.nativeOrder());
  }

  /**
   * The stream to launch the fold's work on (a {@code cudaStream_t}; 0 on the host backend).
   *
   * @return the stream's address
   */
  public long stream() {
    return withPointer(WharfNative::wharf_swig_run_stream);
  }
}
