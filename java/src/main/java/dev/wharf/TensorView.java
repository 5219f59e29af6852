// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor as a {@link Run} or a {@link ConstantMap} sees it: name, dtype, shape, device and
 * the address of its data. The description is an immutable value; the data belongs to the
 * run or map it came from (its <em>owner</em>), and this view keeps the owner reachable.
 * A model's outputs ({@link Model#run(Run, TensorView...)}) are owned by the run too.
 * {@link #ofHost} and {@link #ofDevice} describe the caller's own memory (model inputs).
 *
 * <p>{@link #asByteBuffer()}, {@link #toByteArray()} and {@link #read(long, ByteBuffer)}
 * <em>copy</em> the data into Java memory (a run's tensors, a model's outputs included, on
 * CUDA too; a map's from host memory), so nothing Java code keeps can reach Wharf's memory
 * after its owner frees it: the binding never hands out a direct buffer over memory Wharf
 * owns (as ONNX Runtime's Java API returns copies, for the same reason). CUDA kernels use
 * {@link #address()}. Once the owner is closed, all three throw
 * {@link IllegalStateException}, and so does passing the view to
 * {@link Model#run(Run, TensorView...)}.
 */
public final class TensorView {
  private final NativeHandle<?> owner; // null for the caller's own memory (ofHost, ofDevice)
  private final ByteBuffer host;       // ofHost: the caller's buffer (a slice from its position)
  private final boolean output;        // an output of Model#run: not named in the run
  private final String name;
  private final DType dtype;
  private final long[] shape;
  private final DeviceType deviceType;
  private final int deviceIndex;
  private final long address;
  private final boolean contiguous;
  private final long byteSize;
  private final boolean readOnly;      // the library marked it WHARF_VIEW_READ_ONLY

  private TensorView(NativeHandle<?> owner, String name, DType dtype, long[] shape,
      DeviceType deviceType, int deviceIndex, long address, boolean contiguous, boolean readOnly) {
    this(owner, null, false, name, dtype, shape, deviceType, deviceIndex, address, contiguous, readOnly);
  }

  private TensorView(NativeHandle<?> owner, ByteBuffer host, boolean output, String name, DType dtype,
      long[] shape, DeviceType deviceType, int deviceIndex, long address, boolean contiguous, boolean readOnly) {
    this.owner = owner;
    this.readOnly = readOnly;
    this.host = host;
    this.output = output;
    this.name = name;
    this.dtype = dtype;
    this.shape = shape;
    this.deviceType = deviceType;
    this.deviceIndex = deviceIndex;
    this.address = address;
    this.contiguous = contiguous;
    this.byteSize = Shapes.byteSize(dtype, shape);
  }

  /** Copies a filled native view; call while {@code owner}'s lock is held. */
  static TensorView copyOf(NativeHandle<?> owner, String name, wharf_tensor_view view) {
    long[] shape = new long[view.getNdim()];
    for (int i = 0; i < shape.length; i++) shape[i] = view.dim(i);
    return new TensorView(owner, name, DType.fromValue(view.getDtype()), shape,
        DeviceType.fromValue(view.getDevice_type()), view.getDevice_index(), view.data_address(),
        view.contiguous() != 0, (view.getFlags() & WharfNativeConstants.WHARF_VIEW_READ_ONLY) != 0);
  }

  /** Copies a slot view filled by {@code wharf_run_wait_offload}; call while the slots' lock is held. */
  static TensorView slotOf(OffloadSlots slots, String name, wharf_tensor_view view) {
    long[] shape = new long[view.getNdim()];
    for (int i = 0; i < shape.length; i++) shape[i] = view.dim(i);
    return new TensorView(slots, null, true, name, DType.fromValue(view.getDtype()), shape,
        DeviceType.fromValue(view.getDevice_type()), view.getDevice_index(), view.data_address(),
        view.contiguous() != 0, true);
  }

  /**
   * Copies the slot index view of a run ({@code wharf_run_get_slot_indices}); call while the
   * run's lock is held. Not named in the run, it is read by address (as an output), and it
   * is the library's: read-only.
   */
  static TensorView slotIndicesOf(Run run, wharf_tensor_view view) {
    long[] shape = new long[view.getNdim()];
    for (int i = 0; i < shape.length; i++) shape[i] = view.dim(i);
    return new TensorView(run, null, true, "slot indices", DType.fromValue(view.getDtype()), shape,
        DeviceType.fromValue(view.getDevice_type()), view.getDevice_index(), view.data_address(),
        view.contiguous() != 0, true);
  }

  /** Copies an output view filled by {@code wharf_model_run}; call while the run's lock is held. */
  static TensorView outputOf(Run run, int index, wharf_tensor_view view) {
    long[] shape = new long[view.getNdim()];
    for (int i = 0; i < shape.length; i++) shape[i] = view.dim(i);
    return new TensorView(run, null, true, "output " + index, DType.fromValue(view.getDtype()), shape,
        DeviceType.fromValue(view.getDevice_type()), view.getDevice_index(), view.data_address(),
        view.contiguous() != 0, (view.getFlags() & WharfNativeConstants.WHARF_VIEW_READ_ONLY) != 0);
  }

  /**
   * A view of the caller's own host memory, for inputs of
   * {@link Model#run(Run, TensorView...)}: the bytes of a direct buffer from its
   * position on, contiguous row-major, in native byte order. The view keeps the buffer
   * reachable; nothing is copied here ({@code Model.run} copies it to the device on the run's
   * stream, and the buffer may be reused once that call returns).
   *
   * @param data a direct buffer with at least the tensor's byte size remaining
   * @param dtype the element type
   * @param shape the dimensions (none for a scalar)
   * @return a view without an owner
   * @throws IllegalArgumentException if {@code data} is not direct or too small, or the shape
   *     has a negative dimension or more than 8 dimensions
   */
  public static TensorView ofHost(ByteBuffer data, DType dtype, long... shape) {
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(dtype, "dtype");
    long[] dims = Objects.requireNonNull(shape, "shape").clone();
    if (!data.isDirect()) {
      throw new IllegalArgumentException("the buffer is not direct; use ByteBuffer.allocateDirect");
    }
    Shapes.checkRank("host tensor", dims);
    long bytes = Shapes.byteSize(dtype, dims);
    if (data.remaining() < bytes) {
      throw new IllegalArgumentException(dtype + Arrays.toString(dims) + " needs " + bytes
          + " bytes, but the buffer has " + data.remaining() + " remaining");
    }
    ByteBuffer slice = data.slice().order(ByteOrder.nativeOrder());
    NativeLibrary.load();
    long address = WharfNative.wharf_swig_direct_buffer_address(slice);
    return new TensorView(null, slice, false, "host tensor", dtype, dims, DeviceType.CPU, 0, address, true, false);
  }

  /**
   * A view of CUDA device memory the caller manages (allocated with a CUDA binding, for
   * example), for inputs of {@link Model#run(Run, TensorView...)}: contiguous row-major.
   * The memory must stay valid, and hold its values on the run's stream, while the model
   * reads it.
   *
   * @param address the device pointer
   * @param dtype the element type
   * @param deviceIndex the CUDA device ordinal (the runtime's device)
   * @param shape the dimensions (none for a scalar)
   * @return a view without an owner
   * @throws IllegalArgumentException if the address is 0, or the shape has a negative
   *     dimension or more than 8 dimensions
   */
  public static TensorView ofDevice(long address, DType dtype, int deviceIndex, long... shape) {
    Objects.requireNonNull(dtype, "dtype");
    long[] dims = Objects.requireNonNull(shape, "shape").clone();
    if (address == 0) throw new IllegalArgumentException("device tensor at address 0");
    Shapes.checkRank("device tensor", dims);
    Shapes.byteSize(dtype, dims);
    return new TensorView(null, null, false, "device tensor", dtype, dims, DeviceType.CUDA, deviceIndex, address, true, false);
  }

  /** The run or map whose memory this is, or null for the caller's own (ofHost, ofDevice). */
  NativeHandle<?> owner() {
    return owner;
  }

  /** The caller's buffer of an {@link #ofHost} view (null otherwise), to keep reachable while it is read. */
  ByteBuffer hostBuffer() {
    return host;
  }

  /** Whether the view is contiguous row-major. */
  boolean isContiguous() {
    return contiguous;
  }

  /**
   * The tensor's name (FQN).
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The element type.
   *
   * @return the dtype
   */
  public DType dtype() {
    return dtype;
  }

  /**
   * The dimensions (a copy); empty for a scalar.
   *
   * @return the shape
   */
  public long[] shape() {
    return shape.clone();
  }

  /**
   * The number of dimensions.
   *
   * @return 0 for a scalar
   */
  public int ndim() {
    return shape.length;
  }

  /**
   * The number of elements (the product of the dimensions; 1 for a scalar).
   *
   * @return the element count
   */
  public long elementCount() {
    return Shapes.elementCount(shape);
  }

  /**
   * The size of the data.
   *
   * @return {@link #elementCount()} times the dtype's size, in bytes
   */
  public long byteSize() {
    return byteSize;
  }

  /**
   * Where the data lives.
   *
   * @return {@link DeviceType#CPU} for host memory, {@link DeviceType#CUDA} for device memory
   */
  public DeviceType deviceType() {
    return deviceType;
  }

  /**
   * The CUDA device ordinal of the data (meaningful for {@link DeviceType#CUDA}).
   *
   * @return the ordinal
   */
  public int deviceIndex() {
    return deviceIndex;
  }

  /**
   * The data's address: a device pointer for CUDA tensors, a host pointer otherwise. It is
   * valid while the owner is open (until the run is closed; for a map, while the map is
   * open).
   *
   * @return the address as an integer
   */
  public long address() {
    return address;
  }

  /**
   * Whether the library marked the memory read-only ({@code WHARF_VIEW_READ_ONLY}): a
   * constant of a run, which other generations, containers and runs share; in a
   * {@link FoldRun}, every constant except derived ones and the ones the update writes; an
   * entry of a map loaded from a file. Such memory must not be written, by native code
   * through {@link #address()} either; {@link FoldRun#writableBuffer} refuses it.
   *
   * @return true if the memory must not be written
   */
  public boolean isReadOnly() {
    return readOnly;
  }

  /**
   * Copies the data into a new read-only heap buffer, in native byte order: the same bytes
   * as {@link #toByteArray()}, ready for {@code asFloatBuffer()} and the like. The copy is
   * the caller's to keep however long; later changes to the tensor are not seen.
   *
   * @return a read-only heap buffer of {@link #byteSize()} bytes
   * @throws IllegalStateException if the owner has been closed
   * @throws UnsupportedOperationException as {@link #toByteArray()}
   */
  public ByteBuffer asByteBuffer() {
    return ByteBuffer.wrap(toByteArray()).asReadOnlyBuffer().order(ByteOrder.nativeOrder());
  }

  /**
   * Copies the data into a new array (bytes in native byte order), safe to keep however
   * long. A run's tensors are copied with {@link Run#read(String, long, ByteBuffer)} (a
   * model's outputs with {@link #read(long, ByteBuffer)}), so this works for CUDA tensors too
   * (and waits for the run's stream); a map's are copied from host memory while the map is
   * held open.
   *
   * @return the tensor's bytes
   * @throws IllegalStateException if the owner has been closed
   * @throws UnsupportedOperationException if the data is larger than an array can hold, or
   *     (for a map's tensor) strided
   */
  public byte[] toByteArray() {
    if (byteSize > Integer.MAX_VALUE - 8) {
      throw new UnsupportedOperationException("tensor '" + name + "' has " + byteSize
          + " bytes, more than a Java array can hold");
    }
    if (owner == null) {
      byte[] bytes = new byte[(int) checkedReadableSize()];
      host.duplicate().get(bytes);
      return bytes;
    }
    if (owner instanceof Run || owner instanceof OffloadSlots) {
      ByteBuffer copy = ByteBuffer.allocateDirect((int) byteSize);
      if (output) {
        read(0, copy);
      } else {
        ((Run) owner).read(name, 0, copy);
      }
      byte[] bytes = new byte[(int) byteSize];
      copy.flip();
      copy.get(bytes);
      return bytes;
    }
    return owner.withPointer(p -> {
      byte[] bytes = new byte[(int) checkedReadableSize()];
      if (bytes.length > 0) nativeBytes().get(bytes);
      return bytes;
    });
  }

  /**
   * Copies bytes of a run's tensor (a model's output, a constant or a session state) into a
   * direct buffer: {@code dst.remaining()} bytes, starting at byte {@code offset} of the
   * tensor, written from {@code dst}'s position on, which then advances past them. Works for
   * CUDA tensors: the copy is ordered on the run's stream after the work enqueued so far (the
   * model that wrote an output), and this waits for it ({@code wharf_run_copy}). Reading the
   * last row of a model's logits is {@code logits.read((rows - 1) * rowBytes, row)}.
   *
   * @param offset the first byte of the tensor to copy
   * @param dst a direct, writable buffer
   * @throws IllegalArgumentException if {@code dst} is not direct, {@code offset} is
   *     negative or the range passes the tensor's bytes
   * @throws java.nio.ReadOnlyBufferException if {@code dst} is read-only
   * @throws UnsupportedOperationException if the view is not a run's, or is strided
   * @throws IllegalStateException if the run has been closed
   * @throws WharfException {@link WharfException.Code#DEVICE_ERROR}
   */
  public void read(long offset, ByteBuffer dst) {
    Objects.requireNonNull(dst, "dst");
    if (!(owner instanceof Run) && !(owner instanceof OffloadSlots)) {
      throw new UnsupportedOperationException("tensor '" + name + "' is not a run's; copy it with toByteArray()");
    }
    if (!dst.isDirect()) {
      throw new IllegalArgumentException("reading '" + name + "': the buffer is not direct; use ByteBuffer.allocateDirect");
    }
    if (dst.isReadOnly()) throw new java.nio.ReadOnlyBufferException();
    int position = dst.position();
    int bytes = dst.remaining();
    if (offset < 0 || offset > byteSize || bytes > byteSize - offset) {
      throw new IllegalArgumentException("reading '" + name + "': bytes [" + offset + ", " + (offset + bytes)
          + ") are outside its " + byteSize + " bytes");
    }
    if (!contiguous) throw new UnsupportedOperationException("tensor '" + name + "' is strided, not contiguous");
    try {
      // A run's view, or an offload slot's (whose owner's pointer is the run's).
      @SuppressWarnings("unchecked")
      NativeHandle<SWIGTYPE_p_wharf_run> runOwner = (NativeHandle<SWIGTYPE_p_wharf_run>) owner;
      runOwner.withPointer(p -> {
        if (bytes > 0) {
          WharfNative.wharf_swig_run_copy(p, WharfNative.wharf_swig_direct_buffer_address(dst) + position,
              address + offset, bytes);
        }
        return null;
      });
    } finally {
      java.lang.ref.Reference.reachabilityFence(dst);
    }
    dst.position(position + bytes);
  }

  /**
   * The host data as a direct buffer over the owner's memory, to copy from; only inside
   * owner.withPointer, and never handed out (it would outlive the memory).
   */
  private ByteBuffer nativeBytes() {
    return WharfNative.wharf_swig_byte_view(address, checkedReadableSize());
  }

  private long checkedReadableSize() {
    if (deviceType != DeviceType.CPU && output) {
      throw new UnsupportedOperationException(name + " of the model is in " + deviceType + " device memory (device "
          + deviceIndex + "), owned by the run; copy it with read(offset, buffer) or toByteArray() before the run"
          + " is closed");
    }
    if (deviceType != DeviceType.CPU) {
      throw new UnsupportedOperationException("tensor '" + name + "' is in " + deviceType
          + " device memory (device " + deviceIndex + "); only host tensors can be read from Java,"
          + " use address() with CUDA code");
    }
    if (!contiguous) {
      throw new UnsupportedOperationException("tensor '" + name + "' is strided, not contiguous");
    }
    if (byteSize > Integer.MAX_VALUE - 8) {
      throw new UnsupportedOperationException("tensor '" + name + "' has " + byteSize
          + " bytes, more than a Java buffer or array can hold");
    }
    return byteSize;
  }

  @Override
  public String toString() {
    return "TensorView{" + name + ", " + dtype + Arrays.toString(shape) + ", " + deviceType
        + (deviceType == DeviceType.CUDA ? ":" + deviceIndex : "") + ", " + byteSize + " bytes}";
  }
}
