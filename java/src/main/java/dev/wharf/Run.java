// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A lease on one generation of a container, and on a {@link Session}'s state when it was
 * begun with one, for one execution ({@code wharf_run}): while it is open, nothing it can
 * read is freed or overwritten, whatever updates and swaps happen.
 *
 * <pre>{@code
 * try (Run run = container.beginRun()) {
 *   TensorView w = run.tensor("layers.0.weight");
 *   float first = w.asByteBuffer().asFloatBuffer().get(0);
 * }
 * }</pre>
 *
 * <p><b>Lifetime.</b> {@link #close()} ends the run ({@code wharf_run_end}): it records the
 * run's completion on its stream, after which Wharf may reclaim the generation. Close every
 * run, promptly: an open run keeps its generation's memory. A run that becomes unreachable
 * unclosed is ended by a {@link java.lang.ref.Cleaner}, which logs the leak (a backstop
 * only: until the garbage collector finds it, its generation stays pinned). Closing twice is a no-op and any
 * other call on a closed run throws {@link IllegalStateException}. A run keeps its
 * {@link Container} (and its session) reachable and alive, so they may be closed first.
 *
 * <p><b>Threads.</b> {@link #tensor(String)} and {@link #read(String, long, ByteBuffer)} may
 * be called from many threads at once; {@code close()} never waits: a call in progress on
 * another thread ends the run when it returns (and logs a failure to end it).
 */
public final class Run extends NativeHandle<SWIGTYPE_p_wharf_run> {
  private final Container container;
  private final Session session;
  private final List<Session> batch; // a batched run's sessions, in order; empty otherwise
  private final long generation;
  private final List<OffloadSlots> slots = new ArrayList<>(); // guarded by itself

  private Run(SWIGTYPE_p_wharf_run pointer, Container container, Session session, long generation) {
    super(pointer, WharfNative::wharf_run_end, // frees the handle even when it throws
        session == null ? Collections.singletonList(container) : Arrays.asList(container, session));
    this.container = container;
    this.session = session;
    this.batch = Collections.emptyList();
    this.generation = generation;
    nameForLeaks();
  }

  private Run(SWIGTYPE_p_wharf_run pointer, Container container, List<Session> batch, long generation) {
    super(pointer, WharfNative::wharf_run_end, parentsOf(container, batch));
    this.container = container;
    this.session = null;
    this.batch = batch;
    this.generation = generation;
    nameForLeaks();
  }

  private static List<NativeHandle<?>> parentsOf(Container container, List<Session> batch) {
    List<NativeHandle<?>> parents = new ArrayList<>();
    parents.add(container);
    parents.addAll(batch);
    return parents;
  }

  /**
   * Begins a batched run; call holding the locks of the container and of every session.
   * {@code batch} is unmodifiable.
   */
  static Run beginBatch(Container container, SWIGTYPE_p_wharf_container c, List<Session> batch) {
    SWIGTYPE_p_wharf_swig_session_list natives = WharfNative.wharf_swig_session_list_new();
    if (natives == null) throw new OutOfMemoryError("allocating the session list of a batched run");
    SWIGTYPE_p_wharf_run pointer;
    try {
      for (Session s : batch) {
        if (WharfNative.wharf_swig_session_list_add(natives, s.pointerWhileLocked()) == 0) {
          throw new OutOfMemoryError("adding " + s.describe() + " to the session list of a batched run");
        }
      }
      pointer = WharfNative.wharf_swig_run_begin_batch(c, natives);
    } finally {
      WharfNative.wharf_swig_session_list_free(natives);
    }
    try {
      return new Run(pointer, container, batch, WharfNative.wharf_run_generation(pointer));
    } catch (RuntimeException | Error e) {
      try {
        WharfNative.wharf_run_end(pointer);
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  /**
   * Begins a run; call holding the container's lock (and the session's, when there is one).
   * {@code session} and {@code s} are both null for a run without a session.
   */
  static Run begin(Container container, SWIGTYPE_p_wharf_container c, Session session, SWIGTYPE_p_wharf_session s) {
    SWIGTYPE_p_wharf_run pointer = WharfNative.wharf_swig_run_begin(c, s, 0);
    try {
      return new Run(pointer, container, session, WharfNative.wharf_run_generation(pointer));
    } catch (RuntimeException | Error e) {
      try {
        WharfNative.wharf_run_end(pointer);
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  @Override
  String describe() {
    return "Run of " + container.describe() + " (generation " + generation + ")";
  }

  /**
   * Ends the run. The run is closed (and its handle freed) even when this throws.
   *
   * @throws WharfException {@link WharfException.Code#DEVICE_ERROR} when recording the
   *     completion failed; the generation is then held until the container is freed
   */
  @Override
  public void close() {
    closeSlots(null); // they depend on this run
    super.close();
  }

  /**
   * The container this run reads (possibly closed).
   *
   * @return the container
   */
  public Container container() {
    return container;
  }

  /**
   * The session this run was begun with.
   *
   * @return the session (possibly closed), or null for a run without one and for a batched
   *     run (see {@link #sessions()})
   */
  public Session session() {
    return session;
  }

  /**
   * The run's sessions: those of a batched run ({@link Container#beginBatch(List)}) in the
   * order given, the one session of a run begun with one, else none. Experimental.
   *
   * @return an unmodifiable list (sessions possibly closed)
   * @since 0.3
   */
  public List<Session> sessions() {
    if (!batch.isEmpty()) return batch;
    return session == null ? Collections.emptyList() : Collections.singletonList(session);
  }

  /**
   * The number of sessions of the run as the library counts them
   * ({@code wharf_run_num_sessions}): N for a batched run, 1 for a run with a session, else
   * 0. Experimental.
   *
   * @return the number of sessions
   * @throws IllegalStateException if the run has been closed
   * @since 0.3
   */
  public long numSessions() {
    return withPointer(WharfNative::wharf_run_num_sessions);
  }

  /**
   * The slots of the run's sessions in their state arena: an {@link DType#I64} tensor
   * {@code [N]} in the order of {@link #sessions()} (one element for a run of one arena
   * session), device memory (host memory on the host backend), read-only, owned by this run
   * and written in its stream order ({@link TensorView#read(long, ByteBuffer)} reads it).
   * Experimental.
   *
   * @return the slot index tensor
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when the run's
   *     sessions hold no arena slot
   * @throws IllegalStateException if the run has been closed
   * @since 0.3
   */
  public TensorView slotIndices() {
    return withPointer(p -> {
      wharf_tensor_view view = new wharf_tensor_view();
      try {
        WharfNative.wharf_run_get_slot_indices(p, view);
        return TensorView.slotIndicesOf(this, view);
      } finally {
        view.delete();
      }
    });
  }

  /**
   * The id of the generation this run pinned.
   *
   * @return the generation id, as {@link Container#generation()} reported it when the run began
   * @throws IllegalStateException if the run has been closed
   */
  public long generation() {
    return withPointer(p -> generation);
  }

  /**
   * The CUDA stream the run's work goes on, as an address ({@code cudaStream_t}).
   *
   * @return the stream; 0 on the host backend
   * @throws IllegalStateException if the run has been closed
   */
  public long stream() {
    return withPointer(WharfNative::wharf_swig_run_stream);
  }

  /**
   * Resolves a constant in this run's generation, or else a state in its session: its dtype,
   * shape and storage address. The storage stays valid until this run is closed. A session
   * state's storage is the session's own buffer, which the run's kernels may write.
   *
   * @param fqn the constant's or state's name
   * @return the constant's view, owned by this run
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn}
   * @throws IllegalStateException if the run has been closed
   */
  public TensorView tensor(String fqn) {
    Objects.requireNonNull(fqn, "fqn");
    return withPointer(p -> {
      wharf_tensor_view view = new wharf_tensor_view();
      try {
        WharfNative.wharf_run_get_tensor(p, fqn, view);
        return TensorView.copyOf(this, fqn, view);
      } finally {
        view.delete();
      }
    });
  }

  /**
   * Copies bytes of a constant of this run's generation (or of a state of its session) into
   * a direct buffer: {@code dst.remaining()} bytes, starting at byte {@code offset} of the
   * constant, written
   * from {@code dst}'s position on, which then advances past them. Works whether the
   * constant is in device (CUDA) or host memory. It waits for the run's stream, so it is
   * meant for inspection and tests, not for the serving path.
   *
   * @param fqn the constant's or state's name
   * @param offset the first byte of the constant to copy
   * @param dst a direct, writable buffer
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} naming {@code fqn},
   *     {@link WharfException.Code#INVALID_ARGUMENT} for a range past the constant's bytes,
   *     {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalArgumentException if {@code dst} is not direct or {@code offset} is negative
   * @throws ReadOnlyBufferException if {@code dst} is read-only
   * @throws IllegalStateException if the run has been closed
   */
  public void read(String fqn, long offset, ByteBuffer dst) {
    Objects.requireNonNull(fqn, "fqn");
    Objects.requireNonNull(dst, "dst");
    if (!dst.isDirect()) {
      throw new IllegalArgumentException("reading '" + fqn + "': the buffer is not direct; use ByteBuffer.allocateDirect");
    }
    if (dst.isReadOnly()) throw new ReadOnlyBufferException();
    if (offset < 0) throw new IllegalArgumentException("reading '" + fqn + "': negative offset " + offset);
    int position = dst.position();
    int bytes = dst.remaining();
    try {
      withPointer(p -> {
        WharfNative.wharf_swig_run_read(p, fqn, offset,
            WharfNative.wharf_swig_direct_buffer_address(dst) + position, bytes);
        return null;
      });
    } finally {
      Reference.reachabilityFence(dst);
    }
    dst.position(position + bytes);
  }

  /** The body of {@link Model#run(Run, TensorView...)}, which documents it. */
  List<TensorView> runModel(Model model, TensorView... inputs) {
    Objects.requireNonNull(model, "model");
    List<TensorView> in = Arrays.asList(Objects.requireNonNull(inputs, "inputs").clone());
    List<NativeHandle<?>> locked = new ArrayList<>();
    locked.add(this);
    locked.add(model);
    for (int i = 0; i < in.size(); i++) {
      TensorView v = Objects.requireNonNull(in.get(i), "inputs contains null");
      if (!v.isContiguous()) {
        throw new IllegalArgumentException("input " + i + " (" + v + ") is not contiguous");
      }
      if (v.owner() != null) locked.add(v.owner());
    }
    int numOutputs = model.numOutputs();
    try {
      return withPointers(locked, () -> {
        SWIGTYPE_p_wharf_swig_view_list natives = WharfNative.wharf_swig_view_list_new(in.size());
        SWIGTYPE_p_wharf_swig_view_list outs = WharfNative.wharf_swig_view_list_new(numOutputs);
        try {
          if (natives == null || outs == null) throw new OutOfMemoryError("allocating the views of a model run");
          for (TensorView v : in) {
            if (WharfNative.wharf_swig_view_list_add(natives, v.address(), v.dtype().value(), v.deviceType().value(),
                v.deviceIndex(), v.shape()) == 0) {
              throw new IllegalStateException("the input list of a model run is full"); // sized above: never
            }
          }
          WharfNative.wharf_swig_model_run(model.pointerWhileLocked(), pointerWhileLocked(), natives, outs);
          List<TensorView> result = new ArrayList<>(numOutputs);
          for (int i = 0; i < numOutputs; i++) {
            result.add(TensorView.outputOf(this, i, WharfNative.wharf_swig_view_list_at(outs, i)));
          }
          return Collections.unmodifiableList(result);
        } finally {
          WharfNative.wharf_swig_view_list_free(natives);
          WharfNative.wharf_swig_view_list_free(outs);
        }
      });
    } finally {
      for (TensorView v : in) Reference.reachabilityFence(v.hostBuffer());
    }
  }

  /**
   * Begins offloading in this run (a run of the offloader's container): the copy stream
   * forks from the run's stream and the first prefetch-step offloaded layers are copied.
   * Experimental tier.
   *
   * @param offloader the offloader
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (a run of another
   *     container), {@link WharfException.Code#BUSY} (another open run holds the offloader),
   *     {@link WharfException.Code#FAILED_PRECONDITION} (this run already began),
   *     {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the run or the offloader has been closed
   * @since 0.3
   */
  public void beginOffload(Offloader offloader) {
    withOffloaderDo(offloader, o -> WharfNative.wharf_run_begin_offload(pointerWhileLocked(), o));
  }

  /**
   * Makes the run's stream wait (on the device) for a layer's copy and returns the slots of
   * its offloaded constants ({@link Offloader#layerConstants} order; none for a layer that
   * is not offloaded): read-only views of device memory (host memory on the host backend)
   * whose contents are this run's until {@link #markOffloadIssued} for the layer. Read them
   * from work on the run's stream ({@link TensorView#read} and {@link TensorView#toByteArray}
   * copy on it). They are closed when the layer is issued, offloading ends or the run is
   * closed (then they throw {@link IllegalStateException}). Experimental tier.
   *
   * @param offloader the offloader this run began
   * @param layer the layer, in increasing order
   * @return the layer's slots
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (layer out of
   *     range), {@link WharfException.Code#FAILED_PRECONDITION} (not begun; a layer out of
   *     order, or the previous offloaded layer not issued, named),
   *     {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the run or the offloader has been closed
   * @since 0.3
   */
  public List<TensorView> waitOffload(Offloader offloader, int layer) {
    if (layer < 0) throw new IllegalArgumentException("layer " + layer + " is negative");
    return withOffloader(offloader, o -> {
      SWIGTYPE_p_wharf_run p = pointerWhileLocked();
      List<String> names = offloader.layerConstants(layer);
      if (names.isEmpty()) {
        WharfNative.wharf_swig_run_wait_offload(p, o, layer);
        return Collections.<TensorView>emptyList();
      }
      List<TensorView> out = new ArrayList<>(names.size());
      OffloadSlots owner = null;
      wharf_tensor_view view = new wharf_tensor_view();
      try {
        for (int i = 0; i < names.size(); i++) {
          WharfNative.wharf_swig_run_wait_offload_view(p, o, layer, i, view);
          if (owner == null) {
            owner = new OffloadSlots(p, this, offloader, layer);
            synchronized (slots) {
              slots.add(owner);
            }
          }
          out.add(TensorView.slotOf(owner, names.get(i), view));
        }
      } finally {
        view.delete();
      }
      return Collections.unmodifiableList(out);
    });
  }

  /**
   * Records that the run's stream has been given all of a layer's work: its slot may be
   * refilled once the device gets there, and the next prefetch is issued. Experimental tier.
   *
   * @param offloader the offloader this run began
   * @param layer the layer waited for last
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (layer out of
   *     range), {@link WharfException.Code#FAILED_PRECONDITION} (not waited for first, or
   *     already issued), {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the run or the offloader has been closed
   * @since 0.3
   */
  public void markOffloadIssued(Offloader offloader, int layer) {
    if (layer < 0) throw new IllegalArgumentException("layer " + layer + " is negative");
    withOffloaderDo(offloader, o -> WharfNative.wharf_run_mark_offload_issued(pointerWhileLocked(), o, layer));
    closeSlots(offloader); // only the issued layer's are open: layers go in order
  }

  /** Closes the owners of the slot views handed out for {@code offloader} (all when null). */
  private void closeSlots(Offloader offloader) {
    List<OffloadSlots> closing = new ArrayList<>();
    synchronized (slots) {
      slots.removeIf(s -> {
        boolean match = offloader == null || s.offloader() == offloader;
        if (match) closing.add(s);
        return match;
      });
    }
    for (OffloadSlots s : closing) s.close();
  }

  /**
   * Ends offloading in this run: the run's stream joins the copy stream and the offloader is
   * free for the next run. Closing the run does it otherwise. Experimental tier.
   *
   * @param offloader the offloader this run began
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} (not begun),
   *     {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the run or the offloader has been closed
   * @since 0.3
   */
  public void endOffload(Offloader offloader) {
    closeSlots(offloader);
    withOffloaderDo(offloader, o -> WharfNative.wharf_run_end_offload(pointerWhileLocked(), o));
  }

  private <R> R withOffloader(Offloader offloader, java.util.function.Function<SWIGTYPE_p_wharf_offloader, R> op) {
    Objects.requireNonNull(offloader, "offloader");
    return withPointers(Arrays.asList(this, offloader), () -> op.apply(offloader.pointerWhileLocked()));
  }

  private void withOffloaderDo(Offloader offloader, java.util.function.Consumer<SWIGTYPE_p_wharf_offloader> op) {
    withOffloader(offloader, o -> {
      op.accept(o);
      return null;
    });
  }

  @Override
  public String toString() {
    return describe() + (isClosed() ? "{closed}" : "");
  }
}
