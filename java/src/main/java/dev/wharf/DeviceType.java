// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** Where a tensor's memory lives, with the values of {@code wharf_device_type}. */
public enum DeviceType {
  /** Host memory (pageable or pinned); readable from Java. */
  CPU(0),
  /** CUDA device memory; not readable from Java. */
  CUDA(1);

  private final int value;

  DeviceType(int value) {
    this.value = value;
  }

  /**
   * The numeric value in {@code wharf_device_type}.
   *
   * @return the value
   */
  public int value() {
    return value;
  }

  /**
   * The device type with the given {@code wharf_device_type} value.
   *
   * @param value a {@code wharf_device_type} value
   * @return the device type
   * @throws IllegalArgumentException for a value this binding does not know
   */
  public static DeviceType fromValue(int value) {
    for (DeviceType d : values()) {
      if (d.value == value) return d;
    }
    throw new IllegalArgumentException("unknown wharf_device_type value " + value);
  }
}
