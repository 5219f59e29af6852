// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * The figures of a container's state arena ({@code wharf_state_arena_stats}); an immutable
 * snapshot from {@link Container#stateArenaStats()}. Experimental: part of wharf.h's
 * experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class StateArenaStats {
  private final long slots;
  private final long used;
  private final long free;
  private final long bytes;

  StateArenaStats(long slots, long used, long free, long bytes) {
    this.slots = slots;
    this.used = used;
    this.free = free;
    this.bytes = bytes;
  }

  /**
   * The arena's session capacity.
   *
   * @return slots
   */
  public long numSlots() {
    return slots;
  }

  /**
   * Slots held by live sessions.
   *
   * @return slots
   */
  public long numSlotsUsed() {
    return used;
  }

  /**
   * Slots free.
   *
   * @return slots
   */
  public long numSlotsFree() {
    return free;
  }

  /**
   * The arena's storage: {@link #numSlots()} times one session's bytes, all states.
   *
   * @return bytes
   */
  public long bytes() {
    return bytes;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof StateArenaStats)) return false;
    StateArenaStats s = (StateArenaStats) o;
    return slots == s.slots && used == s.used && free == s.free && bytes == s.bytes;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(slots, used, free, bytes);
  }

  @Override
  public String toString() {
    return "StateArenaStats{slots=" + slots + ", used=" + used + ", free=" + free + ", bytes=" + bytes + "}";
  }
}
