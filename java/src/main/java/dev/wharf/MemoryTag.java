// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** What an allocation is for; {@link MemoryStats} reports bytes per tag. Values of {@code wharf_memory_tag}. */
public enum MemoryTag {
  /** Constant (weight) storage. */
  CONSTANTS(0),
  /** Per-session mutable state. */
  STATE(1),
  /** The pinned staging ring for host-to-device copies. */
  STAGING(2),
  /** Scratch memory. */
  WORKSPACE(3),
  /** Offloaded layer weights. */
  OFFLOAD(4),
  /** CUDA graph memory. */
  GRAPH(5);

  private final int value;

  MemoryTag(int value) {
    this.value = value;
  }

  /**
   * The numeric value in {@code wharf_memory_tag} (the index of the tag's figures).
   *
   * @return the value
   */
  public int value() {
    return value;
  }
}
