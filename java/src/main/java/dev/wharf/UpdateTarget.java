// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/** Which generation a {@link Container#update} writes, with the values of {@code wharf_update_target}. */
public enum UpdateTarget {
  /**
   * The inactive generation; {@link Container#swap()} publishes it. Extra memory is the
   * bytes updated (copy-on-write).
   */
  INACTIVE(0),
  /**
   * The active generation, in place: no extra device memory. The update waits for the runs
   * still open, and runs begun after it returns see only new data.
   */
  ACTIVE_IN_PLACE(1);

  private final int value;

  UpdateTarget(int value) {
    this.value = value;
  }

  /**
   * The numeric value in {@code wharf_update_target}.
   *
   * @return the value
   */
  public int value() {
    return value;
  }
}
