// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;

/**
 * The owner of the slot views {@link Run#waitOffload} hands out for one layer: a dependent
 * of the run and of the offloader (so neither native object, the slot pool included, is
 * freed while a view may read it), closed when the layer is issued, offloading ends or the
 * run is closed; the views then throw {@link IllegalStateException}. Its pointer is the
 * run's, which the views copy through ({@code wharf_run_copy}); it frees nothing.
 */
final class OffloadSlots extends NativeHandle<SWIGTYPE_p_wharf_run> {
  private final Run run;
  private final Offloader offloader;
  private final int layer;

  /** Call holding the run's and the offloader's locks. */
  OffloadSlots(SWIGTYPE_p_wharf_run pointer, Run run, Offloader offloader, int layer) {
    super(pointer, null, Arrays.asList(run, offloader));
    this.run = run;
    this.offloader = offloader;
    this.layer = layer;
  }

  Offloader offloader() {
    return offloader;
  }

  @Override
  String describe() {
    return "Offload slots of layer " + layer + " (issued or ended) of " + run.describe();
  }
}
