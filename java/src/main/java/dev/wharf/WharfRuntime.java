// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Objects;

/**
 * One device (a CUDA GPU, or the host backend) with its streams, allocator and memory
 * accounting ({@code wharf_runtime}).
 *
 * <pre>{@code
 * try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build())) {
 *   System.out.println(runtime.deviceInfo().name());
 * }
 * }</pre>
 *
 * <p><b>Lifetime.</b> Close it when done (try-with-resources); closing twice is a no-op, and
 * any other call on a closed runtime throws {@link IllegalStateException}. Containers
 * created from a runtime keep its device alive: closing the runtime first is allowed, and
 * its native object is freed when the last of them is closed. Freeing it waits for its
 * streams to drain.
 *
 * <p><b>Threads.</b> Safe to use from many threads at once.
 */
public final class WharfRuntime extends NativeHandle<SWIGTYPE_p_wharf_runtime> {
  private final Backend backend;

  private WharfRuntime(SWIGTYPE_p_wharf_runtime pointer) {
    super(pointer, WharfNative::wharf_runtime_free);
    this.backend = Backend.fromValue(WharfNative.wharf_runtime_backend(pointer));
  }

  /**
   * Creates a runtime with the default options ({@link Backend#AUTO}).
   *
   * @return a new runtime, owned by the caller
   * @throws WharfException as {@link #create(RuntimeOptions)}
   */
  public static WharfRuntime create() {
    return create(RuntimeOptions.defaults());
  }

  /**
   * Creates a runtime.
   *
   * @param options the options
   * @return a new runtime, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} for bad option values,
   *     {@link WharfException.Code#UNSUPPORTED} for CUDA in a build without CUDA or with no
   *     device, {@link WharfException.Code#DEVICE_ERROR} when CUDA fails to initialise
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static WharfRuntime create(RuntimeOptions options) {
    Objects.requireNonNull(options, "options");
    NativeLibrary.load();
    wharf_runtime_options o = new wharf_runtime_options();
    SWIGTYPE_p_wharf_runtime pointer;
    try {
      o.setBackend(options.backend().value());
      o.setDevice_index(options.deviceIndex());
      o.setDevice_memory_limit(options.deviceMemoryLimit());
      o.setCopy_threads(options.copyThreads());
      o.setStaging_bytes(options.stagingBytes());
      pointer = WharfNative.wharf_swig_runtime_create(o);
    } finally {
      o.delete();
    }
    try {
      return new WharfRuntime(pointer);
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_runtime_free(pointer);
      throw e;
    }
  }

  @Override
  String describe() {
    return "WharfRuntime (" + backend + ")";
  }

  /**
   * The backend the runtime chose (never {@link Backend#AUTO}).
   *
   * @return {@link Backend#CUDA} or {@link Backend#HOST}
   * @throws IllegalStateException if the runtime has been closed
   */
  public Backend backend() {
    return withPointer(p -> backend);
  }

  /**
   * Describes the runtime's device.
   *
   * @return the device's description
   * @throws WharfException {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the runtime has been closed
   */
  public DeviceInfo deviceInfo() {
    return withPointer(p -> {
      wharf_device_info info = new wharf_device_info();
      try {
        WharfNative.wharf_runtime_get_device_info(p, info);
        return new DeviceInfo(Backend.fromValue(info.getBackend()), info.getDevice_index(),
            info.device_name(), info.getTotal_memory(), info.getFree_memory(),
            info.getCompute_major(), info.getCompute_minor());
      } finally {
        info.delete();
      }
    });
  }

  /**
   * Reads the runtime's memory figures (each counter is a consistent snapshot).
   *
   * @return current and peak bytes per tag, device and pinned host
   * @throws IllegalStateException if the runtime has been closed
   */
  public MemoryStats memoryStats() {
    return withPointer(p -> {
      wharf_memory_stats stats = new wharf_memory_stats();
      try {
        WharfNative.wharf_runtime_get_memory_stats(p, stats);
        long[] current = new long[WharfNativeConstants.WHARF_MEM_TAG_CAPACITY];
        long[] peak = new long[WharfNativeConstants.WHARF_MEM_TAG_CAPACITY];
        for (int tag = 0; tag < current.length; tag++) {
          current[tag] = stats.current_at(tag);
          peak[tag] = stats.peak_at(tag);
        }
        return new MemoryStats(current, peak, stats.getDevice_current(), stats.getDevice_peak(),
            stats.getPinned_host_current(), stats.getPinned_host_peak());
      } finally {
        stats.delete();
      }
    });
  }

  /**
   * Sets every peak figure of {@link #memoryStats()} to its current value.
   *
   * @throws IllegalStateException if the runtime has been closed
   */
  public void resetPeak() {
    withPointer(p -> {
      WharfNative.wharf_runtime_reset_peak(p);
      return null;
    });
  }

  /**
   * Waits until all work Wharf enqueued on the runtime's own streams has finished.
   *
   * @throws WharfException {@link WharfException.Code#DEVICE_ERROR}, naming the failed work
   * @throws IllegalStateException if the runtime has been closed
   */
  public void synchronize() {
    withPointer(p -> {
      WharfNative.wharf_runtime_synchronize(p);
      return null;
    });
  }

  @Override
  public String toString() {
    return isClosed() ? "WharfRuntime{closed}" : "WharfRuntime{" + backend + "}";
  }
}
