// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;
import java.util.Objects;

/** What a container declares for one constant ({@link Container#constantInfo(int)}); an immutable value. */
public final class ConstantInfo {
  private final String fqn;
  private final DType dtype;
  private final long[] shape;
  private final Placement placement;
  private final boolean derived;
  private final long byteSize;

  ConstantInfo(String fqn, DType dtype, long[] shape, Placement placement, boolean derived, long byteSize) {
    this.fqn = fqn;
    this.dtype = dtype;
    this.shape = shape.clone();
    this.placement = placement;
    this.derived = derived;
    this.byteSize = byteSize;
  }

  /**
   * The constant's name.
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
   * Where the container keeps the constant.
   *
   * @return the placement
   */
  public Placement placement() {
    return placement;
  }

  /**
   * Whether the constant is derived (computed by an update's fold callback, never read from
   * a map). Containers created from Java never declare derived constants.
   *
   * @return true for a derived constant
   */
  public boolean derived() {
    return derived;
  }

  /**
   * The constant's storage size.
   *
   * @return bytes
   */
  public long byteSize() {
    return byteSize;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof ConstantInfo)) return false;
    ConstantInfo c = (ConstantInfo) o;
    return fqn.equals(c.fqn) && dtype == c.dtype && Arrays.equals(shape, c.shape)
        && placement == c.placement && derived == c.derived && byteSize == c.byteSize;
  }

  @Override
  public int hashCode() {
    return Objects.hash(fqn, dtype, Arrays.hashCode(shape), placement, derived, byteSize);
  }

  @Override
  public String toString() {
    return fqn + ": " + dtype + Arrays.toString(shape) + " on " + placement
        + (derived ? " (derived)" : "") + ", " + byteSize + " bytes";
  }
}
