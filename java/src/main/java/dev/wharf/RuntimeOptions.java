// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Objects;

/**
 * Options for {@link WharfRuntime#create(RuntimeOptions)}; immutable, made with {@link #builder()}.
 * Every option left unset keeps the library's default.
 *
 * <pre>{@code
 * RuntimeOptions options = RuntimeOptions.builder()
 *     .backend(Backend.HOST)
 *     .deviceMemoryLimit(1L << 30)
 *     .build();
 * }</pre>
 */
public final class RuntimeOptions {
  private final Backend backend;
  private final int deviceIndex;
  private final long deviceMemoryLimit;
  private final int copyThreads;
  private final long stagingBytes;

  private RuntimeOptions(Builder b) {
    this.backend = b.backend;
    this.deviceIndex = b.deviceIndex;
    this.deviceMemoryLimit = b.deviceMemoryLimit;
    this.copyThreads = b.copyThreads;
    this.stagingBytes = b.stagingBytes;
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
   * The defaults: {@link Backend#AUTO}, device 0, no memory cap, automatic copy threads and
   * staging size.
   *
   * @return the default options
   */
  public static RuntimeOptions defaults() {
    return new Builder().build();
  }

  /**
   * The backend to use.
   *
   * @return the backend; {@link Backend#AUTO} by default
   */
  public Backend backend() {
    return backend;
  }

  /**
   * The CUDA device ordinal.
   *
   * @return the device index; 0 by default
   */
  public int deviceIndex() {
    return deviceIndex;
  }

  /**
   * Bytes of device memory Wharf may hold.
   *
   * @return the cap in bytes; 0 (the default) means no cap
   */
  public long deviceMemoryLimit() {
    return deviceMemoryLimit;
  }

  /**
   * Host threads that fill the pinned staging ring.
   *
   * @return the thread count; 0 (the default) means automatic
   */
  public int copyThreads() {
    return copyThreads;
  }

  /**
   * Size of the pinned staging ring.
   *
   * @return the size in bytes; 0 (the default) means automatic
   */
  public long stagingBytes() {
    return stagingBytes;
  }

  @Override
  public String toString() {
    return "RuntimeOptions{backend=" + backend + ", deviceIndex=" + deviceIndex
        + ", deviceMemoryLimit=" + deviceMemoryLimit + ", copyThreads=" + copyThreads
        + ", stagingBytes=" + stagingBytes + "}";
  }

  /** Builds {@link RuntimeOptions}. Not thread-safe. */
  public static final class Builder {
    private Backend backend = Backend.AUTO;
    private int deviceIndex;
    private long deviceMemoryLimit;
    private int copyThreads;
    private long stagingBytes;

    private Builder() {}

    /**
     * Sets the backend.
     *
     * @param backend the backend; {@link Backend#AUTO} picks CUDA when usable
     * @return this builder
     */
    public Builder backend(Backend backend) {
      this.backend = Objects.requireNonNull(backend, "backend");
      return this;
    }

    /**
     * Sets the CUDA device ordinal.
     *
     * @param deviceIndex a non-negative ordinal
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder deviceIndex(int deviceIndex) {
      if (deviceIndex < 0) throw new IllegalArgumentException("deviceIndex " + deviceIndex + " is negative");
      this.deviceIndex = deviceIndex;
      return this;
    }

    /**
     * Caps the device memory Wharf may hold; allocations past it fail with
     * {@link WharfException.Code#OUT_OF_MEMORY}.
     *
     * @param bytes the cap in bytes; 0 means no cap
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder deviceMemoryLimit(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("deviceMemoryLimit " + bytes + " is negative");
      this.deviceMemoryLimit = bytes;
      return this;
    }

    /**
     * Sets the number of host threads that fill the pinned staging ring.
     *
     * @param threads a non-negative count; 0 means automatic
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder copyThreads(int threads) {
      if (threads < 0) throw new IllegalArgumentException("copyThreads " + threads + " is negative");
      this.copyThreads = threads;
      return this;
    }

    /**
     * Sets the size of the pinned staging ring.
     *
     * @param bytes a non-negative size; 0 means automatic
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder stagingBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("stagingBytes " + bytes + " is negative");
      this.stagingBytes = bytes;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public RuntimeOptions build() {
      return new RuntimeOptions(this);
    }
  }
}
