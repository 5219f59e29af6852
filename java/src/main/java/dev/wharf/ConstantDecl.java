// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;
import java.util.Objects;

/**
 * The declaration of one constant of a container: name, dtype, shape, placement, and whether
 * it is derived. An immutable value for {@link Container#create(WharfRuntime, String, java.util.List)}.
 */
public final class ConstantDecl {
  private final String fqn;
  private final DType dtype;
  private final long[] shape;
  private final Placement placement;
  private final boolean derived;

  private ConstantDecl(String fqn, DType dtype, Placement placement, long[] shape, boolean derived) {
    this.fqn = Objects.requireNonNull(fqn, "fqn");
    this.dtype = Objects.requireNonNull(dtype, "dtype");
    this.placement = Objects.requireNonNull(placement, "placement");
    this.shape = Objects.requireNonNull(shape, "shape").clone();
    this.derived = derived;
  }

  /**
   * A device-placed constant.
   *
   * @param fqn the constant's name
   * @param dtype the element type
   * @param shape the dimensions (none for a scalar)
   * @return the declaration
   */
  public static ConstantDecl of(String fqn, DType dtype, long... shape) {
    return new ConstantDecl(fqn, dtype, Placement.DEVICE, shape, false);
  }

  /**
   * A constant with an explicit placement.
   *
   * @param fqn the constant's name
   * @param dtype the element type
   * @param placement where the container keeps it
   * @param shape the dimensions (none for a scalar)
   * @return the declaration
   */
  public static ConstantDecl of(String fqn, DType dtype, Placement placement, long... shape) {
    return new ConstantDecl(fqn, dtype, placement, shape, false);
  }

  /**
   * This declaration, marked derived: computed by every update's {@link Fold} (see
   * {@link UpdateOptions.Builder#fold}), never read from a map.
   *
   * @return a derived copy of this declaration
   */
  public ConstantDecl derived() {
    return new ConstantDecl(fqn, dtype, placement, shape, true);
  }

  /**
   * Whether the constant is computed by the update's fold callback.
   *
   * @return true for a derived constant
   */
  public boolean isDerived() {
    return derived;
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

  long[] shapeUnsafe() {
    return shape;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof ConstantDecl)) return false;
    ConstantDecl d = (ConstantDecl) o;
    return fqn.equals(d.fqn) && dtype == d.dtype && Arrays.equals(shape, d.shape)
        && placement == d.placement && derived == d.derived;
  }

  @Override
  public int hashCode() {
    return Objects.hash(fqn, dtype, Arrays.hashCode(shape), placement, derived);
  }

  @Override
  public String toString() {
    return fqn + ": " + dtype + Arrays.toString(shape) + " on " + placement + (derived ? ", derived" : "");
  }
}
