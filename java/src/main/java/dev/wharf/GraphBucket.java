// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * One captured graph of a model ({@code wharf_graph_bucket_info}); an immutable snapshot from
 * {@link Model#graphBucket(int)}. Experimental: part of wharf.h's experimental tier; it may
 * change in any minor release.
 *
 * @since 0.3
 */
public final class GraphBucket {
  private final long set;
  private final long poolBytes;
  private final long nodes;
  private final long patchedNodes;
  private final long patches;
  private final double captureMillis;
  private final String shapes;
  private final long bucketSize;
  private final double bindFoldMillis;
  private final double warmupMillis;
  private final double captureRunMillis;
  private final double scanMillis;
  private final double instantiateMillis;

  private GraphBucket(wharf_graph_bucket_info b) {
    set = b.getSet();
    poolBytes = b.getPool_bytes();
    nodes = b.getNodes();
    patchedNodes = b.getPatched_nodes();
    patches = b.getPatches();
    captureMillis = b.getCapture_ms();
    shapes = b.shapes_text();
    bucketSize = b.getBucket_size();
    bindFoldMillis = b.getBind_fold_ms();
    warmupMillis = b.getWarmup_ms();
    captureRunMillis = b.getCapture_run_ms();
    scanMillis = b.getScan_ms();
    instantiateMillis = b.getInstantiate_ms();
  }

  /** Copies the native struct the library filled. */
  static GraphBucket of(wharf_graph_bucket_info b) {
    return new GraphBucket(b);
  }

  /** @return its concurrent set (0 .. maxConcurrentRuns - 1) */
  public long set() {
    return set;
  }

  /** @return pool memory its capture added (memory tag "graph"), bytes */
  public long poolBytes() {
    return poolBytes;
  }

  /** @return nodes of the graph */
  public long nodes() {
    return nodes;
  }

  /** @return nodes with a parameter pointing at constants, state or folded constants */
  public long patchedNodes() {
    return patchedNodes;
  }

  /** @return such parameter words */
  public long patches() {
    return patches;
  }

  /** @return fold, warm-up, capture and instantiation, milliseconds */
  public double captureMillis() {
    return captureMillis;
  }

  /** @return the inputs' dtypes and shapes, e.g. "I64[1, 1], I64[1]" (truncated to 127 bytes) */
  public String shapes() {
    return shapes;
  }

  /** @return its size along the bucket dimension (-1: an exact shape) */
  public long bucketSize() {
    return bucketSize;
  }

  /** @return of captureMillis: the instance, binding and fold, milliseconds */
  public double bindFoldMillis() {
    return bindFoldMillis;
  }

  /** @return of captureMillis: the static inputs and the warm-up run, milliseconds */
  public double warmupMillis() {
    return warmupMillis;
  }

  /** @return of captureMillis: the captured run, milliseconds */
  public double captureRunMillis() {
    return captureRunMillis;
  }

  /** @return of captureMillis: reading the nodes and building the patch plan, milliseconds */
  public double scanMillis() {
    return scanMillis;
  }

  /** @return of captureMillis: instantiation, milliseconds */
  public double instantiateMillis() {
    return instantiateMillis;
  }

  @Override
  public String toString() {
    return "GraphBucket{set=" + set + ", shapes=\"" + shapes + "\", nodes=" + nodes + ", patchedNodes=" + patchedNodes
        + ", patches=" + patches + ", poolBytes=" + poolBytes + ", captureMillis=" + captureMillis + ", bucketSize="
        + bucketSize + "}";
  }
}
