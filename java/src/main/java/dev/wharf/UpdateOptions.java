// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Options for {@link Container#update(ConstantMap, UpdateOptions)}; immutable, made with
 * {@link #builder()}.
 *
 * <pre>{@code
 * container.update(map, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).build());
 * }</pre>
 */
public final class UpdateOptions {
  private static final UpdateOptions DEFAULTS = new Builder().build();

  private final UpdateTarget target;
  private final boolean requireFull;
  private final Fold fold;
  private final long inPlaceMaxWaitMillis;
  private final long waitStream;
  private final ProgressListener progress;

  private UpdateOptions(Builder b) {
    this.target = b.target;
    this.requireFull = b.requireFull;
    this.fold = b.fold;
    this.inPlaceMaxWaitMillis = b.inPlaceMaxWaitMillis;
    this.waitStream = b.waitStream;
    this.progress = b.progress;
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
   * The defaults: write the inactive generation, the map may name any subset of constants.
   *
   * @return the default options
   */
  public static UpdateOptions defaults() {
    return DEFAULTS;
  }

  /**
   * Which generation the update writes.
   *
   * @return the target; {@link UpdateTarget#INACTIVE} by default
   */
  public UpdateTarget target() {
    return target;
  }

  /**
   * Whether the map must name every constant of the container.
   *
   * @return true if a partial map is an error; false by default
   */
  public boolean requireFull() {
    return requireFull;
  }

  /**
   * The callback that computes derived constants, if any.
   *
   * @return the fold; null by default
   */
  public Fold fold() {
    return fold;
  }

  /**
   * For {@link UpdateTarget#ACTIVE_IN_PLACE}: how long to wait for open runs that pinned a
   * written constant before giving that constant fresh storage instead.
   *
   * @return milliseconds; 1000 by default, 0 = never wait
   */
  public long inPlaceMaxWaitMillis() {
    return inPlaceMaxWaitMillis;
  }

  /**
   * For {@link UpdateTarget#ACTIVE_IN_PLACE}: how long to wait for open runs that pinned a
   * written constant before giving that constant fresh storage instead.
   *
   * @return the wait; 1 s by default, {@link Duration#ZERO} = never wait
   */
  public Duration inPlaceMaxWait() {
    return Duration.ofMillis(inPlaceMaxWaitMillis);
  }

  /**
   * The CUDA stream whose work so far the update's reads of device sources wait for.
   *
   * @return a {@code cudaStream_t} as an address; 0 (none) by default
   */
  public long waitStream() {
    return waitStream;
  }

  /** The native options (filled by the sized init; the caller deletes them). */
  /**
   * The listener told the update's progress, which may cancel it.
   *
   * @return the listener; null by default
   * @since 0.3
   */
  public ProgressListener progress() {
    return progress;
  }

  wharf_update_options toNative() {
    wharf_update_options o = new wharf_update_options();
    o.setTarget(target.value());
    o.setRequire_full(requireFull ? 1 : 0);
    o.setIn_place_max_wait_ms(inPlaceMaxWaitMillis);
    WharfNative.wharf_swig_update_options_set_wait_stream(o, waitStream);
    return o;
  }

  /**
   * Runs one update of {@code updating} (a container or a weight store) with these options as
   * native options, freed afterwards: {@code plain} without a fold, {@code folded} with this
   * fold's {@link FoldCall}, whose failure becomes the cause of the update's exception.
   */
  void run(NativeHandle<?> updating, Consumer<wharf_update_options> plain,
      BiConsumer<wharf_update_options, FoldCall> folded) {
    wharf_update_options o = toNative();
    ProgressCall progressCall = ProgressCall.of(progress, target == UpdateTarget.ACTIVE_IN_PLACE);
    try {
      WharfNative.wharf_swig_update_options_set_progress(o, progressCall);
      Runnable call;
      if (fold == null) {
        call = () -> plain.accept(o);
      } else {
        FoldCall foldCall = new FoldCall(fold, updating);
        call = () -> foldCall.around(() -> folded.accept(o, foldCall));
      }
      if (progressCall == null) {
        call.run();
      } else {
        progressCall.run(call);
      }
    } finally {
      WharfNative.wharf_swig_update_options_clear_progress(o);
      o.delete();
    }
  }

  @Override
  public String toString() {
    return "UpdateOptions{target=" + target + ", requireFull=" + requireFull + ", fold=" + (fold != null)
        + ", inPlaceMaxWait=" + inPlaceMaxWaitMillis + " ms"
        + (waitStream != 0 ? ", waitStream=0x" + Long.toHexString(waitStream) : "")
        + (progress != null ? ", progress" : "") + "}";
  }

  /** Builds {@link UpdateOptions}. Not thread-safe. */
  public static final class Builder {
    private UpdateTarget target = UpdateTarget.INACTIVE;
    private boolean requireFull;
    private Fold fold;
    private long inPlaceMaxWaitMillis = 1000;
    private long waitStream;
    private ProgressListener progress;

    private Builder() {}

    /**
     * A listener told the update's progress (done of total bytes), which cancels it by
     * returning false or throwing; see {@link ProgressListener}. Interrupting the calling
     * thread cancels an update with or without one. An in-place update
     * ({@link UpdateTarget#ACTIVE_IN_PLACE}) refuses a listener
     * ({@link WharfException.Code#UNSUPPORTED}: it cannot stop midway).
     *
     * @param listener the listener; null for none
     * @return this builder
     * @since 0.3
     */
    public Builder progress(ProgressListener listener) {
      this.progress = listener;
      return this;
    }

    /**
     * For {@link UpdateTarget#ACTIVE_IN_PLACE}: how long to wait for open runs that pinned a
     * written constant before giving it fresh storage instead (its bytes of extra memory).
     * Open runs never see their data change either way.
     *
     * @param wait {@link Duration#ZERO} (never wait) to 2^32 - 1 ms, in whole milliseconds
     *     (a sub-millisecond rest is dropped)
     * @return this builder
     * @throws IllegalArgumentException if negative or longer than 2^32 - 1 ms
     */
    public Builder inPlaceMaxWait(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.compareTo(Duration.ofMillis(0xFFFFFFFFL)) > 0) {
        throw new IllegalArgumentException("inPlaceMaxWait " + wait + " outside 0..2^32-1 ms");
      }
      return inPlaceMaxWaitMillis(wait.toMillis());
    }

    /**
     * Makes the update's reads of device (CUDA) sources wait, on the device, for the work
     * enqueued so far on {@code cudaStream}: the trainer's or NCCL receive's stream that
     * produced the new weights (an event is recorded on it when the update starts; the host
     * does not wait). Host sources are read as the call reads them. Must be 0 on the host
     * backend ({@link WharfException.Code#INVALID_ARGUMENT}).
     *
     * @param cudaStream a {@code cudaStream_t} as an address (from a CUDA binding); 0 for none
     * @return this builder
     */
    public Builder waitStream(long cudaStream) {
      this.waitStream = cudaStream;
      return this;
    }

    /**
     * Sets the callback that computes the derived constants of the generation being written
     * (required when the container declares any).
     *
     * @param fold the callback; null for none
     * @return this builder
     */
    public Builder fold(Fold fold) {
      this.fold = fold;
      return this;
    }

    /**
     * For {@link UpdateTarget#ACTIVE_IN_PLACE}: how long to wait for open runs that pinned a
     * written constant before giving it fresh storage instead (its bytes of extra memory).
     *
     * @param millis 0 (never wait) to 2^32 - 1
     * @return this builder
     * @throws IllegalArgumentException outside that range
     */
    public Builder inPlaceMaxWaitMillis(long millis) {
      if (millis < 0 || millis > 0xFFFFFFFFL) {
        throw new IllegalArgumentException("inPlaceMaxWaitMillis " + millis + " outside 0..2^32-1");
      }
      this.inPlaceMaxWaitMillis = millis;
      return this;
    }

    /**
     * Sets the generation the update writes.
     *
     * @param target the target
     * @return this builder
     */
    public Builder target(UpdateTarget target) {
      this.target = Objects.requireNonNull(target, "target");
      return this;
    }

    /**
     * Requires the map to name every constant of the container.
     *
     * @param requireFull true to reject a partial map
     * @return this builder
     */
    public Builder requireFull(boolean requireFull) {
      this.requireFull = requireFull;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public UpdateOptions build() {
      return new UpdateOptions(this);
    }
  }
}
