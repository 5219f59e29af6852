package dev.wharf;

import java.util.Objects;

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

  private UpdateOptions(Builder b) {
    this.target = b.target;
    this.requireFull = b.requireFull;
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

  @Override
  public String toString() {
    return "UpdateOptions{target=" + target + ", requireFull=" + requireFull + "}";
  }

  /** Builds {@link UpdateOptions}. Not thread-safe. */
  public static final class Builder {
    private UpdateTarget target = UpdateTarget.INACTIVE;
    private boolean requireFull;

    private Builder() {}

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
