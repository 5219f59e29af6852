// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One input or output of a {@link ModelPackage}'s method as its manifest declares it
 * ({@code wharf_model_package_tensor_info}): name, dtype and dimensions, each fixed or
 * symbolic (a sequence length, with its range). Immutable.
 *
 * <p><b>Experimental</b>: model packages are in the experimental tier of the C API and may
 * change in any minor release.
 *
 * @since 0.3
 */
public final class TensorSpec {
  private final String name;
  private final DType dtype;
  private final List<Dim> dims;

  /** One dimension: a fixed size, or a symbolic one with its name and range. Immutable. */
  public static final class Dim {
    private final String name; // null where fixed
    private final long size;   // -1 where symbolic
    private final long min;
    private final long max;    // -1: unbounded

    Dim(String name, long size, long min, long max) {
      this.name = name;
      this.size = size;
      this.min = min;
      this.max = max;
    }

    /**
     * Whether the dimension is symbolic.
     *
     * @return true for a symbolic dimension
     */
    public boolean isSymbolic() {
      return name != null;
    }

    /**
     * The symbolic dimension's name in the method's {@code dims} ("T").
     *
     * @return the name, or null for a fixed dimension
     */
    public String name() {
      return name;
    }

    /**
     * The size of a fixed dimension.
     *
     * @return the size, or -1 for a symbolic dimension
     */
    public long size() {
      return size;
    }

    /**
     * The smallest size (a fixed dimension's size).
     *
     * @return the size
     */
    public long min() {
      return min;
    }

    /**
     * The largest size (a fixed dimension's size).
     *
     * @return the size, or -1 when the manifest gives no bound
     */
    public long max() {
      return max;
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Dim)) return false;
      Dim d = (Dim) o;
      return Objects.equals(name, d.name) && size == d.size && min == d.min && max == d.max;
    }

    @Override
    public int hashCode() {
      return Objects.hash(name, size, min, max);
    }

    @Override
    public String toString() {
      if (name == null) return Long.toString(size);
      return name + "[" + min + ".." + (max < 0 ? "" : Long.toString(max)) + "]";
    }
  }

  TensorSpec(String name, DType dtype, List<Dim> dims) {
    this.name = name;
    this.dtype = dtype;
    this.dims = Collections.unmodifiableList(new ArrayList<>(dims));
  }

  /**
   * The tensor's name ("input_ids").
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The tensor's dtype.
   *
   * @return the dtype
   */
  public DType dtype() {
    return dtype;
  }

  /**
   * The dimensions, in order.
   *
   * @return an unmodifiable list
   */
  public List<Dim> dims() {
    return dims;
  }

  /**
   * The shape, with -1 where a dimension is symbolic.
   *
   * @return a new array
   */
  public long[] shape() {
    long[] shape = new long[dims.size()];
    for (int i = 0; i < shape.length; i++) shape[i] = dims.get(i).size();
    return shape;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof TensorSpec)) return false;
    TensorSpec t = (TensorSpec) o;
    return name.equals(t.name) && dtype == t.dtype && dims.equals(t.dims);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, dtype, dims);
  }

  @Override
  public String toString() {
    return name + ": " + dtype + " " + dims;
  }
}
