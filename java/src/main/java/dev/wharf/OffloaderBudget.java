// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * What a step (a run through every layer) copies against its compute, estimated when an
 * {@link Offloader} was created ({@code wharf_offloader_budget}).
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class OffloaderBudget {
  /** Where the bandwidth comes from. */
  public enum H2dSource {
    /** {@link OffloaderOptions.Builder#h2dBytesPerSecond}. */
    GIVEN,
    /** A timed pinned-to-device copy at creation (CUDA). */
    MEASURED,
    /** The host backend: 12 GB/s. */
    ASSUMED
  }

  private final long numOffloadedLayers;
  private final long bytesPerStep;
  private final long h2dBytesPerSecond;
  private final H2dSource source;
  private final double copyMicros;
  private final double computeMicros;
  private final double exposedMicros;

  OffloaderBudget(long numOffloadedLayers, long bytesPerStep, long h2dBytesPerSecond, int source, double copyMicros,
      double computeMicros, double exposedMicros) {
    this.numOffloadedLayers = numOffloadedLayers;
    this.bytesPerStep = bytesPerStep;
    this.h2dBytesPerSecond = h2dBytesPerSecond;
    this.source = source == 0 ? H2dSource.GIVEN : source == 1 ? H2dSource.MEASURED : H2dSource.ASSUMED;
    this.copyMicros = copyMicros;
    this.computeMicros = computeMicros;
    this.exposedMicros = exposedMicros;
  }

  /** @return the number of offloaded layers */
  public long numOffloadedLayers() {
    return numOffloadedLayers;
  }

  /** @return the offloaded constants' bytes, every offloaded layer once */
  public long bytesPerStep() {
    return bytesPerStep;
  }

  /** @return the bandwidth the estimate uses */
  public long h2dBytesPerSecond() {
    return h2dBytesPerSecond;
  }

  /** @return where that bandwidth comes from */
  public H2dSource h2dSource() {
    return source;
  }

  /** @return the step's copies at that bandwidth, in microseconds */
  public double copyMicros() {
    return copyMicros;
  }

  /** @return the step's compute time as given (0: unknown) */
  public double computeMicros() {
    return computeMicros;
  }

  /** @return copy minus compute when positive: what prefetch cannot hide */
  public double exposedMicros() {
    return exposedMicros;
  }

  @Override
  public String toString() {
    return "OffloaderBudget{layers=" + numOffloadedLayers + ", bytesPerStep=" + bytesPerStep + ", h2d="
        + h2dBytesPerSecond + " B/s (" + source + "), copy=" + copyMicros + " us, compute=" + computeMicros
        + " us, exposed=" + exposedMicros + " us}";
  }
}
