// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * What a container shares and what its sessions hold (the 0.2.0 fields of
 * {@code wharf_container_options}): a {@link WeightStore} to share constants through,
 * per-session state declarations, and a budget for the state of all sessions that cover the
 * container. Immutable, made with {@link #builder()}; for
 * {@link Container#create(WharfRuntime, String, List, ContainerOptions)} and
 * {@link Container#fromMap(WharfRuntime, ConstantMap, String, ContainerOptions)}.
 *
 * <pre>{@code
 * ContainerOptions options = ContainerOptions.builder()
 *     .store(store)                                   // share weights with other containers
 *     .state("kv", DType.F32, 2, 16)                  // per-session, starts as zeros
 *     .state("pos", new float[] {0f}, 1)              // per-session, starts as [0]
 *     .maxSessionBytes(1 << 20)
 *     .build();
 * }</pre>
 */
public final class ContainerOptions {
  private static final ContainerOptions DEFAULTS = new Builder().build();

  private final WeightStore store;
  private final List<StateDecl> states;
  private final long maxSessionBytes;
  private final ProgressListener progress;
  private final long sessionCapacity;
  private final Container stateArenaOf;

  private ContainerOptions(Builder b) {
    this.store = b.store;
    this.states = Collections.unmodifiableList(new ArrayList<>(b.states));
    this.maxSessionBytes = b.maxSessionBytes;
    this.progress = b.progress;
    this.sessionCapacity = b.sessionCapacity;
    this.stateArenaOf = b.stateArenaOf;
  }

  /**
   * The capacity of the container's state arena (experimental).
   *
   * @return sessions; 0 (the default) means no arena of its own
   * @since 0.3
   */
  public long sessionCapacity() {
    return sessionCapacity;
  }

  /**
   * The container whose state arena this container joins (experimental).
   *
   * @return the container, or null for none (the default)
   * @since 0.3
   */
  public Container stateArenaOf() {
    return stateArenaOf;
  }

  /**
   * The listener told loading the map (Container.fromMap only)'s progress, which may cancel it.
   *
   * @return the listener; null by default
   * @since 0.3
   */
  public ProgressListener progress() {
    return progress;
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
   * The defaults: no store, no states, no session budget.
   *
   * @return the default options
   */
  public static ContainerOptions defaults() {
    return DEFAULTS;
  }

  /**
   * The store the container shares constants through.
   *
   * @return the store, or null for none (the default)
   */
  public WeightStore store() {
    return store;
  }

  /**
   * The per-session states, in declaration order.
   *
   * @return an unmodifiable list; empty by default
   */
  public List<StateDecl> states() {
    return states;
  }

  /**
   * The budget for the state of all live sessions that cover the container.
   *
   * @return bytes; 0 (the default) means no budget
   */
  public long maxSessionBytes() {
    return maxSessionBytes;
  }

  @Override
  public String toString() {
    return "ContainerOptions{store=" + store + ", states=" + states + ", maxSessionBytes="
        + maxSessionBytes + (sessionCapacity != 0 ? ", sessionCapacity=" + sessionCapacity : "")
        + (stateArenaOf != null ? ", stateArenaOf=" + stateArenaOf.describe() : "") + "}";
  }

  /** Builds {@link ContainerOptions}. Not thread-safe. */
  public static final class Builder {
    private WeightStore store;
    private final List<StateDecl> states = new ArrayList<>();
    private long maxSessionBytes;
    private ProgressListener progress;
    private long sessionCapacity;
    private Container stateArenaOf;

    private Builder() {}

    /**
     * Keeps the state of up to {@code sessions} sessions in one allocation per state tensor,
     * {@code [sessions, ...shape]}, made when the container is created (a state arena): each
     * {@link Session} takes a slot ({@link Session#slot()}) when it is created, and creating
     * one past the capacity fails with {@link WharfException.Code#RESOURCE_EXHAUSTED} naming
     * it; {@link Container#beginBatch(Session...)} runs several sessions at once. Not with
     * {@link #stateArenaOf(Container)}. Experimental: part of wharf.h's experimental tier;
     * it may change in any minor release.
     *
     * @param sessions the capacity; 0 (the default) means every session allocates buffers
     *     of its own
     * @return this builder
     * @throws IllegalArgumentException if {@code sessions} is negative or above 2^32 - 1
     * @since 0.3
     */
    public Builder sessionCapacity(long sessions) {
      if (sessions < 0 || sessions > 0xFFFF_FFFFL) {
        throw new IllegalArgumentException("sessionCapacity is outside 0..2^32-1: " + sessions);
      }
      this.sessionCapacity = sessions;
      return this;
    }

    /**
     * Keeps the container's states in the state arena of {@code container} (read during the
     * create call only: the arena lives while any container or session uses it), whose
     * states must include these with equal dtype and shape: the methods of one model
     * (prefill and decode) sharing their sessions' slots. Experimental: part of wharf.h's
     * experimental tier; it may change in any minor release.
     *
     * @param container the container that made the arena, or null for none (the default)
     * @return this builder
     * @since 0.3
     */
    public Builder stateArenaOf(Container container) {
      this.stateArenaOf = container;
      return this;
    }

    /**
     * Shares constants with the other containers of {@code store}: constants with equal FQN,
     * dtype, shape and placement get one copy. The container keeps the store alive.
     *
     * @param store the store, or null for none
     * @return this builder
     */
    public Builder store(WeightStore store) {
      this.store = store;
      return this;
    }

    /**
     * Declares a per-session state whose sessions start from zeros.
     *
     * @param fqn the state's name (distinct from every constant's)
     * @param dtype the element type
     * @param shape the dimensions (none for a scalar)
     * @return this builder
     * @throws IllegalArgumentException for a negative dimension or more than 8 dimensions
     */
    public Builder state(String fqn, DType dtype, long... shape) {
      return state(fqn, dtype, (ByteBuffer) null, shape);
    }

    /**
     * Declares a per-session state with an initial value borrowed from a direct buffer: its
     * bytes from the buffer's current position on, in native byte order, read when the
     * container is created (the buffer's position and limit are not changed).
     *
     * @param fqn the state's name (distinct from every constant's)
     * @param dtype the element type
     * @param initial a direct buffer with at least the state's byte size remaining, or null
     *     for zeros
     * @param shape the dimensions (none for a scalar)
     * @return this builder
     * @throws IllegalArgumentException if {@code initial} is not direct or too small, or for a
     *     negative dimension or more than 8 dimensions
     */
    public Builder state(String fqn, DType dtype, ByteBuffer initial, long... shape) {
      states.add(new StateDecl(fqn, dtype, initial, shape));
      return this;
    }

    /**
     * Declares an {@link DType#F32} per-session state whose initial value is <b>copied</b>
     * from an array.
     *
     * @param fqn the state's name (distinct from every constant's)
     * @param initial the elements, row-major; as many as the shape has
     * @param shape the dimensions (none for a scalar)
     * @return this builder
     * @throws IllegalArgumentException if the element count does not match the shape
     */
    public Builder state(String fqn, float[] initial, long... shape) {
      Objects.requireNonNull(fqn, "fqn");
      Objects.requireNonNull(initial, "initial");
      long elements = Shapes.elementCount(Objects.requireNonNull(shape, "shape"));
      if (elements != initial.length) {
        throw new IllegalArgumentException("state '" + fqn + "': shape " + Arrays.toString(shape)
            + " needs " + elements + " array elements, got " + initial.length);
      }
      ByteBuffer buffer = ByteBuffer.allocateDirect(initial.length * 4).order(ByteOrder.nativeOrder());
      buffer.asFloatBuffer().put(initial);
      return state(fqn, DType.F32, buffer, shape);
    }

    /**
     * Sets the budget for the state of all live sessions that cover the container: a session
     * whose creation (or fork) would pass it fails with
     * {@link WharfException.Code#RESOURCE_EXHAUSTED}.
     *
     * @param bytes the budget; 0 means none
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative
     */
    public Builder maxSessionBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("maxSessionBytes is negative: " + bytes);
      this.maxSessionBytes = bytes;
      return this;
    }

    /**
     * A listener told loading the map (Container.fromMap only)'s progress (done of total bytes), which cancels it by returning
     * false or throwing; see {@link ProgressListener}. Interrupting the calling thread cancels
     * it with or without one.
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
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public ContainerOptions build() {
      return new ContainerOptions(this);
    }
  }
}
