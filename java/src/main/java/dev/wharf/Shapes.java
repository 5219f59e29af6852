// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;
import java.util.Objects;

/** Shape arithmetic shared by the API classes. */
final class Shapes {
  private Shapes() {}

  /**
   * The product of the dimensions (1 for a scalar).
   *
   * @throws IllegalArgumentException for a negative dimension or a product past 2^63-1
   */
  static long elementCount(long[] shape) {
    Objects.requireNonNull(shape, "shape");
    long n = 1;
    for (long d : shape) {
      if (d < 0) throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " has a negative dimension");
      try {
        n = Math.multiplyExact(n, d);
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " has too many elements", e);
      }
    }
    return n;
  }

  /**
   * Checks that {@code shape} has at most {@code WHARF_MAX_DIMS} dimensions.
   *
   * @throws IllegalArgumentException naming {@code fqn} otherwise
   */
  static void checkRank(String fqn, long[] shape) {
    if (shape.length > WharfNativeConstants.WHARF_MAX_DIMS) {
      throw new IllegalArgumentException("constant '" + fqn + "': shape " + Arrays.toString(shape)
          + " has " + shape.length + " dimensions, more than the maximum "
          + WharfNativeConstants.WHARF_MAX_DIMS);
    }
  }

  /**
   * Bytes of a contiguous tensor; throws as {@link #elementCount}, and for a sub-byte dtype
   * whose elements do not fill whole bytes.
   */
  static long byteSize(DType dtype, long[] shape) {
    long bits;
    try {
      bits = Math.multiplyExact(elementCount(shape), (long) dtype.bits());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " of " + dtype
          + " has too many bytes", e);
    }
    if (bits % 8 != 0) {
      throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " of " + dtype + " is "
          + bits + " bits, not a whole number of bytes");
    }
    return bits / 8;
  }
}
