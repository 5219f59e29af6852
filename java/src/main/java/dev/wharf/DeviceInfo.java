// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** A description of a runtime's device ({@link WharfRuntime#deviceInfo()}); an immutable value. */
public final class DeviceInfo {
  private final Backend backend;
  private final int deviceIndex;
  private final String name;
  private final long totalMemory;
  private final long freeMemory;
  private final int computeMajor;
  private final int computeMinor;

  DeviceInfo(Backend backend, int deviceIndex, String name, long totalMemory, long freeMemory,
      int computeMajor, int computeMinor) {
    this.backend = backend;
    this.deviceIndex = deviceIndex;
    this.name = name;
    this.totalMemory = totalMemory;
    this.freeMemory = freeMemory;
    this.computeMajor = computeMajor;
    this.computeMinor = computeMinor;
  }

  /**
   * The backend driving the device.
   *
   * @return {@link Backend#CUDA} or {@link Backend#HOST}
   */
  public Backend backend() {
    return backend;
  }

  /**
   * The CUDA device ordinal.
   *
   * @return the ordinal (0 on the host backend)
   */
  public int deviceIndex() {
    return deviceIndex;
  }

  /**
   * The device's name.
   *
   * @return for example "NVIDIA H100 80GB HBM3", or "host"
   */
  public String name() {
    return name;
  }

  /**
   * The device's memory.
   *
   * @return bytes; on the host backend, physical memory
   */
  public long totalMemory() {
    return totalMemory;
  }

  /**
   * Free device memory when the description was taken.
   *
   * @return bytes
   */
  public long freeMemory() {
    return freeMemory;
  }

  /**
   * The CUDA compute capability's major number.
   *
   * @return the major number; 0 on the host backend
   */
  public int computeMajor() {
    return computeMajor;
  }

  /**
   * The CUDA compute capability's minor number.
   *
   * @return the minor number; 0 on the host backend
   */
  public int computeMinor() {
    return computeMinor;
  }

  @Override
  public String toString() {
    return "DeviceInfo{backend=" + backend + ", deviceIndex=" + deviceIndex + ", name=" + name
        + ", totalMemory=" + totalMemory + ", freeMemory=" + freeMemory + ", compute="
        + computeMajor + "." + computeMinor + "}";
  }
}
