// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Options for {@link Session#create(WharfRuntime, SessionOptions, Container...)}; immutable, made
 * with {@link #builder()}.
 *
 * <pre>{@code
 * SessionOptions options = SessionOptions.builder().maxStateBytes(1 << 20).allocateEagerly(true).build();
 * }</pre>
 */
public final class SessionOptions {
  private static final SessionOptions DEFAULTS = new Builder().build();

  private final long maxStateBytes;
  private final boolean allocateEagerly;

  private SessionOptions(Builder b) {
    this.maxStateBytes = b.maxStateBytes;
    this.allocateEagerly = b.allocateEagerly;
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
   * The defaults: no limit, state allocated at the first run.
   *
   * @return the default options
   */
  public static SessionOptions defaults() {
    return DEFAULTS;
  }

  /**
   * The most state bytes the session may hold; a session that would hold more is refused
   * with {@link WharfException.Code#RESOURCE_EXHAUSTED}.
   *
   * @return bytes; 0 (the default) means no limit
   */
  public long maxStateBytes() {
    return maxStateBytes;
  }

  /**
   * Whether the state is allocated and initialised when the session is created rather than
   * at its first run.
   *
   * @return false by default
   */
  public boolean allocateEagerly() {
    return allocateEagerly;
  }

  @Override
  public String toString() {
    return "SessionOptions{maxStateBytes=" + maxStateBytes + ", allocateEagerly=" + allocateEagerly + "}";
  }

  /** Builds {@link SessionOptions}. Not thread-safe. */
  public static final class Builder {
    private long maxStateBytes;
    private boolean allocateEagerly;

    private Builder() {}

    /**
     * Limits the state the session may hold.
     *
     * @param bytes the limit; 0 means none
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative
     */
    public Builder maxStateBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("maxStateBytes is negative: " + bytes);
      this.maxStateBytes = bytes;
      return this;
    }

    /**
     * Allocates and initialises the state when the session is created.
     *
     * @param eager true to allocate now, false to allocate at the first run
     * @return this builder
     */
    public Builder allocateEagerly(boolean eager) {
      this.allocateEagerly = eager;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public SessionOptions build() {
      return new SessionOptions(this);
    }
  }
}
