// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * A {@link ReplicaGroup}'s counters ({@code wharf_replica_group_stats}).
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class ReplicaGroupStats {
  private final long numReplicas;
  private final int ncclVersion;
  private final long numUpdates;
  private final long numSwaps;
  private final long sourceBytes;
  private final long broadcastBytes;
  private final long numBroadcasts;

  ReplicaGroupStats(long numReplicas, int ncclVersion, long numUpdates, long numSwaps, long sourceBytes,
      long broadcastBytes, long numBroadcasts) {
    this.numReplicas = numReplicas;
    this.ncclVersion = ncclVersion;
    this.numUpdates = numUpdates;
    this.numSwaps = numSwaps;
    this.sourceBytes = sourceBytes;
    this.broadcastBytes = broadcastBytes;
    this.numBroadcasts = numBroadcasts;
  }

  /** @return the number of replicas */
  public long numReplicas() {
    return numReplicas;
  }

  /** @return ncclGetVersion when the group broadcasts with NCCL; 0 otherwise */
  public int ncclVersion() {
    return ncclVersion;
  }

  /** @return group updates that staged */
  public long numUpdates() {
    return numUpdates;
  }

  /** @return group swaps, rollbacks included */
  public long numSwaps() {
    return numSwaps;
  }

  /** @return bytes read from update sources (once per update) */
  public long sourceBytes() {
    return sourceBytes;
  }

  /** @return bytes written into replicas 1..N-1 from replica 0 */
  public long broadcastBytes() {
    return broadcastBytes;
  }

  /** @return broadcast rounds (NCCL group calls, or host copies) */
  public long numBroadcasts() {
    return numBroadcasts;
  }

  @Override
  public String toString() {
    return "ReplicaGroupStats{replicas=" + numReplicas + ", nccl=" + ncclVersion + ", updates=" + numUpdates
        + ", swaps=" + numSwaps + ", sourceBytes=" + sourceBytes + ", broadcastBytes=" + broadcastBytes
        + ", broadcasts=" + numBroadcasts + "}";
  }
}
