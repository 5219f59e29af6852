// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** Where a container keeps a constant, with the values of {@code wharf_placement}. */
public enum Placement {
  /** Device memory (host memory on the host backend). */
  DEVICE(0),
  /** Pinned host memory, even for a CUDA model. */
  HOST(1);

  private final int value;

  Placement(int value) {
    this.value = value;
  }

  /**
   * The numeric value in {@code wharf_placement}.
   *
   * @return the value
   */
  public int value() {
    return value;
  }

  /**
   * The placement with the given {@code wharf_placement} value.
   *
   * @param value a {@code wharf_placement} value
   * @return the placement
   * @throws IllegalArgumentException for a value this binding does not know
   */
  public static Placement fromValue(int value) {
    for (Placement p : values()) {
      if (p.value == value) return p;
    }
    throw new IllegalArgumentException("unknown wharf_placement value " + value);
  }
}
