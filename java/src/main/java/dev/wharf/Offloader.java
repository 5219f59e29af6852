// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Keeps chosen layers' constants of a container (declared {@link Placement#HOST}) in pinned
 * host memory and a small pool of device slots, and within a run copies layer
 * {@code i + prefetchStep} into a slot while layer {@code i} computes
 * ({@code wharf_offloader}). Per run, in this order: {@link Run#beginOffload}; for each layer
 * L in increasing order {@link Run#waitOffload} (the run's stream waits for L's copy; the
 * views are L's slots), launch L's work on the run's stream, {@link Run#markOffloadIssued};
 * then {@link Run#endOffload} before the run is closed. One run at a time holds an
 * offloader (others get {@link WharfException.Code#BUSY}). A run copies from the generation
 * it pinned, so updates and swaps change what later runs prefetch.
 *
 * <p>Close it when done; a run that began offloading keeps it until the run ends. Safe to
 * use from many threads. It keeps its container alive.
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class Offloader extends NativeHandle<SWIGTYPE_p_wharf_offloader> {
  private final String name;

  private Offloader(SWIGTYPE_p_wharf_offloader pointer, NativeHandle<?> parent, String name) {
    super(pointer, WharfNative::wharf_offloader_free, parent);
    this.name = name;
    nameForLeaks();
  }

  /**
   * Creates an offloader over {@code container}, allocating its slot pool, a copy stream and
   * its events.
   *
   * @param container the container whose host-placed layer constants are offloaded
   * @param options the selection and prefetch
   * @return a new offloader, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (a pattern without
   *     exactly one {@code {layer}}, no constant matching it, a listed constant without a
   *     layer number, a bad group, a prefetch step above the slot count: the message says
   *     which), {@link WharfException.Code#NOT_FOUND} (a listed name the container does not
   *     declare), {@link WharfException.Code#ALREADY_EXISTS} (one listed twice),
   *     {@link WharfException.Code#FAILED_PRECONDITION} (an offloaded constant not
   *     host-placed, named), {@link WharfException.Code#OUT_OF_MEMORY},
   *     {@link WharfException.Code#RESOURCE_EXHAUSTED} (refuseIfExposed and a budget
   *     prefetch cannot hide), {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the container has been closed
   */
  public static Offloader create(Container container, OffloaderOptions options) {
    Objects.requireNonNull(container, "container");
    Objects.requireNonNull(options, "options");
    return container.withPointer(c -> {
      SWIGTYPE_p_wharf_offloader_options o = options.toNative();
      try {
        return adopt(WharfNative.wharf_swig_offloader_create(c, o), container, "Offloader of " + container.describe());
      } finally {
        WharfNative.wharf_swig_offloader_options_free(o);
      }
    });
  }

  /** Wraps a new native offloader; call holding the parent's lock. */
  static Offloader adopt(SWIGTYPE_p_wharf_offloader pointer, NativeHandle<?> parent, String name) {
    try {
      return new Offloader(pointer, parent, name);
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_offloader_free(pointer);
      throw e;
    }
  }

  @Override
  String describe() {
    return name;
  }

  /**
   * The number of layers the offloader spans (the largest layer number + 1).
   *
   * @return the layer count
   * @throws IllegalStateException if the offloader has been closed
   */
  public int numLayers() {
    return withPointer(p -> (int) WharfNative.wharf_offloader_num_layers(p));
  }

  /**
   * The names of a layer's offloaded constants, in the order {@link Run#waitOffload} returns
   * their slots.
   *
   * @param layer the layer number
   * @return the names; empty for a layer that is not offloaded, or out of range
   * @throws IllegalStateException if the offloader has been closed
   */
  public List<String> layerConstants(int layer) {
    if (layer < 0) return Collections.emptyList();
    return withPointer(p -> {
      int n = Math.toIntExact(WharfNative.wharf_offloader_num_layer_constants(p, layer));
      List<String> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) out.add(WharfNative.wharf_offloader_layer_constant(p, layer, i));
      return Collections.unmodifiableList(out);
    });
  }

  /**
   * The budget estimated when the offloader was created: what a step (a run through every
   * layer) copies against its compute.
   *
   * @return the budget
   * @throws IllegalStateException if the offloader has been closed
   */
  public OffloaderBudget budget() {
    return withPointer(p -> {
      wharf_offloader_budget b = new wharf_offloader_budget();
      try {
        WharfNative.wharf_offloader_get_budget(p, b);
        return new OffloaderBudget(b.getNum_offloaded_layers(), b.getBytes_per_step(),
            b.getH2d_bytes_per_second(), b.getH2d_source(), b.getCopy_us(), b.getCompute_us(), b.getExposed_us());
      } finally {
        b.delete();
      }
    });
  }

  @Override
  public String toString() {
    return describe() + (isClosed() ? "{closed}" : "");
  }
}
