// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Statistics of a model's CUDA graphs ({@code wharf_graph_stats}); an immutable snapshot from
 * {@link Model#graphStats()}. Experimental: part of wharf.h's experimental tier; it may change
 * in any minor release.
 *
 * @since 0.3
 */
public final class GraphStats {
  private final long numBuckets;
  private final long captures;
  private final long captureFailures;
  private final long replays;
  private final long repoints;
  private final long nodesRepointed;
  private final long eagerRuns;
  private final long folds;
  private final long poolBytes;
  private final long foldedBytes;
  private final long repointNanos;
  private final long bindCheckNanos;
  private final long foldNanos;
  private final String lastEagerReason;
  private final long paddedReplays;
  private final String bucketDim;
  private final long numBucketSizes;
  private final long selectNanos;
  private final long waitNanos;
  private final long inputsNanos;
  private final long launchNanos;
  private final long outputsNanos;
  private final long releaseNanos;
  private final long replayFolds;
  private final long prepareFolds;
  private final long prepointedReplays;
  private final long prepares;
  private final long prepareFailures;
  private final long prepareNanos;

  private GraphStats(wharf_graph_stats s) {
    numBuckets = s.getNum_buckets();
    captures = s.getCaptures();
    captureFailures = s.getCapture_failures();
    replays = s.getReplays();
    repoints = s.getRepoints();
    nodesRepointed = s.getNodes_repointed();
    eagerRuns = s.getEager_runs();
    folds = s.getFolds();
    poolBytes = s.getPool_bytes();
    foldedBytes = s.getFolded_bytes();
    repointNanos = s.getRepoint_ns();
    bindCheckNanos = s.getBind_check_ns();
    foldNanos = s.getFold_ns();
    lastEagerReason = s.last_eager_reason_text();
    paddedReplays = s.getPadded_replays();
    bucketDim = s.bucket_dim_text();
    numBucketSizes = s.getNum_bucket_sizes();
    selectNanos = s.getSelect_ns();
    waitNanos = s.getWait_ns();
    inputsNanos = s.getInputs_ns();
    launchNanos = s.getLaunch_ns();
    outputsNanos = s.getOutputs_ns();
    releaseNanos = s.getRelease_ns();
    replayFolds = s.getReplay_folds();
    prepareFolds = s.getPrepare_folds();
    prepointedReplays = s.getPrepointed_replays();
    prepares = s.getPrepares();
    prepareFailures = s.getPrepare_failures();
    prepareNanos = s.getPrepare_ns();
  }

  /** Copies the native struct the library filled. */
  static GraphStats of(wharf_graph_stats s) {
    return new GraphStats(s);
  }

  /** @return graphs held, one per input shape per concurrent set */
  public long numBuckets() {
    return numBuckets;
  }

  /** @return graphs captured */
  public long captures() {
    return captures;
  }

  /** @return shapes whose capture failed (they run eagerly) */
  public long captureFailures() {
    return captureFailures;
  }

  /** @return runs served by a graph */
  public long replays() {
    return replays;
  }

  /** @return replays that re-pointed nodes (their binding differed) */
  public long repoints() {
    return repoints;
  }

  /** @return node parameter updates, in total */
  public long nodesRepointed() {
    return nodesRepointed;
  }

  /** @return runs executed eagerly while graphs were enabled */
  public long eagerRuns() {
    return eagerRuns;
  }

  /** @return generations whose constants were folded for the graphs */
  public long folds() {
    return folds;
  }

  /** @return bytes of the graph pools (memory tag "graph") */
  public long poolBytes() {
    return poolBytes;
  }

  /** @return bytes of folded constants held for live generations */
  public long foldedBytes() {
    return foldedBytes;
  }

  /** @return host time binding replays that re-pointed nodes, in total, nanoseconds */
  public long repointNanos() {
    return repointNanos;
  }

  /** @return host time binding replays that did not (the bases compared), nanoseconds */
  public long bindCheckNanos() {
    return bindCheckNanos;
  }

  /** @return host time folding the constants of new generations, nanoseconds */
  public long foldNanos() {
    return foldNanos;
  }

  /** @return why the last eager run was not replayed ("" if none; truncated to 255 bytes) */
  public String lastEagerReason() {
    return lastEagerReason;
  }

  /** @return replays whose inputs were padded to a larger bucket */
  public long paddedReplays() {
    return paddedReplays;
  }

  /** @return the dimension padded to buckets ("" for exact shapes) */
  public String bucketDim() {
    return bucketDim;
  }

  /** @return its number of bucket sizes */
  public long numBucketSizes() {
    return numBucketSizes;
  }

  /**
   * Host time of replays by phase, in total: this and the five below (divide by
   * {@link #replays()} for a replay's breakdown of {@code Model.run}'s host time; their binding
   * is in {@link #repointNanos()} and {@link #bindCheckNanos()}).
   *
   * @return host time choosing the graph (the lock, the check that the caller is not capturing
   *     the stream, the bucket, the set and the graph; replays that captured a graph are left
   *     out), in total, nanoseconds
   * @since 0.3 (experimental)
   */
  public long selectNanos() {
    return selectNanos;
  }

  /**
   * @return host time ordering after the set's previous run (an event query, or a wait), in
   *     total, nanoseconds
   * @since 0.3 (experimental)
   */
  public long waitNanos() {
    return waitNanos;
  }

  /**
   * @return host time of the inputs (host inputs packed and copied, the gather's parameters),
   *     in total, nanoseconds
   * @since 0.3 (experimental)
   */
  public long inputsNanos() {
    return inputsNanos;
  }

  /**
   * @return host time in {@code cudaGraphLaunch}, in total, nanoseconds
   * @since 0.3 (experimental)
   */
  public long launchNanos() {
    return launchNanos;
  }

  /**
   * @return host time handing out the outputs, in total, nanoseconds
   * @since 0.3 (experimental)
   */
  public long outputsNanos() {
    return outputsNanos;
  }

  /**
   * @return host time releasing the set when the run ends (in {@link Run#close()}), in total,
   *     nanoseconds
   * @since 0.3 (experimental)
   */
  public long releaseNanos() {
    return releaseNanos;
  }

  /**
   * @return folds of new generations' constants done by replays (on the serving path: a
   *     generation no update prepared)
   * @since 0.3 (experimental)
   */
  public long replayFolds() {
    return replayFolds;
  }

  /**
   * @return folds done by updates: an update that stages a generation folds its constants and
   *     points a spare graph of each bucket at it before it returns
   * @since 0.3 (experimental)
   */
  public long prepareFolds() {
    return prepareFolds;
  }

  /**
   * @return replays that found their graph pointed at their binding by an update (no node set;
   *     not in {@link #repoints()})
   * @since 0.3 (experimental)
   */
  public long prepointedReplays() {
    return prepointedReplays;
  }

  /**
   * @return generations prepared for by updates
   * @since 0.3 (experimental)
   */
  public long prepares() {
    return prepares;
  }

  /**
   * @return preparations that failed (the first replay then folds and re-points)
   * @since 0.3 (experimental)
   */
  public long prepareFailures() {
    return prepareFailures;
  }

  /**
   * @return host time of the preparations in total (on the updaters' threads), nanoseconds
   * @since 0.3 (experimental)
   */
  public long prepareNanos() {
    return prepareNanos;
  }

  @Override
  public String toString() {
    return "GraphStats{buckets=" + numBuckets + ", captures=" + captures + ", captureFailures=" + captureFailures
        + ", replays=" + replays + ", repoints=" + repoints + ", nodesRepointed=" + nodesRepointed + ", eagerRuns="
        + eagerRuns + ", folds=" + folds + ", poolBytes=" + poolBytes + ", foldedBytes=" + foldedBytes
        + ", repointNanos=" + repointNanos + ", bindCheckNanos=" + bindCheckNanos + ", foldNanos=" + foldNanos
        + ", lastEagerReason=\"" + lastEagerReason + "\", paddedReplays=" + paddedReplays + ", bucketDim=\""
        + bucketDim + "\", numBucketSizes=" + numBucketSizes + ", selectNanos=" + selectNanos + ", waitNanos="
        + waitNanos + ", inputsNanos=" + inputsNanos + ", launchNanos=" + launchNanos + ", outputsNanos="
        + outputsNanos + ", releaseNanos=" + releaseNanos + ", replayFolds=" + replayFolds + ", prepareFolds="
        + prepareFolds + ", prepointedReplays=" + prepointedReplays + ", prepares=" + prepares + ", prepareFailures="
        + prepareFailures + ", prepareNanos=" + prepareNanos + "}";
  }
}
