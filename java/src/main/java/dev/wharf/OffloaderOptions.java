// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Which layers an {@link Offloader} keeps in pinned host memory and how it prefetches them
 * ({@code wharf_offloader_options}); immutable, made with {@link #builder()}. The defaults
 * offload every layer matching {@code "layers.{layer}."}, copy one layer ahead and use one
 * slot.
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class OffloaderOptions {
  private static final OffloaderOptions DEFAULTS = new Builder().build();

  private final List<String> fqns; // null: select by layer
  private final String layerPattern;
  private final int groupSize;
  private final int numInGroup;
  private final int prefetchStep;
  private final int slotCapacity;
  private final Duration stepCompute;
  private final long h2dBytesPerSecond;
  private final boolean refuseIfExposed;

  private OffloaderOptions(Builder b) {
    this.fqns = b.fqns == null ? null : Collections.unmodifiableList(new ArrayList<>(b.fqns));
    this.layerPattern = b.layerPattern;
    this.groupSize = b.groupSize;
    this.numInGroup = b.numInGroup;
    this.prefetchStep = b.prefetchStep;
    this.slotCapacity = b.slotCapacity;
    this.stepCompute = b.stepCompute;
    this.h2dBytesPerSecond = b.h2dBytesPerSecond;
    this.refuseIfExposed = b.refuseIfExposed;
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
   * The defaults.
   *
   * @return the default options
   */
  public static OffloaderOptions defaults() {
    return DEFAULTS;
  }

  /**
   * The explicit list of offloaded constants.
   *
   * @return the list; null when layers are selected by pattern
   */
  public List<String> fqns() {
    return fqns;
  }

  /**
   * Layers copied ahead.
   *
   * @return the prefetch step; 1 by default
   */
  public int prefetchStep() {
    return prefetchStep;
  }

  /**
   * Device slots.
   *
   * @return the slot count; 0 (the default) means max(prefetch step, 1)
   */
  public int slotCapacity() {
    return slotCapacity;
  }

  /** Builds the native options; free them with {@code wharf_offloader_options_free}. */
  SWIGTYPE_p_wharf_offloader_options toNative() {
    SWIGTYPE_p_wharf_offloader_options o = WharfNative.wharf_swig_offloader_options_new(layerPattern, groupSize,
        numInGroup, prefetchStep, slotCapacity, stepCompute.toNanos() / 1000, h2dBytesPerSecond,
        refuseIfExposed ? 1 : 0);
    if (o == null) throw new OutOfMemoryError("allocating offloader options");
    if (fqns != null) {
      for (String f : fqns) {
        if (WharfNative.wharf_swig_offloader_options_add_fqn(o, f) == 0) {
          WharfNative.wharf_swig_offloader_options_free(o);
          throw new OutOfMemoryError("adding '" + f + "' to offloader options");
        }
      }
    }
    return o;
  }

  @Override
  public String toString() {
    return "OffloaderOptions{fqns=" + fqns + ", layerPattern=" + layerPattern + ", group=" + groupSize + "/"
        + numInGroup + ", prefetchStep=" + prefetchStep + ", slotCapacity=" + slotCapacity + "}";
  }

  /** Builds {@link OffloaderOptions}. */
  public static final class Builder {
    private List<String> fqns;
    private String layerPattern;
    private int groupSize;
    private int numInGroup = 1;
    private int prefetchStep = 1;
    private int slotCapacity;
    private Duration stepCompute = Duration.ZERO;
    private long h2dBytesPerSecond;
    private boolean refuseIfExposed;

    private Builder() {}

    /**
     * Offloads exactly these constants (each must carry a layer number) instead of
     * selecting by layer.
     *
     * @param fqns the constants' names
     * @return this builder
     */
    public Builder fqns(List<String> fqns) {
      this.fqns = new ArrayList<>(Objects.requireNonNull(fqns, "fqns"));
      for (String f : this.fqns) Objects.requireNonNull(f, "fqn");
      return this;
    }

    /**
     * The pattern giving each constant whose FQN contains it, with {@code {layer}} a decimal
     * number, that layer number.
     *
     * @param pattern the pattern; null for the default {@code "layers.{layer}."}
     * @return this builder
     */
    public Builder layerPattern(String pattern) {
      this.layerPattern = pattern;
      return this;
    }

    /**
     * vLLM's selection: layer L is offloaded when {@code L % groupSize >= groupSize -
     * numInGroup} (group size 0, the default: every layer).
     *
     * @param groupSize layers per group
     * @param numInGroup offloaded layers per group
     * @return this builder
     * @throws IllegalArgumentException if a value is negative
     */
    public Builder group(int groupSize, int numInGroup) {
      if (groupSize < 0 || numInGroup < 0) {
        throw new IllegalArgumentException("group " + groupSize + "/" + numInGroup + " is negative");
      }
      this.groupSize = groupSize;
      this.numInGroup = numInGroup;
      return this;
    }

    /**
     * Layers copied ahead (default 1; 0 issues each copy at its wait).
     *
     * @param step the prefetch step
     * @return this builder
     * @throws IllegalArgumentException if {@code step} is negative
     */
    public Builder prefetchStep(int step) {
      if (step < 0) throw new IllegalArgumentException("prefetchStep " + step + " is negative");
      this.prefetchStep = step;
      return this;
    }

    /**
     * Device slots (default 0: max(prefetch step, 1)).
     *
     * @param slots the slot count
     * @return this builder
     * @throws IllegalArgumentException if {@code slots} is negative
     */
    public Builder slotCapacity(int slots) {
      if (slots < 0) throw new IllegalArgumentException("slotCapacity " + slots + " is negative");
      this.slotCapacity = slots;
      return this;
    }

    /**
     * A step's measured compute time, for the budget check (zero, the default: unknown, no
     * check); whole microseconds.
     *
     * @param compute the compute time
     * @return this builder
     */
    public Builder stepCompute(Duration compute) {
      Objects.requireNonNull(compute, "compute");
      if (compute.isNegative()) throw new IllegalArgumentException("stepCompute " + compute + " is negative");
      this.stepCompute = compute;
      return this;
    }

    /**
     * The host-to-device bandwidth to assume (0, the default: measured on CUDA, 12 GB/s on
     * the host backend).
     *
     * @param bytes bytes per second
     * @return this builder
     */
    public Builder h2dBytesPerSecond(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("h2dBytesPerSecond " + bytes + " is negative");
      this.h2dBytesPerSecond = bytes;
      return this;
    }

    /**
     * Whether creation fails ({@link WharfException.Code#RESOURCE_EXHAUSTED}) when prefetch
     * cannot hide the copies a step needs (false, the default: a warning is logged).
     *
     * @param refuse true to refuse
     * @return this builder
     */
    public Builder refuseIfExposed(boolean refuse) {
      this.refuseIfExposed = refuse;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public OffloaderOptions build() {
      return new OffloaderOptions(this);
    }
  }
}
