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

  private final long maxBuckets;
  private final long maxPoolBytes;
  private final long maxConcurrentRuns;

  private GraphOptions(Builder b) {
    this.maxBuckets = b.maxBuckets;
    this.maxPoolBytes = b.maxPoolBytes;
    this.maxConcurrentRuns = b.maxConcurrentRuns;
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

  @Override
  public String toString() {
    return "GraphOptions{maxBuckets=" + maxBuckets + ", maxPoolBytes=" + maxPoolBytes + ", maxConcurrentRuns="
        + maxConcurrentRuns + "}";
  }

  /** Builds {@link GraphOptions}. Not thread-safe. */
  public static final class Builder {
    private long maxBuckets;
    private long maxPoolBytes;
    private long maxConcurrentRuns;

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
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public GraphOptions build() {
      return new GraphOptions(this);
    }
  }
}
