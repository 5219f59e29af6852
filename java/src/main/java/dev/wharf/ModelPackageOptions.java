// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.file.Path;

/**
 * Options for {@link ModelPackage#load(WharfRuntime, Path, ModelPackageOptions)} (the fields
 * of {@code wharf_model_package_options}); immutable, made with {@link #builder()}.
 *
 * <pre>{@code
 * ModelPackageOptions options = ModelPackageOptions.builder()
 *     .maxSessionBytes(1L << 30)                        // budget for the KV caches of all sessions
 *     .progress((done, total) -> { bar.set(done, total); return true; })
 *     .build();
 * }</pre>
 *
 * <p><b>Experimental</b>: model packages are in the experimental tier of the C API and may
 * change in any minor release.
 *
 * @since 0.3
 */
public final class ModelPackageOptions {
  private static final ModelPackageOptions DEFAULTS = new Builder().build();

  private final long maxSessionBytes;
  private final long sessionCapacity;
  private final Path shimPath;
  private final ProgressListener progress;

  private ModelPackageOptions(Builder b) {
    this.maxSessionBytes = b.maxSessionBytes;
    this.sessionCapacity = b.sessionCapacity;
    this.shimPath = b.shimPath;
    this.progress = b.progress;
  }

  /**
   * A new builder, every field at its default.
   *
   * @return the builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The defaults: no session budget, the shim library found as the library finds it, no
   * progress listener.
   *
   * @return the shared default options
   */
  public static ModelPackageOptions defaults() {
    return DEFAULTS;
  }

  /**
   * The budget for the state of all live sessions over each method's container.
   *
   * @return bytes; 0 means none
   */
  public long maxSessionBytes() {
    return maxSessionBytes;
  }

  /**
   * The capacity of the state arena that keeps the package's states (experimental; see
   * {@link ContainerOptions.Builder#sessionCapacity(long)}).
   *
   * @return sessions; 0 (the default) means per-session buffers
   * @since 0.3
   */
  public long sessionCapacity() {
    return sessionCapacity;
  }

  /**
   * Where {@code libwharf_aoti_shim.so} is.
   *
   * @return the path, or null for the library's default ({@code $WHARF_AOTI_SHIM}, else next
   *     to libwharf)
   */
  public Path shimPath() {
    return shimPath;
  }

  /**
   * The listener told how many of the package's weight bytes are loaded (all methods as one
   * total), which can cancel the load.
   *
   * @return the listener, or null for none
   */
  public ProgressListener progress() {
    return progress;
  }

  @Override
  public String toString() {
    return "ModelPackageOptions{maxSessionBytes=" + maxSessionBytes + ", sessionCapacity=" + sessionCapacity
        + ", shimPath=" + shimPath
        + ", progress=" + (progress != null) + "}";
  }

  /** Builds {@link ModelPackageOptions}. */
  public static final class Builder {
    private long maxSessionBytes;
    private long sessionCapacity;
    private Path shimPath;
    private ProgressListener progress;

    private Builder() {}

    /**
     * A budget for the state of all live sessions over each method's container (see
     * {@link ContainerOptions#maxSessionBytes()}).
     *
     * @param bytes the budget; 0 (the default) means none
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is negative
     */
    public Builder maxSessionBytes(long bytes) {
      if (bytes < 0) throw new IllegalArgumentException("maxSessionBytes " + bytes + " is negative");
      this.maxSessionBytes = bytes;
      return this;
    }

    /**
     * Keeps the package's states for up to {@code sessions} sessions in one state arena, shared by every method (a session of the package takes one slot) (see
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
     * Where {@code libwharf_aoti_shim.so} (the {@code aoti_torch_*} functions compiled methods
     * import) is.
     *
     * @param path the library; null (the default) for {@code $WHARF_AOTI_SHIM}, else the file
     *     next to libwharf
     * @return this builder
     */
    public Builder shimPath(Path path) {
      this.shimPath = path;
      return this;
    }

    /**
     * Reports the load's progress and lets the listener cancel it (see
     * {@link ProgressListener}): a cancelled load leaves nothing behind and throws
     * {@link WharfException.Code#CANCELLED}. Interrupting the loading thread cancels it too.
     *
     * @param listener the listener; null (the default) for none
     * @return this builder
     */
    public Builder progress(ProgressListener listener) {
      this.progress = listener;
      return this;
    }

    /**
     * The options.
     *
     * @return immutable options
     */
    public ModelPackageOptions build() {
      return new ModelPackageOptions(this);
    }
  }
}
