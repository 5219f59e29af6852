// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Options of {@link Model#enableGraphs(GraphOptions)} ({@code wharf_graph_options}).
 * Immutable; build with {@link #builder()}. 0 in a field means the library's default.
 * Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * <pre>{@code
 * model.enableGraphs(GraphOptions.builder().maxBuckets(4).maxConcurrentRuns(2).build());
 * }</pre>
 *
 * @since 0.3
 */
public final class GraphOptions {
  private static final GraphOptions DEFAULTS = new Builder().build();
  private static final long UINT32_MAX = 0xFFFF_FFFFL;

  /** The most bucket sizes the binding passes (the SWIG helper's bound). */
  public static final int MAX_BUCKET_SIZES = 64;

  private final long maxBuckets;
  private final long maxPoolBytes;
  private final long maxConcurrentRuns;
  private final String bucketDim;
  private final long[] bucketSizes;
  private final boolean exactShapes;

  private GraphOptions(Builder b) {
    this.maxBuckets = b.maxBuckets;
    this.maxPoolBytes = b.maxPoolBytes;
    this.maxConcurrentRuns = b.maxConcurrentRuns;
    this.bucketDim = b.bucketDim;
    this.bucketSizes = b.bucketSizes.clone();
    this.exactShapes = b.exactShapes;
  }

  /**
   * A builder holding the defaults.
   *
   * @return a new builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The defaults: 8 buckets, no pool ceiling, 4 concurrent runs.
   *
   * @return the default options
   */
  public static GraphOptions defaults() {
    return DEFAULTS;
  }

  /**
   * Distinct input shapes (buckets) that get a graph.
   *
   * @return buckets; 0 (the default) means 8
   */
  public long maxBuckets() {
    return maxBuckets;
  }

  /**
   * The ceiling of each graph pool.
   *
   * @return bytes; 0 (the default) means none
   */
  public long maxPoolBytes() {
    return maxPoolBytes;
  }

  /**
   * Runs that may replay at the same time.
   *
   * @return runs; 0 (the default) means 4
   */
  public long maxConcurrentRuns() {
    return maxConcurrentRuns;
  }

  /**
   * The symbolic dimension padded to buckets.
   *
   * @return its name, or null (the method's only paddable dimension)
   */
  public String bucketDim() {
    return bucketDim;
  }

  /**
   * The bucket sizes.
   *
   * @return a copy; empty (the default) means the default set where the method has one
   *     paddable dimension with a max
   */
  public long[] bucketSizes() {
    return bucketSizes.clone();
  }

  /**
   * Whether every exact input shape gets its own graph (no padding).
   *
   * @return true for exact shapes
   */
  public boolean exactShapes() {
    return exactShapes;
  }

  @Override
  public String toString() {
    return "GraphOptions{maxBuckets=" + maxBuckets + ", maxPoolBytes=" + maxPoolBytes + ", maxConcurrentRuns="
        + maxConcurrentRuns + ", bucketDim=" + bucketDim + ", bucketSizes=" + java.util.Arrays.toString(bucketSizes)
        + ", exactShapes=" + exactShapes + "}";
  }

  /** Builds {@link GraphOptions}. Not thread-safe. */
  public static final class Builder {
    private long maxBuckets;
    private long maxPoolBytes;
    private long maxConcurrentRuns;
    private String bucketDim;
    private long[] bucketSizes = new long[0];
    private boolean exactShapes;

    private Builder() {}

    private static long uint32(String what, long value) {
      if (value < 0 || value > UINT32_MAX) {
        throw new IllegalArgumentException(what + " is outside 0..2^32-1: " + value);
      }
      return value;
    }

    /**
     * Distinct input shapes (buckets) that get a graph, each captured at the first run of
     * that shape; runs of further shapes execute eagerly.
     *
     * @param buckets 0 for the default (8)
     * @return this builder
     * @throws IllegalArgumentException if {@code buckets} is negative or above 2^32 - 1
     */
    public Builder maxBuckets(long buckets) {
      this.maxBuckets = uint32("maxBuckets", buckets);
      return this;
    }

    /**
     * The ceiling of each graph pool: a capture that would pass it fails and its shape runs
     * eagerly.
     *
     * @param bytes 0 for none (the default)
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative
     */
    public Builder maxPoolBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("maxPoolBytes is negative: " + bytes);
      this.maxPoolBytes = bytes;
      return this;
    }

    /**
     * Runs that may replay at the same time: each open run that replayed holds a set of
     * graphs until it is closed; a run finding every set held executes eagerly.
     *
     * @param runs 0 for the default (4)
     * @return this builder
     * @throws IllegalArgumentException if {@code runs} is negative or above 2^32 - 1
     */
    public Builder maxConcurrentRuns(long runs) {
      this.maxConcurrentRuns = uint32("maxConcurrentRuns", runs);
      return this;
    }

    /**
     * Buckets of a symbolic dimension (a model package method's manifest {@code dims}:
     * a batched method's session dimension, decode_batch's "N", or one marked "pad": "repeat", the
     * exporter's prefill "T"): a run of size n replays the graph of the smallest
     * size &gt;= n, its inputs padded by repeating their last row, its outputs with the
     * dimension views of the real rows; sizes past the largest run eagerly (see
     * {@code wharf_model_enable_graphs} for the rule a method must satisfy). Not called: the
     * default set (powers of two up to the dimension's max, and the max) where the method has
     * one session dimension with a max (a prefill's T: exact shapes). The library checks the
     * sizes against the dimension.
     *
     * @param dim the dimension's name, or null for the method's only paddable dimension
     * @param sizes the sizes (copied)
     * @return this builder
     * @throws IllegalArgumentException if there are more than {@link #MAX_BUCKET_SIZES} sizes
     */
    public Builder buckets(String dim, long... sizes) {
      java.util.Objects.requireNonNull(sizes, "sizes");
      if (sizes.length > MAX_BUCKET_SIZES) {
        throw new IllegalArgumentException(sizes.length + " bucket sizes; at most " + MAX_BUCKET_SIZES);
      }
      this.bucketDim = dim;
      this.bucketSizes = sizes.clone();
      return this;
    }

    /**
     * No padding: a graph per exact input shape.
     *
     * @param exact true for exact shapes
     * @return this builder
     */
    public Builder exactShapes(boolean exact) {
      this.exactShapes = exact;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public GraphOptions build() {
      return new GraphOptions(this);
    }
  }
}
