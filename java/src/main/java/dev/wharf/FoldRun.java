// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The run a {@link Fold} receives: a view of the generation an update is writing. Valid only
 * during the callback (its methods then throw {@link IllegalStateException}); the update owns
 * it, so it is never closed by the callback.
 */
public final class FoldRun extends NativeHandle<SWIGTYPE_p_wharf_run> {
  private final String container;
  // The copies writableBuffer handed out, by name; guarded by itself.
  private final Map<String, Written> written = new LinkedHashMap<>();

  FoldRun(SWIGTYPE_p_wharf_run pointer, String container) {
    super(pointer, null); // the update ends its run itself
    this.container = container;
  }

  @Override
  String describe() {
    return "fold run of " + container;
  }

  /**
   * A constant of the generation being written (derived ones included, to be computed):
   * dtype, shape and storage {@link TensorView#address() address}, valid during the
   * callback. Derived constants are written there by the caller's own code (native kernels on
   * {@link #stream()} on CUDA; on the host backend, through the copy {@link #writableBuffer} gives).
   * Only derived constants and the constants the update writes may be written: the others
   * are {@link TensorView#isReadOnly() read-only} (their storage is the active generation's).
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
        WharfNative.wharf_run_get_tensor(p, fqn, view);
        return TensorView.copyOf(this, fqn, view);
      } finally {
        view.delete();
      }
    });
  }

  /**
   * A writable buffer holding a copy of a constant's bytes (host backend, or host-placed
   * constants): how a Java fold writes a derived constant. It is a heap buffer in native
   * byte order, never a view of Wharf's memory: what it holds when the callback returns
   * (successfully) is copied into the constant, before the update goes on. Asking again for
   * the same constant in one callback gives a view of the same copy. Writes after the
   * callback has returned (from a thread it started, say) reach nothing, and never memory
   * that has been freed.
   *
   * @param fqn the constant's name
   * @return a native-order heap buffer of the constant's bytes, positioned at 0
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn}
   * @throws UnsupportedOperationException if the constant is read-only in this fold (it is
   *     neither derived nor written by this update: its storage is the active generation's,
   *     which open and new runs read; read it with {@link TensorView#asByteBuffer()}), in
   *     CUDA memory, or larger than a Java buffer can hold (2 GiB)
   * @throws IllegalStateException once the callback has returned
   */
  public ByteBuffer writableBuffer(String fqn) {
    Objects.requireNonNull(fqn, "fqn");
    TensorView view = tensor(fqn);
    if (view.isReadOnly()) {
      throw new UnsupportedOperationException("constant '" + fqn + "' of " + container + " is read-only in this fold:"
          + " this update does not write it, so its storage is the active generation's, which open and new runs"
          + " read (a fold writes derived constants and the constants its update writes); read it with"
          + " tensor(fqn).asByteBuffer()");
    }
    if (view.deviceType() != DeviceType.CPU) {
      throw new UnsupportedOperationException("constant '" + fqn + "' is in CUDA memory; write it with a kernel");
    }
    if (view.byteSize() > Integer.MAX_VALUE - 8) {
      throw new UnsupportedOperationException("constant '" + fqn + "' has " + view.byteSize()
          + " bytes, more than a Java buffer can hold");
    }
    ByteBuffer copy = withPointer(p -> {
      synchronized (written) {
        Written w = written.get(fqn);
        if (w == null) {
          ByteBuffer b = ByteBuffer.allocate((int) view.byteSize());
          if (view.byteSize() > 0) b.put(WharfNative.wharf_swig_byte_view(view.address(), view.byteSize()));
          w = new Written(view.address(), b);
          written.put(fqn, w);
        }
        return w.copy;
      }
    });
    return copy.duplicate().clear().order(ByteOrder.nativeOrder());
  }

  /** A copy handed out by {@link #writableBuffer}, and where it goes back. */
  private static final class Written {
    final long address;
    final ByteBuffer copy;

    Written(long address, ByteBuffer copy) {
      this.address = address;
      this.copy = copy;
    }
  }

  /**
   * Copies what {@link #writableBuffer} handed out back into the constants; called by the
   * update's trampoline after the callback returned successfully, before the run closes.
   */
  void writeBack() {
    withPointer(p -> {
      synchronized (written) {
        for (Written w : written.values()) {
          ByteBuffer src = w.copy.duplicate().clear();
          if (src.remaining() > 0) WharfNative.wharf_swig_byte_view(w.address, src.remaining()).put(src);
        }
        written.clear();
      }
      return null;
    });
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
