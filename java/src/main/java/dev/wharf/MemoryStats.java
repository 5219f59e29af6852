// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;
import java.util.Objects;

/**
 * A snapshot of the bytes a runtime holds ({@link WharfRuntime#memoryStats()}); an immutable value.
 *
 * <p>{@link #current(MemoryTag)} and {@link #peak(MemoryTag)} count every allocation with
 * that tag, device and pinned host alike; the {@code device*} figures count device memory
 * only (what {@link RuntimeOptions#deviceMemoryLimit()} caps; on the host backend, the host
 * memory standing in for it); the {@code pinnedHost*} figures count page-locked host memory.
 */
public final class MemoryStats {
  private final long[] current;
  private final long[] peak;
  private final long deviceCurrent;
  private final long devicePeak;
  private final long pinnedHostCurrent;
  private final long pinnedHostPeak;

  MemoryStats(long[] current, long[] peak, long deviceCurrent, long devicePeak,
      long pinnedHostCurrent, long pinnedHostPeak) {
    this.current = current.clone();
    this.peak = peak.clone();
    this.deviceCurrent = deviceCurrent;
    this.devicePeak = devicePeak;
    this.pinnedHostCurrent = pinnedHostCurrent;
    this.pinnedHostPeak = pinnedHostPeak;
  }

  /**
   * Bytes held now with the given tag.
   *
   * @param tag the allocation tag
   * @return bytes
   */
  public long current(MemoryTag tag) {
    return current[Objects.requireNonNull(tag, "tag").value()];
  }

  /**
   * The most bytes held with the given tag since the runtime was created or
   * {@link WharfRuntime#resetPeak()} was called.
   *
   * @param tag the allocation tag
   * @return bytes
   */
  public long peak(MemoryTag tag) {
    return peak[Objects.requireNonNull(tag, "tag").value()];
  }

  /**
   * Device memory held now.
   *
   * @return bytes
   */
  public long deviceCurrent() {
    return deviceCurrent;
  }

  /**
   * Peak device memory.
   *
   * @return bytes
   */
  public long devicePeak() {
    return devicePeak;
  }

  /**
   * Pinned host memory held now.
   *
   * @return bytes
   */
  public long pinnedHostCurrent() {
    return pinnedHostCurrent;
  }

  /**
   * Peak pinned host memory.
   *
   * @return bytes
   */
  public long pinnedHostPeak() {
    return pinnedHostPeak;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof MemoryStats)) return false;
    MemoryStats m = (MemoryStats) o;
    return Arrays.equals(current, m.current) && Arrays.equals(peak, m.peak)
        && deviceCurrent == m.deviceCurrent && devicePeak == m.devicePeak
        && pinnedHostCurrent == m.pinnedHostCurrent && pinnedHostPeak == m.pinnedHostPeak;
  }

  @Override
  public int hashCode() {
    return Objects.hash(Arrays.hashCode(current), Arrays.hashCode(peak), deviceCurrent, devicePeak,
        pinnedHostCurrent, pinnedHostPeak);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("MemoryStats{");
    for (MemoryTag tag : MemoryTag.values()) {
      s.append(tag.name().toLowerCase(java.util.Locale.ROOT)).append('=')
          .append(current(tag)).append('/').append(peak(tag)).append(", ");
    }
    return s.append("device=").append(deviceCurrent).append('/').append(devicePeak)
        .append(", pinnedHost=").append(pinnedHostCurrent).append('/').append(pinnedHostPeak)
        .append(" (current/peak bytes)}").toString();
  }
}
