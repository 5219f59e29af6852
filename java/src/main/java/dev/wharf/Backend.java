// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** Which device a {@link WharfRuntime} drives, with the values of {@code wharf_backend}. */
public enum Backend {
  /** CUDA when a device is usable, the host backend otherwise (a runtime never reports it). */
  AUTO(0),
  /** A CUDA GPU. */
  CUDA(1),
  /** Host memory and worker-thread streams; runs anywhere. */
  HOST(2);

  private final int value;

  Backend(int value) {
    this.value = value;
  }

  /**
   * The numeric value in {@code wharf_backend}.
   *
   * @return the value
   */
  public int value() {
    return value;
  }

  /**
   * The backend with the given {@code wharf_backend} value.
   *
   * @param value a {@code wharf_backend} value
   * @return the backend
   * @throws IllegalArgumentException for a value this binding does not know
   */
  public static Backend fromValue(int value) {
    for (Backend b : values()) {
      if (b.value == value) return b;
    }
    throw new IllegalArgumentException("unknown wharf_backend value " + value);
  }
}
