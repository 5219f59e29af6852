// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.file.Path;

/**
 * Options for {@link Model#load(WharfRuntime, Path, ConstantMap, ModelOptions)} (the fields
 * of {@code wharf_model_options}); immutable, made with {@link #builder()}.
 *
 * <pre>{@code
 * ModelOptions options = ModelOptions.builder()
 *     .name("decode")            // the container's name; default: the file's stem
 *     .store(store)              // share parameters with the store's other containers
 *     .maxSessionBytes(1L << 30) // budget for the KV caches of all its sessions
 *     .build();
 * }</pre>
 *
 * <p><b>Experimental</b>: models are in the experimental tier of the C API and may change
 * in any minor release.
 */
public final class ModelOptions {
  private static final ModelOptions DEFAULTS = new Builder().build();

  private final String name;
  private final WeightStore store;
  private final long maxSessionBytes;
  private final long sessionCapacity;
  private final Path shimPath;
  private final ProgressListener progress;
  private final OffloaderOptions offload;

  private ModelOptions(Builder b) {
    this.name = b.name;
    this.store = b.store;
    this.maxSessionBytes = b.maxSessionBytes;
    this.sessionCapacity = b.sessionCapacity;
    this.shimPath = b.shimPath;
    this.progress = b.progress;
    this.offload = b.offload;
  }

  /**
   * The listener told loading the weights's progress, which may cancel it.
   *
   * @return the listener; null by default
   * @since 0.3
   */
  public ProgressListener progress() {
    return progress;
  }

  /**
   * The layers to offload.
   *
   * @return the offloader options; null (the default) offloads nothing
   * @since 0.3
   */
  public OffloaderOptions offload() {
    return offload;
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
   * The defaults: the file's stem as name, no store, no session budget, the shim library
   * found by the library.
   *
   * @return the default options
   */
  public static ModelOptions defaults() {
    return DEFAULTS;
  }

  /**
   * The name of the model's container.
   *
   * @return the name, or null for the compiled file's stem (the default)
   */
  public String name() {
    return name;
  }

  /**
   * The store the model's parameters are shared through.
   *
   * @return the store, or null for none (the default)
   */
  public WeightStore store() {
    return store;
  }

  /**
   * The budget for the state (KV caches) of all live sessions over the model.
   *
   * @return bytes; 0 (the default) means no budget
   */
  public long maxSessionBytes() {
    return maxSessionBytes;
  }

  /**
   * The capacity of the state arena that keeps the model's states (experimental; see
   * {@link ContainerOptions.Builder#sessionCapacity(long)}).
   *
   * @return sessions; 0 (the default) means per-session buffers
   * @since 0.3
   */
  public long sessionCapacity() {
    return sessionCapacity;
  }

  /**
   * The AOTInductor shim library the compiled model's {@code aoti_torch_*} calls resolve to.
   *
   * @return its path, or null (the default) for {@code $WHARF_AOTI_SHIM}, else
   *     {@code libwharf_aoti_shim.so} beside {@code libwharf.so.1} (the jar carries it beside
   *     the library in a CUDA build)
   */
  public Path shimPath() {
    return shimPath;
  }

  @Override
  public String toString() {
    return "ModelOptions{name=" + name + ", store=" + (store != null) + ", maxSessionBytes=" + maxSessionBytes
        + ", sessionCapacity=" + sessionCapacity + ", shimPath=" + shimPath + "}";
  }

  /** Builds {@link ModelOptions}. Not thread-safe. */
  public static final class Builder {
    private String name;
    private WeightStore store;
    private long maxSessionBytes;
    private long sessionCapacity;
    private Path shimPath;
    private ProgressListener progress;
    private OffloaderOptions offload;

    private Builder() {}

    /**
     * Sets the name of the model's container (for messages, and {@link Container#name()}).
     *
     * @param name the name; null for the compiled file's stem
     * @return this builder
     */
    public Builder name(String name) {
      this.name = name;
      return this;
    }

    /**
     * Shares the model's parameters with the other containers of a store (prefill and decode
     * compiled separately hold one copy of their common weights).
     *
     * @param store the store; null for none
     * @return this builder
     */
    public Builder store(WeightStore store) {
      this.store = store;
      return this;
    }

    /**
     * Sets the budget for the state of all live sessions over the model: a session whose
     * creation would pass it fails with {@link WharfException.Code#RESOURCE_EXHAUSTED}.
     *
     * @param bytes 0 for no budget
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder maxSessionBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("maxSessionBytes " + bytes + " is negative");
      this.maxSessionBytes = bytes;
      return this;
    }

    /**
     * Keeps the model's states for up to {@code sessions} sessions in one state arena (its mutated buffers) (see
     * {@link ContainerOptions.Builder#sessionCapacity(long)}). Experimental: part of
     * wharf.h's experimental tier; it may change in any minor release.
     *
     * @param sessions the capacity; 0 (the default) means per-session buffers
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
     * Names the AOTInductor shim library ({@code libwharf_aoti_shim.so}) to use.
     *
     * @param path the library file; null for the default
     * @return this builder
     */
    public Builder shimPath(Path path) {
      this.shimPath = path;
      return this;
    }

    /**
     * A listener told loading the weights's progress (done of total bytes), which cancels it by returning
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
     * Offloads the layers {@code offload} selects: their parameters in pinned host memory,
     * prefetched into device slots as the model runs ({@link Model#offloader()} gives the
     * offloader). A model with run-time constant folding cannot be offloaded
     * ({@link WharfException.Code#UNSUPPORTED}).
     *
     * @param offload the selection; null for none
     * @return this builder
     * @since 0.3
     */
    public Builder offload(OffloaderOptions offload) {
      this.offload = offload;
      return this;
    }

    /**
     * Builds the options.
     *
     * @return immutable options with this builder's values
     */
    public ModelOptions build() {
      return new ModelOptions(this);
    }
  }
}
