// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * One conversation's mutable state over shared weights ({@code wharf_session}): one buffer
 * per state FQN that its containers declare ({@link ContainerOptions.Builder#state}), one
 * buffer for an FQN that several of them declare (prefill and decode sharing a KV cache).
 *
 * <p>A session is named explicitly on every run ({@link Container#beginRun(Session)}), one run
 * at a time: a second run while one is open fails with {@link WharfException.Code#BUSY}, as do
 * {@link #reset()} and {@link #fork()} then. In a run, {@link Run#tensor(String)} and
 * {@link Run#read(String, long, java.nio.ByteBuffer)} resolve state FQNs to this session's
 * buffers; kernels write them through {@link TensorView#address()}. The state is allocated at
 * the first run (or at creation with {@link SessionOptions#allocateEagerly()}) and accounted
 * under {@link MemoryTag#STATE}.
 *
 * <pre>{@code
 * try (Session chat = Session.create(runtime, prefill, decode)) {
 *   try (Run run = prefill.beginRun(chat)) { ... }   // writes the KV cache
 *   try (Run run = decode.beginRun(chat)) { ... }    // the same KV cache
 *   try (Session branch = chat.fork()) { ... }       // a copy that diverges from here
 *   chat.reset();                                    // back to the initial values
 * }
 * }</pre>
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed session throws {@link IllegalStateException}. A session keeps its containers and
 * runtime reachable and alive, so they may be closed first (no new runs can begin on a closed
 * container, but the session can still be reset, forked and closed); a {@link Run} keeps its
 * session alive in turn. The state memory is returned after the device has finished the
 * session's last run (closing may wait for it).
 *
 * <p><b>Threads.</b> Different sessions are independent. Calls on one session from several
 * threads are safe; conflicting ones (a run, a reset, a fork of it at once) fail with
 * {@link WharfException.Code#BUSY} rather than wait.
 */
public final class Session extends NativeHandle<SWIGTYPE_p_wharf_session> {
  private final WharfRuntime runtime;
  private final List<Container> containers;
  private final String label; // what the session is over, for messages

  private Session(SWIGTYPE_p_wharf_session pointer, WharfRuntime runtime, List<Container> containers,
      List<? extends NativeHandle<?>> parents) {
    this(pointer, runtime, containers, parents,
        containers.stream().map(c -> "'" + c.name() + "'").collect(Collectors.joining(", ")));
  }

  private Session(SWIGTYPE_p_wharf_session pointer, WharfRuntime runtime, List<Container> containers,
      List<? extends NativeHandle<?>> parents, String label) {
    super(pointer, WharfNative::wharf_session_free, parents);
    this.runtime = runtime;
    this.containers = containers;
    this.label = label;
    nameForLeaks();
  }

  /**
   * Wraps a session over every method of a model package
   * ({@code wharf_model_package_create_session}); call holding the package's lock. The
   * native session keeps the methods' containers alive itself; the wrapper depends on the
   * runtime.
   */
  static Session ofPackage(SWIGTYPE_p_wharf_session pointer, ModelPackage modelPackage) {
    try {
      return new Session(pointer, modelPackage.runtime(), Collections.emptyList(),
          Collections.singletonList(modelPackage.runtime()), "the methods of " + modelPackage.describe());
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_session_free(pointer);
      throw e;
    }
  }

  /**
   * Creates a session with the default options over one or more containers.
   *
   * @param runtime the runtime of the containers
   * @param containers the containers whose runs the session serves (at least one)
   * @return a new session, owned by the caller
   * @throws WharfException as {@link #create(WharfRuntime, List, SessionOptions)}
   * @throws IllegalArgumentException if no container is given
   * @throws IllegalStateException if the runtime or a container has been closed
   */
  public static Session create(WharfRuntime runtime, Container... containers) {
    return create(runtime, Arrays.asList(Objects.requireNonNull(containers, "containers")),
        SessionOptions.defaults());
  }

  /**
   * Creates a session over one or more containers.
   *
   * @param runtime the runtime of the containers
   * @param options the state limit and whether to allocate now
   * @param containers the containers whose runs the session serves (at least one)
   * @return a new session, owned by the caller
   * @throws WharfException as {@link #create(WharfRuntime, List, SessionOptions)}
   * @throws IllegalArgumentException if no container is given
   * @throws IllegalStateException if the runtime or a container has been closed
   */
  public static Session create(WharfRuntime runtime, SessionOptions options, Container... containers) {
    return create(runtime, Arrays.asList(Objects.requireNonNull(containers, "containers")), options);
  }

  /**
   * Creates a session serving runs of {@code containers}. A state FQN declared by several of
   * them is one buffer, whose initial value is the first such container's.
   *
   * @param runtime the runtime of the containers
   * @param containers the containers whose runs the session serves (at least one)
   * @param options the state limit and whether to allocate now
   * @return a new session, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} when two containers
   *     declare one state FQN with different dtypes or shapes (naming both), or a container
   *     is not of {@code runtime}; {@link WharfException.Code#RESOURCE_EXHAUSTED} past
   *     {@link SessionOptions#maxStateBytes()} or a container's
   *     {@link ContainerOptions#maxSessionBytes()}; {@link WharfException.Code#OUT_OF_MEMORY}
   *     (eager allocation)
   * @throws IllegalArgumentException if no container is given
   * @throws IllegalStateException if the runtime or a container has been closed
   */
  public static Session create(WharfRuntime runtime, List<Container> containers, SessionOptions options) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(options, "options");
    List<Container> list = Collections.unmodifiableList(new ArrayList<>(Objects.requireNonNull(containers, "containers")));
    if (list.isEmpty()) throw new IllegalArgumentException("a session needs at least one container");
    for (Container c : list) {
      Objects.requireNonNull(c, "containers contains null");
      FoldCall.refuseIfUpdating(c, "creating a session over it");
    }
    List<NativeHandle<?>> parents = new ArrayList<>();
    parents.add(runtime);
    parents.addAll(list);
    return withPointers(parents, () -> {
      SWIGTYPE_p_wharf_runtime rt = runtime.pointerWhileLocked();
      SWIGTYPE_p_wharf_swig_container_list natives = WharfNative.wharf_swig_container_list_new();
      if (natives == null) throw new OutOfMemoryError("allocating the container list of a session");
      wharf_session_options o = new wharf_session_options();
      SWIGTYPE_p_wharf_session pointer;
      try {
        for (Container c : list) {
          if (WharfNative.wharf_swig_container_list_add(natives, c.pointerWhileLocked()) == 0) {
            throw new OutOfMemoryError("adding " + c.describe() + " to the container list of a session");
          }
        }
        o.setMax_state_bytes(options.maxStateBytes());
        o.setAllocate_eagerly(options.allocateEagerly() ? 1 : 0);
        pointer = WharfNative.wharf_swig_session_create(rt, natives, o);
      } finally {
        o.delete();
        WharfNative.wharf_swig_container_list_free(natives);
      }
      return adopt(pointer, runtime, list, parents);
    });
  }

  /** Wraps a new native session; call while the parents are known to be alive. */
  private static Session adopt(SWIGTYPE_p_wharf_session pointer, WharfRuntime runtime, List<Container> containers,
      List<? extends NativeHandle<?>> parents) {
    return adopt(pointer, runtime, containers, parents, null);
  }

  private static Session adopt(SWIGTYPE_p_wharf_session pointer, WharfRuntime runtime, List<Container> containers,
      List<? extends NativeHandle<?>> parents, String label) {
    try {
      return label == null ? new Session(pointer, runtime, containers, parents)
          : new Session(pointer, runtime, containers, parents, label);
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_session_free(pointer);
      throw e;
    }
  }

  @Override
  String describe() {
    return "Session over " + label;
  }

  /**
   * The runtime given at creation (possibly closed).
   *
   * @return the runtime
   */
  public WharfRuntime runtime() {
    return runtime;
  }

  /**
   * The containers whose runs this session serves, as given at creation (possibly closed).
   * Empty for a session of a {@link ModelPackage}, which serves the containers of the
   * package's methods.
   *
   * @return an unmodifiable list
   */
  public List<Container> containers() {
    return containers;
  }

  /**
   * Bytes of state this session holds, or will hold at its first run.
   *
   * @return bytes
   * @throws IllegalStateException if the session has been closed
   */
  public long stateBytes() {
    return withPointer(WharfNative::wharf_session_state_bytes);
  }

  /**
   * Restores every state to its initial value, ordered on the device after the session's
   * last run; the next run waits for it. Returns without waiting for the device.
   *
   * @throws WharfException {@link WharfException.Code#BUSY} while a run of this session is open
   * @throws IllegalStateException if the session has been closed
   */
  public void reset() {
    withPointer(s -> {
      WharfNative.wharf_session_reset(s);
      return null;
    });
  }

  /**
   * Creates a session over the same containers whose state is a copy of this one's, made on
   * the device after this session's last run (branching a conversation, beam search). The
   * two diverge from then on. Works while the containers or the runtime are closed.
   *
   * @return a new session, owned by the caller
   * @throws WharfException {@link WharfException.Code#BUSY} while a run of this session is
   *     open, {@link WharfException.Code#RESOURCE_EXHAUSTED} past a container's
   *     {@link ContainerOptions#maxSessionBytes()}, {@link WharfException.Code#OUT_OF_MEMORY}
   * @throws IllegalStateException if the session has been closed
   */
  public Session fork() {
    // This session is open and held for the call, and it is a dependent of every parent, so
    // their native objects are alive even when they have been closed: the fork may register
    // with them.
    return withPointer(s -> adopt(WharfNative.wharf_swig_session_fork(s), runtime, containers, parents(), label));
  }

  /**
   * The session's slot in its containers' state arena: fixed for its life, distinct among
   * the arena's live sessions, another session's after this one is closed. Experimental.
   *
   * @return the slot, or -1 when its containers have no state arena
   * @throws IllegalStateException if the session has been closed
   * @since 0.3
   */
  public long slot() {
    return withPointer(WharfNative::wharf_session_slot);
  }

  @Override
  public String toString() {
    try {
      return describe() + "{" + stateBytes() + " state bytes}";
    } catch (IllegalStateException closed) {
      return describe() + "{closed}";
    }
  }
}
