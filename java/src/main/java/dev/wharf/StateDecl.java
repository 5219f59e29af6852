// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * The declaration of one per-session mutable tensor of a container (a KV cache, a recurrent
 * or convolution state): name, dtype, shape and the value every new or reset {@link Session}
 * starts from. An immutable value made by {@link ContainerOptions.Builder#state}.
 *
 * <p>The initial value, when there is one, is a direct buffer that is <em>borrowed</em>: the
 * library reads it (from the position it had when the state was declared) when a container
 * is created with these options, and captures it then; later changes to the buffer are not
 * seen by that container.
 */
public final class StateDecl {
  private final String fqn;
  private final DType dtype;
  private final long[] shape;
  private final ByteBuffer initial; // a slice starting at the data; null = zeros

  StateDecl(String fqn, DType dtype, ByteBuffer initial, long[] shape) {
    this.fqn = Objects.requireNonNull(fqn, "fqn");
    this.dtype = Objects.requireNonNull(dtype, "dtype");
    this.shape = Objects.requireNonNull(shape, "shape").clone();
    if (this.shape.length > WharfNativeConstants.WHARF_MAX_DIMS) {
      throw new IllegalArgumentException("state '" + fqn + "': shape " + Arrays.toString(this.shape)
          + " has " + this.shape.length + " dimensions, more than the maximum "
          + WharfNativeConstants.WHARF_MAX_DIMS);
    }
    long bytes = Shapes.byteSize(dtype, this.shape);
    if (initial != null) {
      if (!initial.isDirect()) {
        throw new IllegalArgumentException("state '" + fqn + "': the initial value's buffer is not"
            + " direct; use ByteBuffer.allocateDirect, or the float[] overload to copy heap data");
      }
      int remaining = initial.remaining();
      if (remaining < bytes) {
        throw new IllegalArgumentException("state '" + fqn + "': " + dtype + Arrays.toString(this.shape)
            + " needs " + bytes + " bytes, but the initial value's buffer has " + remaining + " remaining");
      }
      this.initial = initial.slice();
    } else {
      this.initial = null;
    }
  }

  /**
   * The state's name.
   *
   * @return the FQN
   */
  public String fqn() {
    return fqn;
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
   * The dimensions (a copy).
   *
   * @return the shape
   */
  public long[] shape() {
    return shape.clone();
  }

  /**
   * The size of the state.
   *
   * @return bytes
   */
  public long byteSize() {
    return Shapes.byteSize(dtype, shape);
  }

  /**
   * Whether a new or reset session starts from an initial value (otherwise from zeros).
   *
   * @return true if an initial value was given
   */
  public boolean hasInitialValue() {
    return initial != null;
  }

  long[] shapeUnsafe() {
    return shape;
  }

  /** The borrowed initial value (position 0 is its first byte), or null for zeros. */
  ByteBuffer initialUnsafe() {
    return initial;
  }

  @Override
  public String toString() {
    return fqn + ": " + dtype + Arrays.toString(shape) + (initial == null ? " (zeros)" : " (initial value)");
  }
}
