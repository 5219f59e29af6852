// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * What a {@link WeightStore} shares ({@code wharf_weight_store_stats}); an immutable snapshot
 * from {@link WeightStore#stats()}.
 */
public final class WeightStoreStats {
  private final long uniqueConstants;
  private final long uniqueBytes;
  private final long references;
  private final long savedBytes;

  WeightStoreStats(long uniqueConstants, long uniqueBytes, long references, long savedBytes) {
    this.uniqueConstants = uniqueConstants;
    this.uniqueBytes = uniqueBytes;
    this.references = references;
    this.savedBytes = savedBytes;
  }

  /**
   * Live shared weights.
   *
   * @return the number of distinct stored constants
   */
  public long numUniqueConstants() {
    return uniqueConstants;
  }

  /**
   * The bytes of the live shared weights.
   *
   * @return bytes
   */
  public long uniqueBytes() {
    return uniqueBytes;
  }

  /**
   * (container, constant) pairs whose active generation uses a stored weight.
   *
   * @return the number of references
   */
  public long numReferences() {
    return references;
  }

  /**
   * Bytes that would be allocated without sharing, minus {@link #uniqueBytes()}.
   *
   * @return bytes saved by sharing
   */
  public long savedBytes() {
    return savedBytes;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof WeightStoreStats)) return false;
    WeightStoreStats s = (WeightStoreStats) o;
    return uniqueConstants == s.uniqueConstants && uniqueBytes == s.uniqueBytes
        && references == s.references && savedBytes == s.savedBytes;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(uniqueConstants) * 31 * 31 * 31 + Long.hashCode(uniqueBytes) * 31 * 31
        + Long.hashCode(references) * 31 + Long.hashCode(savedBytes);
  }

  @Override
  public String toString() {
    return "WeightStoreStats{uniqueConstants=" + uniqueConstants + ", uniqueBytes=" + uniqueBytes
        + ", references=" + references + ", savedBytes=" + savedBytes + "}";
  }
}
