// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One copy of each weight, shared by every container that uses it
 * ({@code wharf_weight_store}).
 *
 * <p>Containers created with the same store ({@link ContainerOptions.Builder#store}) share
 * storage for constants whose FQN, dtype, shape and placement are equal: two methods of one
 * model (prefill, decode) cost the union of their weights, not the sum. A different
 * declaration under a shared FQN is refused with {@link WharfException.Code#INVALID_ARGUMENT}
 * naming both containers. {@link Container#update} on one container detaches what it writes
 * (copy-on-write: the other containers keep the old storage); {@link #update} writes each
 * FQN once and stages it in every member container that declares it, and {@link #swap()}
 * publishes all of them at once.
 *
 * <pre>{@code
 * try (WeightStore store = WeightStore.create(runtime)) {
 *   ContainerOptions shared = ContainerOptions.builder().store(store).build();
 *   try (Container prefill = Container.fromMap(runtime, prefillWeights, "prefill", shared);
 *        Container decode = Container.fromMap(runtime, decodeWeights, "decode", shared)) {
 *     store.update(patch);  // one copy per FQN, staged in both
 *     store.swap();         // both see it, atomically
 *   }
 * }
 * }</pre>
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed store throws {@link IllegalStateException}. Containers that use the store keep it
 * alive, so it may be closed while they live; it keeps its {@link WharfRuntime} alive in turn.
 *
 * <p><b>Threads.</b> Safe to use from many threads at once.
 */
public final class WeightStore extends NativeHandle<SWIGTYPE_p_wharf_weight_store> {
  private final WharfRuntime runtime;
  private final ModelPackage modelPackage; // the owner of a package's store, else null

  private WeightStore(SWIGTYPE_p_wharf_weight_store pointer, WharfRuntime runtime) {
    super(pointer, WharfNative::wharf_weight_store_free, runtime);
    this.runtime = runtime;
    this.modelPackage = null;
  }

  private WeightStore(SWIGTYPE_p_wharf_weight_store pointer, ModelPackage modelPackage) {
    super(pointer, p -> { }, modelPackage); // a package's store is the package's to free
    this.runtime = modelPackage.runtime();
    this.modelPackage = modelPackage;
  }

  /**
   * Wraps the store of a native model package ({@code wharf_model_package_store}: borrowed,
   * valid while the package lives); call holding the package's lock. The wrapper is a
   * dependent of the package, so the native package outlives every call on the store.
   */
  static WeightStore ofPackage(SWIGTYPE_p_wharf_weight_store pointer, ModelPackage modelPackage) {
    if (pointer == null) throw new IllegalStateException(modelPackage.describe() + " has no weight store");
    return new WeightStore(pointer, modelPackage);
  }

  /**
   * Closes the store. A {@link ModelPackage}'s store belongs to the package: closing it does
   * nothing (close the package). Otherwise as for every handle: containers that use the store
   * keep its native object alive until they are closed.
   */
  @Override
  public void close() {
    if (modelPackage != null) return;
    super.close();
  }

  /** Closes a package's store, for {@link ModelPackage#close()}. */
  void closeForPackage() {
    super.close();
  }

  /**
   * The model package this store belongs to.
   *
   * @return the package (possibly closed), or null for a store made with {@link #create}
   * @since 0.3
   */
  public ModelPackage modelPackage() {
    return modelPackage;
  }

  /**
   * Creates an empty store on a runtime.
   *
   * @param runtime the runtime whose device holds the shared weights
   * @return a new store, owned by the caller
   * @throws IllegalStateException if the runtime has been closed
   */
  public static WeightStore create(WharfRuntime runtime) {
    Objects.requireNonNull(runtime, "runtime");
    return runtime.withPointer(rt -> {
      SWIGTYPE_p_wharf_weight_store pointer = WharfNative.wharf_swig_weight_store_create(rt);
      try {
        return new WeightStore(pointer, runtime);
      } catch (RuntimeException | Error e) {
        WharfNative.wharf_weight_store_free(pointer);
        throw e;
      }
    });
  }

  @Override
  String describe() {
    return modelPackage == null ? "WeightStore" : "WeightStore of " + modelPackage.describe();
  }

  /**
   * The runtime this store was created on (possibly closed).
   *
   * @return the runtime
   */
  public WharfRuntime runtime() {
    return runtime;
  }

  /**
   * What the store shares now.
   *
   * @return a snapshot of the store's figures
   * @throws IllegalStateException if the store has been closed
   */
  public WeightStoreStats stats() {
    return withPointer(p -> {
      wharf_weight_store_stats stats = new wharf_weight_store_stats();
      try {
        WharfNative.wharf_weight_store_get_stats(p, stats);
        return new WeightStoreStats(stats.getNum_unique_constants(), stats.getUnique_bytes(),
            stats.getNum_references(), stats.getSaved_bytes());
      } finally {
        stats.delete();
      }
    });
  }

  /**
   * Writes the map's tensors once each and stages them in every member container that
   * declares them; {@link #swap()} publishes them. The same as
   * {@code update(map, UpdateOptions.defaults())}.
   *
   * @param map the tensors to write, by name
   * @throws WharfException as {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalStateException if the store or the map has been closed
   */
  public void update(ConstantMap map) {
    update(map, UpdateOptions.defaults());
  }

  /**
   * Writes every tensor of the map once (one allocation and one copy per FQN) and stages it
   * in the inactive generation of every member container that declares it. All or nothing:
   * every check happens before anything is copied, and a failure stages nothing anywhere.
   * The map is read during the call only.
   *
   * @param map the tensors to write, by name
   * @param options only {@link UpdateTarget#INACTIVE} is supported
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} for a name no member
   *     container declares, {@link WharfException.Code#INVALID_ARGUMENT} for a wrong dtype or
   *     shape, {@link WharfException.Code#BUSY} while a member container is being updated,
   *     {@link WharfException.Code#UNSUPPORTED} for {@link UpdateTarget#ACTIVE_IN_PLACE}
   * @throws IllegalStateException if the store or the map has been closed
   */
  public void update(ConstantMap map, UpdateOptions options) {
    Objects.requireNonNull(map, "map");
    Objects.requireNonNull(options, "options");
    withPointer(s -> map.withPointer(m -> {
      options.run(this, o -> WharfNative.wharf_weight_store_update(s, m, o),
          (o, call) -> WharfNative.wharf_swig_weight_store_update_fold(s, m, o, call));
      return null;
    }));
  }

  /**
   * {@link #update(ConstantMap)} from a safetensors file: the same as
   * {@code updateFromFile(path, UpdateOptions.defaults())}. Since 0.3.
   *
   * @param path the file (or a sharded checkpoint's index, ending in ".json")
   * @throws WharfException as {@link #updateFromFile(Path, UpdateOptions)}
   * @throws IllegalStateException if the store has been closed
   */
  public void updateFromFile(Path path) {
    updateFromFile(path, UpdateOptions.defaults());
  }

  /**
   * {@link #update(ConstantMap, UpdateOptions)} from a safetensors file or a sharded
   * checkpoint's index (a path ending in ".json"), memory-mapped, validated whole and written
   * as one store update (see {@link Container#updateFromFile(Path, UpdateOptions)} for the
   * file rules). All or nothing across the members: a corrupt file or shard stages nothing
   * anywhere. Since 0.3.
   *
   * @param path the file, on the default file system
   * @param options as for {@link #update(ConstantMap, UpdateOptions)}
   * @throws WharfException those of {@link ConstantMap#loadSafetensors(Path)} for the file,
   *     then those of {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalArgumentException if the path is not on the default file system
   * @throws IllegalStateException if the store has been closed
   */
  public void updateFromFile(Path path, UpdateOptions options) {
    String file = ConstantMap.nativePath(path);
    Objects.requireNonNull(options, "options");
    withPointer(s -> {
      options.run(this, o -> WharfNative.wharf_weight_store_update_from_file(s, file, o),
          (o, call) -> WharfNative.wharf_swig_weight_store_update_from_file_fold(s, file, o, call));
      return null;
    });
  }

  /**
   * Swaps every member container staged by {@link #update}, atomically with respect to
   * {@link Container#beginRun}: no run begun after this returns sees old weights in one
   * container and new ones in another.
   *
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when nothing was
   *     staged by a store update
   * @throws IllegalStateException if the store has been closed
   */
  public void swap() {
    withPointer(s -> {
      WharfNative.wharf_weight_store_swap(s);
      return null;
    });
  }

  @Override
  public String toString() {
    try {
      WeightStoreStats s = stats();
      return "WeightStore{" + s.numUniqueConstants() + " constants, " + s.uniqueBytes() + " bytes, "
          + s.savedBytes() + " bytes saved}";
    } catch (IllegalStateException closed) {
      return "WeightStore{closed}";
    }
  }
}
