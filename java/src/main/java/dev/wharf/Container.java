// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * One model's constants, double-buffered in copy-on-write generations
 * ({@code wharf_container}).
 *
 * <p>A container holds an <em>active</em> generation, which new {@link Run}s read, and an
 * <em>inactive</em> one, which {@link #update} writes and {@link #swap()} makes active.
 * Storage is per constant and shared between generations: an update gives fresh storage
 * only to the constants it writes, so the extra memory it needs is the bytes updated.
 * Runs already begun keep the generation they started with until they are closed.
 *
 * <pre>{@code
 * try (Container model = Container.fromMap(runtime, weights, "model")) {
 *   model.update(patch);  // writes the inactive generation
 *   model.swap();         // new runs see the patch
 * }
 * }</pre>
 *
 * <p><b>Sharing and state</b> ({@link ContainerOptions}): containers created with one
 * {@link WeightStore} share storage for equal constants, and a container that declares
 * per-session states runs only with a {@link Session} ({@link #beginRun(Session)}).
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed container throws {@link IllegalStateException}. A container keeps its
 * {@link WharfRuntime} (and its {@link WeightStore}, if any) reachable and alive, so they may be
 * closed first. Runs and sessions keep the container alive in turn: closing it while they
 * are open is allowed, and its native object is freed when the last of them is closed.
 *
 * <p><b>Threads.</b> Safe to use from many threads at once. Runs never wait for updates;
 * two updates of one container at once are not interleaved: the second fails with
 * {@link WharfException.Code#BUSY}.
 */
public final class Container extends NativeHandle<SWIGTYPE_p_wharf_container> {
  private static final String DEFAULT_NAME = "model";

  private final WharfRuntime runtime;
  private final WeightStore store;
  private final String name;
  private final Model model; // the model this container belongs to (borrowed from it), or null

  private Container(SWIGTYPE_p_wharf_container pointer, WharfRuntime runtime, WeightStore store, String name) {
    super(pointer, WharfNative::wharf_container_free,
        store == null ? Collections.singletonList(runtime) : Arrays.asList(runtime, store));
    this.runtime = runtime;
    this.store = store;
    this.name = name;
    this.model = null;
    nameForLeaks();
  }

  private Container(SWIGTYPE_p_wharf_container pointer, Model model) {
    super(pointer, p -> { }, model); // a model's container is the model's to free
    this.runtime = model.runtime();
    this.store = model.store();
    this.name = WharfNative.wharf_container_name(pointer);
    this.model = model;
  }

  /**
   * Wraps the container of a native model ({@code wharf_model_container}: borrowed, valid
   * while the model lives); call holding the model's lock. The wrapper is a dependent of the
   * model, so the native model outlives the runs and sessions over its container.
   */
  static Container ofModel(SWIGTYPE_p_wharf_container pointer, Model model) {
    if (pointer == null) throw new IllegalStateException(model.describe() + " has no container");
    return new Container(pointer, model);
  }

  /**
   * Closes the container. A {@link Model}'s container belongs to the model: closing it does
   * nothing (close the model). Otherwise as for every handle: the native object is freed now,
   * or when the last run or session over it is closed.
   */
  @Override
  public void close() {
    if (model != null) return;
    super.close();
  }

  /** Closes a model's container, for {@link Model#close()}. */
  void closeForModel() {
    super.close();
  }

  /**
   * The model this container belongs to.
   *
   * @return the model (possibly closed), or null for a container created from declarations
   *     or a map
   */
  public Model model() {
    return model;
  }

  /**
   * Declares a container with the given constants and no weights yet: runs fail with
   * {@link WharfException.Code#FAILED_PRECONDITION} until a first {@link #update} has been
   * swapped in, and that first swap needs every constant written.
   *
   * @param runtime the runtime whose device holds the constants
   * @param name a name for messages; null means "model"
   * @param constants the declarations, in order
   * @return a new container, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} for a bad or
   *     duplicate declaration, naming it
   * @throws IllegalArgumentException for a declaration with more than 8 dimensions
   * @throws IllegalStateException if the runtime has been closed
   */
  public static Container create(WharfRuntime runtime, String name, List<ConstantDecl> constants) {
    return create(runtime, name, constants, ContainerOptions.defaults());
  }

  /**
   * Declares a container with the given constants, a weight store to share them through and
   * per-session states. As {@link #create(WharfRuntime, String, List)}, it has no weights yet; with
   * a store, its first update takes the store's storage for constants the store already
   * holds instead of copying them. States' initial values are captured now.
   *
   * @param runtime the runtime whose device holds the constants
   * @param name a name for messages; null means "model"
   * @param constants the declarations, in order
   * @param options the store, states and session budget
   * @return a new container, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} for a bad or
   *     duplicate declaration, a state named like a constant, or a declaration that
   *     disagrees with the store's under the same FQN (naming both containers)
   * @throws IllegalArgumentException for a declaration with more than 8 dimensions
   * @throws IllegalStateException if the runtime or the store has been closed
   */
  public static Container create(WharfRuntime runtime, String name, List<ConstantDecl> constants,
      ContainerOptions options) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(options, "options");
    List<ConstantDecl> decls = new ArrayList<>(Objects.requireNonNull(constants, "constants"));
    for (ConstantDecl d : decls) {
      Objects.requireNonNull(d, "constants contains null");
      Shapes.checkRank(d.fqn(), d.shapeUnsafe());
    }
    String label = name == null ? DEFAULT_NAME : name;
    return withParents(runtime, options, (rt, store, arenaOf) -> {
      SWIGTYPE_p_wharf_swig_decl_list list = WharfNative.wharf_swig_decl_list_new();
      if (list == null) throw new OutOfMemoryError("allocating the declaration list of container '" + label + "'");
      try {
        for (ConstantDecl d : decls) {
          if (WharfNative.wharf_swig_decl_list_add(list, d.fqn(), d.dtype().value(), d.shapeUnsafe(),
              d.placement().value(), d.isDerived() ? WharfNativeConstants.WHARF_CONSTANT_DERIVED : 0) == 0) {
            throw new OutOfMemoryError("adding constant '" + d.fqn() + "' to container '" + label + "'");
          }
        }
        return withStates(label, options, states -> adopt(WharfNative.wharf_swig_container_create(rt, name,
            list, store, states, options.maxSessionBytes(), arenaOf, options.sessionCapacity()), runtime,
            options.store(), label));
      } finally {
        WharfNative.wharf_swig_decl_list_free(list);
      }
    });
  }

  /**
   * Creates a native container from the native runtime, store and state-arena container
   * (null for none).
   */
  private interface Creator {
    Container create(SWIGTYPE_p_wharf_runtime runtime, SWIGTYPE_p_wharf_weight_store store,
        SWIGTYPE_p_wharf_container stateArenaOf);
  }

  /**
   * Runs {@code creator} holding the locks of the runtime, of the options' store and of the
   * container whose state arena the new one joins (borrowed for the call only: the native
   * arena is shared by reference, so the new container does not depend on it).
   */
  private static Container withParents(WharfRuntime runtime, ContainerOptions options, Creator creator) {
    WeightStore store = options.store();
    Container arenaOf = options.stateArenaOf();
    if (store != null) FoldCall.refuseIfUpdating(store, "creating a container in it");
    List<NativeHandle<?>> parents = new ArrayList<>();
    parents.add(runtime);
    if (store != null) parents.add(store);
    if (arenaOf != null) parents.add(arenaOf);
    return withPointers(parents, () -> creator.create(runtime.pointerWhileLocked(),
        store == null ? null : store.pointerWhileLocked(), arenaOf == null ? null : arenaOf.pointerWhileLocked()));
  }

  /**
   * Runs {@code op} with a native list of the options' states (null when there are none),
   * keeping their initial-value buffers reachable until it returns.
   */
  private static Container withStates(String label, ContainerOptions options,
      Function<SWIGTYPE_p_wharf_swig_state_list, Container> op) {
    List<StateDecl> states = options.states();
    if (states.isEmpty()) return op.apply(null);
    SWIGTYPE_p_wharf_swig_state_list list = WharfNative.wharf_swig_state_list_new();
    if (list == null) throw new OutOfMemoryError("allocating the state list of container '" + label + "'");
    try {
      for (StateDecl d : states) {
        ByteBuffer initial = d.initialUnsafe();
        long address = 0;
        if (initial != null) {
          address = WharfNative.wharf_swig_direct_buffer_address(initial);
          if (address == 0) {
            throw new IllegalArgumentException("state '" + d.fqn() + "': the initial value's buffer address is not available");
          }
        }
        if (WharfNative.wharf_swig_state_list_add(list, d.fqn(), d.dtype().value(), d.shapeUnsafe(), address) == 0) {
          throw new OutOfMemoryError("adding state '" + d.fqn() + "' to container '" + label + "'");
        }
      }
      return op.apply(list);
    } finally {
      WharfNative.wharf_swig_state_list_free(list);
      Reference.reachabilityFence(options); // the library read the initial values in op
    }
  }

  /**
   * Declares one device-placed constant per tensor of {@code map} (in map order), loads them
   * and makes them active: the container is ready to run. The map is read during the call
   * only; it may be closed afterwards.
   *
   * @param runtime the runtime whose device holds the constants
   * @param map the constants' names, types, shapes and values
   * @param name a name for messages; null means "model"
   * @return a new container, owned by the caller
   * @throws WharfException as {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalStateException if the runtime or the map has been closed
   */
  public static Container fromMap(WharfRuntime runtime, ConstantMap map, String name) {
    return fromMap(runtime, map, name, ContainerOptions.defaults());
  }

  /**
   * Declares one device-placed constant per tensor of {@code map} (in map order), loads them
   * and makes them active, with a weight store and per-session states. With a store,
   * constants the store already holds with equal dtype, shape and placement are shared: no
   * allocation and no copy for them (the store assumes that one FQN names one weight: the
   * map's data for them is not read). The map is read during the call only.
   *
   * @param runtime the runtime whose device holds the constants
   * @param map the constants' names, types, shapes and values
   * @param name a name for messages; null means "model"
   * @param options the store, states and session budget
   * @return a new container, owned by the caller
   * @throws WharfException as {@link #create(WharfRuntime, String, List, ContainerOptions)} and
   *     {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalStateException if the runtime, the store or the map has been closed
   */
  public static Container fromMap(WharfRuntime runtime, ConstantMap map, String name, ContainerOptions options) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(map, "map");
    Objects.requireNonNull(options, "options");
    String label = name == null ? DEFAULT_NAME : name;
    // The map's lock is taken last, as everywhere else.
    ProgressCall progress = ProgressCall.of(options.progress(), false);
    return withParents(runtime, options, (rt, store, arenaOf) -> map.withPointer(m -> withStates(label, options,
        states -> progress.around(() -> adopt(WharfNative.wharf_swig_container_create_from_map_progress(rt, m, name,
            store, states, options.maxSessionBytes(), arenaOf, options.sessionCapacity(), progress), runtime,
            options.store(), label)))));
  }

  /** Wraps a new native container; call while holding the runtime's and the store's locks. */
  private static Container adopt(SWIGTYPE_p_wharf_container pointer, WharfRuntime runtime, WeightStore store, String name) {
    try {
      return new Container(pointer, runtime, store, name);
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_container_free(pointer);
      throw e;
    }
  }

  @Override
  String describe() {
    return "Container '" + name + "'";
  }

  /**
   * The runtime this container was created from (possibly closed).
   *
   * @return the runtime
   */
  public WharfRuntime runtime() {
    return runtime;
  }

  /**
   * The weight store this container shares constants through (possibly closed).
   *
   * @return the store, or null if the container was created without one
   */
  public WeightStore store() {
    return store;
  }

  /**
   * The name given at creation.
   *
   * @return the name ("model" if none was given)
   */
  public String name() {
    return name;
  }

  /**
   * Writes the map's tensors into the inactive generation; {@link #swap()} publishes them.
   * The same as {@code update(map, UpdateOptions.defaults())}.
   *
   * @param map the tensors to write, by name
   * @throws WharfException as {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalStateException if the container or the map has been closed
   */
  public void update(ConstantMap map) {
    update(map, UpdateOptions.defaults());
  }

  /**
   * Writes the map's tensors into the container and returns when the data is in place. The
   * map is read during the call only.
   *
   * <p>Everything is validated before anything is copied, and a failed update changes
   * nothing.
   *
   * @param map the tensors to write, by name
   * @param options the target generation and whether the map must be complete
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} for a name the container
   *     does not declare, {@link WharfException.Code#INVALID_ARGUMENT} for a wrong dtype or
   *     shape or a missing constant with {@link UpdateOptions#requireFull()}, each naming
   *     the constant; {@link WharfException.Code#OUT_OF_MEMORY};
   *     {@link WharfException.Code#BUSY} while another update of this container runs;
   *     {@link WharfException.Code#CANCELLED} when the options' {@link ProgressListener}
   *     cancelled it or the calling thread was interrupted (its interrupt status stays set)
   * @throws IllegalStateException if the container or the map has been closed
   */
  public void update(ConstantMap map, UpdateOptions options) {
    Objects.requireNonNull(map, "map");
    Objects.requireNonNull(options, "options");
    withPointer(c -> map.withPointer(m -> {
      options.run(this, o -> WharfNative.wharf_container_update(c, m, o),
          (o, call) -> WharfNative.wharf_swig_container_update_fold(c, m, o, call));
      return null;
    }));
  }

  /**
   * {@link #update(ConstantMap)} from a safetensors file: the same as
   * {@code updateFromFile(path, UpdateOptions.defaults())}. Since 0.3.
   *
   * @param path the file (or a sharded checkpoint's index, ending in ".json")
   * @throws WharfException as {@link #updateFromFile(Path, UpdateOptions)}
   * @throws IllegalStateException if the container has been closed
   */
  public void updateFromFile(Path path) {
    updateFromFile(path, UpdateOptions.defaults());
  }

  /**
   * {@link #update(ConstantMap, UpdateOptions)} from a safetensors file, or from every shard
   * of a sharded checkpoint's index (a path ending in ".json"). The file is memory-mapped and
   * validated whole before anything is written, its pages go straight from the mapping into
   * the staging ring (no copy on the Java heap or in native memory), and the mapping is
   * released before the call returns. The file may name a subset of the constants
   * ({@link UpdateOptions#requireFull()} demands all). The file must not be truncated during
   * the call; replace model files by rename, as {@link ConstantMap#save(Path)} does. Since 0.3.
   *
   * @param path the file, on the default file system
   * @param options as for {@link #update(ConstantMap, UpdateOptions)} (fold included)
   * @throws WharfException (each changing nothing) {@link WharfException.Code#NOT_FOUND},
   *     {@link WharfException.Code#IO_ERROR}, {@link WharfException.Code#DATA_CORRUPT} or
   *     {@link WharfException.Code#UNSUPPORTED} for the file, as
   *     {@link ConstantMap#loadSafetensors(Path)}; then {@link WharfException.Code#NOT_FOUND}
   *     for a tensor the container does not declare and
   *     {@link WharfException.Code#INVALID_ARGUMENT} for a dtype or shape that differs, each
   *     naming it; the rest as {@link #update(ConstantMap, UpdateOptions)}
   * @throws IllegalArgumentException if the path is not on the default file system
   * @throws IllegalStateException if the container has been closed
   */
  public void updateFromFile(Path path, UpdateOptions options) {
    String file = ConstantMap.nativePath(path);
    Objects.requireNonNull(options, "options");
    withPointer(c -> {
      options.run(this, o -> WharfNative.wharf_container_update_from_file(c, file, o),
          (o, call) -> WharfNative.wharf_swig_container_update_from_file_fold(c, file, o, call));
      return null;
    });
  }

  /**
   * Makes the inactive generation active, in O(1) and without waiting for the device. Runs
   * already begun keep the generation they pinned. The previous active generation becomes
   * the inactive one, so swapping again without an update rolls back.
   *
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when nothing is
   *     staged (after {@link #freeInactive()}, or before any update), or when a constant of a
   *     new container was never written (naming it)
   * @throws IllegalStateException if the container has been closed
   */
  public void swap() {
    withPointer(c -> {
      WharfNative.wharf_container_swap(c);
      return null;
    });
  }

  /**
   * Releases the inactive generation's storage (after the runs that read it have finished).
   *
   * @throws WharfException on failure
   * @throws IllegalStateException if the container has been closed
   */
  public void freeInactive() {
    withPointer(c -> {
      WharfNative.wharf_container_free_inactive(c);
      return null;
    });
  }

  /**
   * The active generation's id: 0 before the first swap, a new, larger id after every swap
   * and every in-place update.
   *
   * @return the id
   * @throws IllegalStateException if the container has been closed
   */
  public long generation() {
    return withPointer(WharfNative::wharf_container_generation);
  }

  /**
   * The number of declared constants.
   *
   * @return the count
   * @throws IllegalStateException if the container has been closed
   */
  public int numConstants() {
    return withPointer(c -> Math.toIntExact(WharfNative.wharf_container_num_constants(c)));
  }

  /**
   * The i-th declaration.
   *
   * @param i an index below {@link #numConstants()}
   * @return the declaration
   * @throws IndexOutOfBoundsException if {@code i} is negative or not below {@link #numConstants()}
   * @throws IllegalStateException if the container has been closed
   */
  public ConstantInfo constantInfo(int i) {
    return withPointer(c -> {
      Objects.checkIndex(i, Math.toIntExact(WharfNative.wharf_container_num_constants(c)));
      return info(c, i);
    });
  }

  /**
   * Every declaration, in order.
   *
   * @return an unmodifiable list
   * @throws IllegalStateException if the container has been closed
   */
  public List<ConstantInfo> constants() {
    return withPointer(c -> {
      int n = Math.toIntExact(WharfNative.wharf_container_num_constants(c));
      List<ConstantInfo> infos = new ArrayList<>(n);
      for (int i = 0; i < n; i++) infos.add(info(c, i));
      return Collections.unmodifiableList(infos);
    });
  }

  private static ConstantInfo info(SWIGTYPE_p_wharf_container c, int i) {
    wharf_constant_info info = new wharf_constant_info();
    try {
      WharfNative.wharf_container_get_constant_info(c, i, info);
      long[] shape = new long[info.getNdim()];
      for (int d = 0; d < shape.length; d++) shape[d] = info.dim(d);
      return new ConstantInfo(info.getFqn(), DType.fromValue(info.getDtype()), shape,
          Placement.fromValue(info.getPlacement()),
          (info.getFlags() & WharfNativeConstants.WHARF_CONSTANT_DERIVED) != 0, info.getNbytes());
    } finally {
      info.delete();
    }
  }

  /**
   * Begins a run without a session: pins the active generation until the run is closed.
   * Close it with try-with-resources.
   *
   * @return a new run, owned by the caller
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when no weights
   *     have been swapped in yet, or when the container declares states (use
   *     {@link #beginRun(Session)})
   * @throws IllegalStateException if the container has been closed
   */
  public Run beginRun() {
    FoldCall.refuseIfUpdating(this, "beginning a run");
    return withPointer(c -> Run.begin(this, c, null, null));
  }

  /**
   * Begins a run with a session: pins the active generation and the session's state until
   * the run is closed. The session's state is allocated at its first run (unless it was
   * created eagerly). One run at a time per session. Close it with try-with-resources.
   *
   * @param session the session whose state the run reads and writes; null is the same as
   *     {@link #beginRun()}
   * @return a new run, owned by the caller
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when no weights
   *     have been swapped in yet; {@link WharfException.Code#INVALID_ARGUMENT} when the
   *     session does not cover this container; {@link WharfException.Code#BUSY} while
   *     another run of the session is open; {@link WharfException.Code#OUT_OF_MEMORY}
   * @throws IllegalStateException if the container or the session has been closed
   */
  public Run beginRun(Session session) {
    if (session == null) return beginRun();
    FoldCall.refuseIfUpdating(this, "beginning a run");
    return withPointers(Arrays.asList(this, session),
        () -> Run.begin(this, pointerWhileLocked(), session, session.pointerWhileLocked()));
  }

  /**
   * Begins one run over {@code sessions}; see {@link #beginBatch(List)}.
   *
   * @param sessions the sessions (at least one)
   * @return a new run, owned by the caller
   * @throws WharfException as {@link #beginBatch(List)}
   * @throws IllegalArgumentException if no session is given
   * @throws IllegalStateException if the container or a session has been closed
   * @since 0.3
   */
  public Run beginBatch(Session... sessions) {
    return beginBatch(Arrays.asList(Objects.requireNonNull(sessions, "sessions")));
  }

  /**
   * Begins one run over {@code sessions} (each a session of this container's state arena)
   * on the active generation, pinned for all of them; every session is busy until the run
   * is closed. All or nothing: when one of them has an open run (or a reset or fork holds
   * it) this fails with {@link WharfException.Code#BUSY} naming its index and holds none.
   * Each session's state is initialised at its first run, as in {@link #beginRun(Session)}
   * (on the host backend the memory is ready when this returns). In the run,
   * {@link Run#tensor(String)} of a state is the whole arena ({@code [capacity, ...shape]};
   * only the run's slots may be written) and {@link Run#slotIndices()} gives the sessions'
   * slots in order. {@link Model#run(Run, TensorView...)} takes a batched run for a method
   * compiled over the arena (a package's {@code decode_batch}), with {@link Run#slotIndices()}
   * as its {@code slots} input; a method bound per session refuses it
   * ({@link WharfException.Code#UNSUPPORTED}). Experimental: part of wharf.h's experimental
   * tier; it may change in any minor release.
   *
   * @param sessions the sessions (at least one, distinct)
   * @return a new run, owned by the caller; it keeps the sessions alive
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} (no state arena,
   *     no active weights), {@link WharfException.Code#INVALID_ARGUMENT} (a session twice,
   *     one not covering the container or not of its arena, more sessions than the
   *     capacity), {@link WharfException.Code#BUSY}, {@link WharfException.Code#OUT_OF_MEMORY}
   * @throws IllegalArgumentException if no session is given
   * @throws IllegalStateException if the container or a session has been closed
   * @since 0.3
   */
  public Run beginBatch(List<Session> sessions) {
    List<Session> list = Collections.unmodifiableList(new ArrayList<>(Objects.requireNonNull(sessions, "sessions")));
    if (list.isEmpty()) throw new IllegalArgumentException("a batched run needs at least one session");
    for (Session s : list) Objects.requireNonNull(s, "sessions contains null");
    FoldCall.refuseIfUpdating(this, "beginning a run");
    List<NativeHandle<?>> locked = new ArrayList<>();
    locked.add(this);
    locked.addAll(list);
    return withPointers(locked, () -> Run.beginBatch(this, pointerWhileLocked(), list));
  }

  /**
   * The figures of the container's state arena (a container created with
   * {@link ContainerOptions.Builder#sessionCapacity(long)} or
   * {@link ContainerOptions.Builder#stateArenaOf(Container)}); they may be stale once another
   * thread creates or closes a session. Experimental.
   *
   * @return a snapshot
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when the container
   *     has no state arena
   * @throws IllegalStateException if the container has been closed
   * @since 0.3
   */
  public StateArenaStats stateArenaStats() {
    return withPointer(c -> {
      wharf_state_arena_stats s = new wharf_state_arena_stats();
      try {
        WharfNative.wharf_container_get_state_arena_stats(c, s);
        return new StateArenaStats(s.getNum_slots(), s.getNum_slots_used(), s.getNum_slots_free(), s.getBytes());
      } finally {
        s.delete();
      }
    });
  }

  @Override
  public String toString() {
    try {
      return describe() + "{generation " + generation() + "}";
    } catch (IllegalStateException closed) {
      return describe() + "{closed}";
    }
  }
}
