// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Named tensors in host memory: FQN &rarr; (data, dtype, shape), in insertion order
 * ({@code wharf_constant_map}). A map is what {@link Container#update} and
 * {@link Container#fromMap} read, and what {@link #save(Path)} writes as safetensors.
 *
 * <p><b>Memory.</b> The native map never copies tensor data; it borrows it. This class
 * keeps that sound:
 * <ul>
 *   <li>{@link #put(String, ByteBuffer, DType, long...)} borrows a <em>direct</em> buffer
 *       without copying. The map keeps a strong reference to the buffer until it is closed,
 *       so the buffer's memory cannot be reclaimed while the map may read it. Later writes
 *       to the buffer are seen by the map (by the next update or save). A heap buffer
 *       (what {@link TensorView#asByteBuffer()} returns, say) is copied, like an array.
 *       The binding hands out no direct buffer over Wharf's own memory, so a buffer put
 *       here is always memory the JVM manages.</li>
 *   <li>The array overloads ({@code put(String, float[], long...)} and the others)
 *       <b>copy</b> the array into a new direct buffer that the map keeps: the garbage
 *       collector moves Java arrays, so native code cannot borrow them. Later writes to the
 *       array are not seen by the map.</li>
 *   <li>A map from {@link #loadSafetensors(Path)} owns a read-only memory mapping of the
 *       file, released by {@link #close()}.</li>
 * </ul>
 * Data is read in the machine's native byte order ({@link ByteOrder#nativeOrder()}),
 * whatever order a buffer is set to.
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed map throws {@link IllegalStateException}. A container does not keep the map:
 * updates copy the data before they return.
 *
 * <p><b>Threads.</b> Safe to use from many threads: reads (including updates and saves that
 * read it) run concurrently, and {@code put} waits until no other call is using the map.
 */
public final class ConstantMap extends NativeHandle<SWIGTYPE_p_wharf_constant_map> {
  private final String origin;
  // Buffers the native map borrows; guarded by itself.
  private final List<ByteBuffer> borrowed;

  private ConstantMap(SWIGTYPE_p_wharf_constant_map pointer, String origin) {
    this(pointer, origin, new ArrayList<>());
  }

  private ConstantMap(SWIGTYPE_p_wharf_constant_map pointer, String origin, List<ByteBuffer> borrowed) {
    // The buffers live as long as the native map that reads them (the free function keeps
    // them, not the map object).
    super(pointer, p -> {
      WharfNative.wharf_constant_map_free(p);
      synchronized (borrowed) {
        borrowed.clear(); // the native map no longer reads them
      }
    });
    this.origin = origin;
    this.borrowed = borrowed;
    nameForLeaks();
  }

  /**
   * Creates an empty map.
   *
   * @return a new map, owned by the caller
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static ConstantMap create() {
    NativeLibrary.load();
    return adopt(WharfNative.wharf_swig_constant_map_create(), null);
  }

  /**
   * Memory-maps a safetensors file read-only and returns a map of its tensors, in file
   * order. The whole file is validated first. The mapping lives until the map is closed.
   *
   * @param path the file, on the default file system
   * @return a new map, owned by the caller
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} or
   *     {@link WharfException.Code#IO_ERROR} for the file,
   *     {@link WharfException.Code#DATA_CORRUPT} naming the tensor and what is wrong
   * @throws IllegalArgumentException if the path is not on the default file system
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static ConstantMap loadSafetensors(Path path) {
    String file = nativePath(path);
    NativeLibrary.load();
    return adopt(WharfNative.wharf_swig_constant_map_load_safetensors(file), file);
  }

  private static ConstantMap adopt(SWIGTYPE_p_wharf_constant_map pointer, String origin) {
    try {
      return new ConstantMap(pointer, origin);
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_constant_map_free(pointer);
      throw e;
    }
  }

  static String nativePath(Path path) {
    Objects.requireNonNull(path, "path");
    if (path.getFileSystem() != FileSystems.getDefault()) {
      throw new IllegalArgumentException("path " + path + " is not on the default file system");
    }
    return path.toAbsolutePath().toString();
  }

  @Override
  String describe() {
    return origin == null ? "ConstantMap" : "ConstantMap (" + origin + ")";
  }

  /**
   * Adds a tensor whose data is borrowed, without a copy, from a direct buffer: the bytes
   * from the buffer's position on (its position and limit are not changed). The map keeps a
   * strong reference to {@code data} until it is closed, and reads the buffer's current
   * contents whenever it is used. A heap buffer (not direct: a copy from
   * {@link TensorView#asByteBuffer()} or {@link FoldRun#writableBuffer}, or a wrapped array)
   * is <b>copied</b> instead, its bytes from its position on, like
   * {@link #put(String, byte[], DType, long...)}.
   *
   * @param fqn the tensor's name
   * @param data a buffer with at least the tensor's byte size remaining
   * @param dtype the element type
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if {@code data} has too few bytes remaining, or the
   *     shape has a negative dimension or more than 8 dimensions
   * @throws WharfException {@link WharfException.Code#ALREADY_EXISTS} if the name is in the
   *     map, {@link WharfException.Code#INVALID_ARGUMENT} for an empty name; the map is then
   *     unchanged
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, ByteBuffer data, DType dtype, long... shape) {
    Objects.requireNonNull(fqn, "fqn");
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(dtype, "dtype");
    long[] dims = Objects.requireNonNull(shape, "shape").clone();
    Shapes.checkRank(fqn, dims);
    long bytes = Shapes.byteSize(dtype, dims);
    int position = data.position(); // read once: the checks and the address must agree
    int remaining = data.limit() - position;
    if (remaining < bytes) {
      throw new IllegalArgumentException("constant '" + fqn + "': " + dtype + Arrays.toString(dims)
          + " needs " + bytes + " bytes, but the buffer has " + remaining + " remaining");
    }
    if (!data.isDirect()) {
      ByteBuffer from = data.duplicate();
      from.position(position).limit(position + (int) bytes);
      ByteBuffer buffer = copy(bytes).put(from);
      buffer.clear();
      put(fqn, buffer, dtype, dims);
      return;
    }
    long base = WharfNative.wharf_swig_direct_buffer_address(data);
    if (base == 0) {
      throw new IllegalArgumentException("constant '" + fqn + "': the buffer's address is not available");
    }
    long address = base + position;
    try {
      withPointerExclusive(p -> {
        WharfNative.wharf_swig_constant_map_set(p, fqn, address, dtype.value(), DeviceType.CPU.value(), 0, dims);
        synchronized (borrowed) {
          borrowed.add(data);
        }
        return null;
      });
    } finally {
      Reference.reachabilityFence(data);
    }
  }

  /**
   * Adds a tensor of raw bytes, <b>copied</b> into a direct buffer the map keeps (Java
   * arrays can move, so the map cannot borrow them). Later changes to the array are not seen.
   *
   * @param fqn the tensor's name
   * @param data the elements' bytes in native byte order; exactly the tensor's byte size
   * @param dtype the element type (any)
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the array's length is not the tensor's byte size
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, byte[] data, DType dtype, long... shape) {
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(dtype, "dtype");
    checkLength(fqn, data.length, 1, dtype, shape);
    putCopy(fqn, dtype, shape, copy(data.length).put(data));
  }

  /**
   * Adds an {@link DType#I8} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, byte[] data, long... shape) {
    put(fqn, data, DType.I8, shape);
  }

  /**
   * Adds a 16-bit tensor from {@code short} elements, <b>copied</b> (see
   * {@link #put(String, byte[], DType, long...)}): {@link DType#I16} values, or the bit
   * patterns of {@link DType#F16} or {@link DType#BF16} values.
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param dtype {@link DType#I16}, {@link DType#F16} or {@link DType#BF16}
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the dtype is not 16-bit or the element count does
   *     not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, short[] data, DType dtype, long... shape) {
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(dtype, "dtype");
    checkLength(fqn, data.length, 2, dtype, shape);
    ByteBuffer buffer = copy(data.length * 2L);
    buffer.asShortBuffer().put(data);
    putCopy(fqn, dtype, shape, buffer);
  }

  /**
   * Adds an {@link DType#I16} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, short[] data, long... shape) {
    put(fqn, data, DType.I16, shape);
  }

  /**
   * Adds an {@link DType#I32} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, int[] data, long... shape) {
    Objects.requireNonNull(data, "data");
    checkLength(fqn, data.length, 4, DType.I32, shape);
    ByteBuffer buffer = copy(data.length * 4L);
    buffer.asIntBuffer().put(data);
    putCopy(fqn, DType.I32, shape, buffer);
  }

  /**
   * Adds an {@link DType#I64} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, long[] data, long... shape) {
    Objects.requireNonNull(data, "data");
    checkLength(fqn, data.length, 8, DType.I64, shape);
    ByteBuffer buffer = copy(data.length * 8L);
    buffer.asLongBuffer().put(data);
    putCopy(fqn, DType.I64, shape, buffer);
  }

  /**
   * Adds an {@link DType#F32} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, float[] data, long... shape) {
    Objects.requireNonNull(data, "data");
    checkLength(fqn, data.length, 4, DType.F32, shape);
    ByteBuffer buffer = copy(data.length * 4L);
    buffer.asFloatBuffer().put(data);
    putCopy(fqn, DType.F32, shape, buffer);
  }

  /**
   * Adds an {@link DType#F64} tensor, <b>copied</b> (see {@link #put(String, byte[], DType, long...)}).
   *
   * @param fqn the tensor's name
   * @param data the elements, row-major; as many as the shape has
   * @param shape the dimensions (none for a scalar)
   * @throws IllegalArgumentException if the element count does not match the shape
   * @throws WharfException as {@link #put(String, ByteBuffer, DType, long...)}
   * @throws IllegalStateException if the map has been closed
   */
  public void put(String fqn, double[] data, long... shape) {
    Objects.requireNonNull(data, "data");
    checkLength(fqn, data.length, 8, DType.F64, shape);
    ByteBuffer buffer = copy(data.length * 8L);
    buffer.asDoubleBuffer().put(data);
    putCopy(fqn, DType.F64, shape, buffer);
  }

  private static void checkLength(String fqn, int length, int unitBytes, DType dtype, long[] shape) {
    Objects.requireNonNull(fqn, "fqn");
    Objects.requireNonNull(shape, "shape");
    if (unitBytes != 1 && dtype.byteSize() != unitBytes) { // byte[] holds raw bytes of any dtype
      throw new IllegalArgumentException("constant '" + fqn + "': " + dtype + " elements are "
          + dtype.byteSize() + " bytes, not " + unitBytes + " like the array's");
    }
    long units = Shapes.byteSize(dtype, shape) / unitBytes;
    if (length != units) {
      throw new IllegalArgumentException("constant '" + fqn + "': " + dtype + Arrays.toString(shape)
          + " needs " + units + (unitBytes == 1 ? " bytes" : " array elements") + ", got " + length);
    }
  }

  private static ByteBuffer copy(long bytes) {
    if (bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(bytes + " bytes do not fit in one direct ByteBuffer"
          + " (at most 2^31-1 bytes); split the tensor or load it from a safetensors file");
    }
    return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
  }

  private void putCopy(String fqn, DType dtype, long[] shape, ByteBuffer buffer) {
    buffer.clear();
    put(fqn, buffer, dtype, shape);
  }

  /**
   * Looks up a tensor. The view's data is the map's (a buffer put in, or the file mapping)
   * and is readable while the map is open.
   *
   * @param fqn the tensor's name
   * @return the tensor's view, owned by this map
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn}
   * @throws IllegalStateException if the map has been closed
   */
  public TensorView find(String fqn) {
    Objects.requireNonNull(fqn, "fqn");
    return withPointer(p -> {
      wharf_tensor_view view = new wharf_tensor_view();
      try {
        WharfNative.wharf_constant_map_find(p, fqn, view);
        return TensorView.copyOf(this, fqn, view);
      } finally {
        view.delete();
      }
    });
  }

  /**
   * Whether the map has a tensor of that name.
   *
   * @param fqn the tensor's name
   * @return true if {@link #find(String)} would find it
   * @throws IllegalStateException if the map has been closed
   */
  public boolean contains(String fqn) {
    return names().contains(Objects.requireNonNull(fqn, "fqn"));
  }

  /**
   * The number of tensors.
   *
   * @return the count
   * @throws IllegalStateException if the map has been closed
   */
  public int size() {
    return withPointer(p -> Math.toIntExact(WharfNative.wharf_constant_map_num_entries(p)));
  }

  /**
   * The tensors' names in insertion (or file) order.
   *
   * @return an unmodifiable snapshot of the names
   * @throws IllegalStateException if the map has been closed
   */
  public List<String> names() {
    return withPointer(p -> {
      long n = WharfNative.wharf_constant_map_num_entries(p);
      List<String> names = new ArrayList<>((int) n);
      for (long i = 0; i < n; i++) names.add(WharfNative.wharf_swig_constant_map_entry_name(p, i));
      return Collections.unmodifiableList(names);
    });
  }

  /**
   * The {@code __metadata__} of the map: read from its safetensors file, and set with
   * {@link #setMetadata(String, String)}.
   *
   * @return an unmodifiable snapshot, in file order
   * @throws IllegalStateException if the map has been closed
   */
  public Map<String, String> metadata() {
    return withPointer(p -> {
      long n = WharfNative.wharf_constant_map_num_metadata_entries(p);
      Map<String, String> metadata = new LinkedHashMap<>();
      for (long i = 0; i < n; i++) {
        metadata.put(WharfNative.wharf_swig_constant_map_metadata_key(p, i),
            WharfNative.wharf_swig_constant_map_metadata_value(p, i));
      }
      return Collections.unmodifiableMap(metadata);
    });
  }

  /**
   * Sets the {@code __metadata__} entry {@code key} to {@code value} (both copied), on any map:
   * a new key is appended, an existing one keeps its place and takes the new value;
   * {@link #save(Path)} writes them. Key and value may be empty. Waits, as {@code put}, until
   * no other call uses the map. Since 0.3.
   *
   * @param key the metadata key
   * @param value its value
   * @throws IllegalArgumentException if the key or value contains a NUL character (the map is
   *     unchanged)
   * @throws IllegalStateException if the map has been closed
   */
  public void setMetadata(String key, String value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    withPointerExclusive(p -> {
      WharfNative.wharf_constant_map_set_metadata(p, key, value);
      return null;
    });
  }

  /**
   * Writes every tensor to a safetensors file, created or replaced atomically (written to a
   * temporary file, then renamed).
   *
   * @param path the file, on the default file system
   * @throws WharfException {@link WharfException.Code#IO_ERROR}
   * @throws IllegalArgumentException if the path is not on the default file system
   * @throws IllegalStateException if the map has been closed
   */
  public void save(Path path) {
    String file = nativePath(path);
    withPointer(p -> {
      WharfNative.wharf_constant_map_save_safetensors(p, file);
      return null;
    });
  }

  @Override
  public String toString() {
    try {
      return describe() + names();
    } catch (IllegalStateException closed) {
      return describe() + "{closed}";
    }
  }
}
