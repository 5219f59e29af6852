// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A model compiled by PyTorch's AOTInductor without libtorch, executed by Wharf
 * ({@code wharf_model}): its parameters are the constants of a {@link Container} Wharf
 * creates for it (by FQN), its mutated buffers (KV caches, recurrent state) are that
 * container's per-session states, and constants it folds from its parameters are recomputed
 * for every generation. Everything a container does applies: {@link Container#update},
 * {@link Container#swap()}, in-place updates, weight stores, {@link Session}s, budgets.
 *
 * <pre>{@code
 * try (Model model = Model.load(runtime, Path.of("decoder.so"), weights, ModelOptions.defaults());
 *      Session chat = Session.create(runtime, model.container());
 *      Run run = model.container().beginRun(chat)) {
 *   List<TensorView> outputs = model.run(run, tokens, positions);  // owned by the run
 *   outputs.get(0).read(0, hostBuffer);                                  // a copy, on the run's stream
 * }
 * }</pre>
 *
 * <p>Models run on the CUDA backend only: on the host backend {@link #load} fails with
 * {@link WharfException.Code#UNSUPPORTED}. Inputs may be host memory (copied to the device
 * by Wharf); outputs are device memory owned by the run, read with
 * {@link TensorView#read(long, java.nio.ByteBuffer)} (see
 * {@link #run(Run, TensorView...)}).
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed model throws {@link IllegalStateException}. {@link #container()} belongs to the
 * model: closing it does nothing, and it is closed with the model. Sessions and runs over the
 * container keep the model alive, so the model may be closed first. A model keeps its
 * {@link WharfRuntime} (and {@link WeightStore}) alive.
 *
 * <p><b>Threads.</b> Safe to use from many threads at once; concurrent runs execute on
 * separate instances of the compiled model.
 *
 * <p><b>Experimental</b>: models are in the experimental tier of the C API and may change
 * in any minor release.
 */
public final class Model extends NativeHandle<SWIGTYPE_p_wharf_model> {
  private final WharfRuntime runtime;
  private final WeightStore store;
  private final String path;
  private final List<String> inputNames;
  private final int numOutputs;
  private Container container; // set once, right after construction

  private Model(SWIGTYPE_p_wharf_model pointer, WharfRuntime runtime, WeightStore store, String path) {
    this(pointer, runtime, store, path,
        store == null ? Collections.singletonList(runtime) : Arrays.asList(runtime, store));
  }

  private Model(SWIGTYPE_p_wharf_model pointer, WharfRuntime runtime, WeightStore store, String path,
      List<? extends NativeHandle<?>> parents) {
    super(pointer, WharfNative::wharf_model_free, parents);
    this.runtime = runtime;
    this.store = store;
    this.path = path;
    List<String> names = new ArrayList<>();
    int n = Math.toIntExact(WharfNative.wharf_model_num_inputs(pointer));
    for (int i = 0; i < n; i++) names.add(WharfNative.wharf_model_input_name(pointer, i));
    this.inputNames = Collections.unmodifiableList(names);
    this.numOutputs = Math.toIntExact(WharfNative.wharf_model_num_outputs(pointer));
  }

  /**
   * Loads a compiled model with the default options.
   *
   * @param runtime a CUDA runtime
   * @param soPath the compiled model ({@code .so})
   * @param weights its parameters by original FQN (and mutated buffers' shapes and initial
   *     values); read during the call only
   * @return a new model, ready to run, owned by the caller
   * @throws WharfException as {@link #load(WharfRuntime, Path, ConstantMap, ModelOptions)}
   * @throws IllegalStateException if the runtime or the map has been closed
   */
  public static Model load(WharfRuntime runtime, Path soPath, ConstantMap weights) {
    return load(runtime, soPath, weights, ModelOptions.defaults());
  }

  /**
   * Loads the compiled model at {@code soPath} with {@code weights}: every parameter the
   * model declares must be in {@code weights} by original FQN with the model's dtype and
   * byte size (its shape is taken from there); a mutated buffer found in {@code weights}
   * gives the state's shape and initial value (absent: a 1-D zero state of the buffer's
   * size). The weights are copied in and made active: the model is ready to run.
   *
   * @param runtime a CUDA runtime
   * @param soPath the compiled model ({@code .so}), on the default file system
   * @param weights the parameters; read during the call only
   * @param options name, store, session budget, shim library
   * @return a new model, owned by the caller
   * @throws WharfException {@link WharfException.Code#UNSUPPORTED} on the host backend (the
   *     message names CUDA), when the shim library is missing, when the process already has
   *     libtorch's {@code aoti_torch_*}, or for a shim function Wharf lacks (named);
   *     {@link WharfException.Code#INVALID_ARGUMENT} for a file that is not an AOTInductor
   *     model or a weight of the wrong dtype or size (named);
   *     {@link WharfException.Code#NOT_FOUND} for a parameter missing from {@code weights}
   *     (named); {@link WharfException.Code#OUT_OF_MEMORY}. Nothing is left behind.
   * @throws IllegalArgumentException if a path is not on the default file system
   * @throws IllegalStateException if the runtime, the store or the map has been closed
   */
  public static Model load(WharfRuntime runtime, Path soPath, ConstantMap weights, ModelOptions options) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(weights, "weights");
    Objects.requireNonNull(options, "options");
    String file = ConstantMap.nativePath(soPath);
    String shim = options.shimPath() == null ? null : ConstantMap.nativePath(options.shimPath());
    WeightStore store = options.store();
    if (store != null) FoldCall.refuseIfUpdating(store, "loading a model into it");
    List<NativeHandle<?>> parents = new ArrayList<>();
    parents.add(runtime);
    if (store != null) parents.add(store);
    parents.add(weights);
    return withPointers(parents, () -> {
      ProgressCall progress = ProgressCall.of(options.progress(), false);
      SWIGTYPE_p_wharf_offloader_options offload = options.offload() == null ? null : options.offload().toNative();
      SWIGTYPE_p_wharf_model pointer;
      try {
        pointer = progress.around(() -> WharfNative.wharf_swig_model_load_progress(
            runtime.pointerWhileLocked(), file, weights.pointerWhileLocked(), options.name(),
            store == null ? null : store.pointerWhileLocked(), options.maxSessionBytes(), shim, offload,
            options.sessionCapacity(), progress));
      } finally {
        WharfNative.wharf_swig_offloader_options_free(offload);
      }
      Model model;
      try {
        model = new Model(pointer, runtime, store, file);
      } catch (RuntimeException | Error e) {
        WharfNative.wharf_model_free(pointer);
        throw e;
      }
      return model.withContainer();
    });
  }

  /** Sets the model's container: borrowed from the native model, a dependent of this handle. */
  private Model withContainer() {
    container = withPointer(p -> Container.ofModel(WharfNative.wharf_model_container(p), this));
    return this;
  }

  /**
   * Wraps a method of a model package ({@code wharf_model_package_get_method}: a new
   * reference this model owns); call holding the package's lock. The model depends on the
   * package's runtime only: the native model keeps the package's store alive itself.
   */
  static Model ofPackage(SWIGTYPE_p_wharf_model pointer, ModelPackage modelPackage, String method) {
    Model model;
    try {
      model = new Model(pointer, modelPackage.runtime(), modelPackage.store(),
          modelPackage.describe() + " method '" + method + "'", Collections.singletonList(modelPackage.runtime()));
    } catch (RuntimeException | Error e) {
      WharfNative.wharf_model_free(pointer);
      throw e;
    }
    return model.withContainer();
  }

  @Override
  String describe() {
    return "Model " + path;
  }

  /**
   * Closes the model and its {@link #container()}. The native model is freed once the
   * sessions and runs over its container are closed too.
   */
  @Override
  public void close() {
    if (isClosed()) return;
    try {
      container.closeForModel();
    } finally {
      super.close();
    }
  }

  /**
   * Runs this model over a run's generation and session, on the run's stream, and returns
   * when the work is enqueued. The run must be of this model's container, begun with the
   * session whose state (KV caches) the model reads and writes.
   *
   * <p>{@code inputs} are the forward's inputs in order ({@link Model#inputNames()}),
   * contiguous: host memory ({@link TensorView#ofHost}), which Wharf copies to the device on
   * the run's stream (the buffer may be reused once this returns), or device memory of the
   * runtime's device ({@link TensorView#ofDevice}, or a run's tensor), read on the run's
   * stream (write it on that stream, {@link Run#stream()}, or finish writing it before the call).
   *
   * <p>The outputs are device tensors owned by the run: valid until it is closed, then
   * freed (ordered on its stream). Copy them to the host with
   * {@link TensorView#read(long, ByteBuffer)} or {@link TensorView#toByteArray()} (ordered
   * after the model on the run's stream), or use them from CUDA code through
   * {@link TensorView#address()}, before closing the run; once the run is closed, their
   * views throw {@link IllegalStateException} instead of reading freed memory.
   *
   * @param run a run of this model's container
   * @param inputs the inputs, as many as {@link Model#numInputs()}
   * @return the outputs, {@link Model#numOutputs()} of them, in order (names "output 0", ...)
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} for a run of another
   *     container, a wrong input count or an unsupported dtype;
   *     {@link WharfException.Code#INTERNAL} when the model fails (the message says why)
   * @throws IllegalArgumentException for a non-contiguous input
   * @throws IllegalStateException if the run, the model, or the run or map an input belongs
   *     to has been closed
   */
  public List<TensorView> run(Run run, TensorView... inputs) {
    return Objects.requireNonNull(run, "run").runModel(this, inputs);
  }

  /**
   * The model's container: its parameters as constants (update and swap them through it),
   * its state declarations (create {@link Session}s over it), and its runs
   * ({@link Container#beginRun(Session)}, then {@link #run(Run, TensorView...)}).
   * It belongs to the model: closing it does nothing.
   *
   * @return the container (the same object every time)
   */
  public Container container() {
    return container;
  }

  /**
   * The runtime the model was loaded on (possibly closed).
   *
   * @return the runtime
   */
  public WharfRuntime runtime() {
    return runtime;
  }

  /**
   * The weight store the model's parameters are shared through (possibly closed).
   *
   * @return the store, or null for none
   */
  public WeightStore store() {
    return store;
  }

  /**
   * The number of inputs of the model's forward.
   *
   * @return the count
   */
  public int numInputs() {
    return inputNames.size();
  }

  /**
   * The names of the forward's inputs, in order.
   *
   * @return an unmodifiable list
   */
  public List<String> inputNames() {
    return inputNames;
  }

  /**
   * The number of outputs of the model's forward.
   *
   * @return the count
   */
  public int numOutputs() {
    return numOutputs;
  }

  /**
   * Makes the model's runs replay CUDA graphs ({@code wharf_model_enable_graphs}; see
   * docs/decisions.md, "CUDA graphs"): from this call on, {@link #run(Run, TensorView...)}
   * captures a graph the first time it sees a shape of the inputs and replays it for every
   * later run of that shape, re-pointed (never recaptured) after a swap, an update or for
   * another session. Outputs of a replayed run are the graph's static buffers, owned by the
   * run like every output. Whatever cannot be captured runs eagerly and says why in
   * {@link #graphStats()}. With buckets ({@link GraphOptions.Builder#buckets}, or the default
   * set of a package method's dimension) runs are padded to the smallest bucket that fits.
   * A model with offloaded layers replays too (its layers' copies are graph nodes that follow
   * swaps); a capture finding its offloader held by another run is put off.
   *
   * @param options the bucket count, pool ceiling, concurrent runs and buckets
   * @throws WharfException {@link WharfException.Code#UNSUPPORTED} (a model or shim library
   *     without the entry points capture needs, a CUDA driver older than 12.4; named),
   *     {@link WharfException.Code#FAILED_PRECONDITION} (graphs already enabled), {@link WharfException.Code#INVALID_ARGUMENT} (a bucket
   *     dimension the model does not declare, a size &lt; 1, past its max or given twice,
   *     sizes with exact shapes; named)
   * @throws IllegalStateException if the model has been closed
   * @since 0.3
   */
  public void enableGraphs(GraphOptions options) {
    Objects.requireNonNull(options, "options");
    withPointer(m -> {
      WharfNative.wharf_swig_model_enable_graphs(m, options.maxBuckets(), options.maxPoolBytes(),
          options.maxConcurrentRuns(), options.bucketDim(), options.bucketSizes(), options.exactShapes() ? 1 : 0);
      return null;
    });
  }

  /**
   * The statistics of the model's CUDA graphs.
   *
   * @return a snapshot
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when graphs are not
   *     enabled
   * @throws IllegalStateException if the model has been closed
   * @since 0.3
   */
  public GraphStats graphStats() {
    return withPointer(m -> {
      wharf_graph_stats s = new wharf_graph_stats();
      try {
        WharfNative.wharf_model_get_graph_stats(m, s);
        return GraphStats.of(s);
      } finally {
        s.delete();
      }
    });
  }

  /**
   * Graph {@code index} of the model, in capture order (0 ..
   * {@link GraphStats#numBuckets()} - 1).
   *
   * @param index the graph's index
   * @return a snapshot
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} when graphs are not
   *     enabled, {@link WharfException.Code#INVALID_ARGUMENT} for an index past the last graph
   * @throws IllegalArgumentException if {@code index} is negative
   * @throws IllegalStateException if the model has been closed
   * @since 0.3
   */
  public GraphBucket graphBucket(int index) {
    if (index < 0) throw new IllegalArgumentException("graph index is negative: " + index);
    return withPointer(m -> {
      wharf_graph_bucket_info b = new wharf_graph_bucket_info();
      try {
        WharfNative.wharf_model_get_graph_bucket(m, index, b);
        return GraphBucket.of(b);
      } finally {
        b.delete();
      }
    });
  }

  /**
   * The offloader of a model loaded with {@link ModelOptions.Builder#offload} (a new handle:
   * close it; the model keeps its own), or null for a model loaded without. The model passes
   * its offload points itself ({@link #run}): use it for {@link Offloader#budget()} and the
   * layer queries, not for {@link Run#beginOffload}.
   *
   * @return the offloader, or null
   * @throws IllegalStateException if the model has been closed
   * @since 0.3
   */
  public Offloader offloader() {
    return withPointer(p -> {
      SWIGTYPE_p_wharf_offloader off = WharfNative.wharf_swig_model_get_offloader(p);
      return off == null ? null : Offloader.adopt(off, this, "Offloader of " + describe());
    });
  }

  @Override
  public String toString() {
    return describe() + "{" + inputNames + " -> " + numOutputs + " outputs" + (isClosed() ? ", closed" : "") + "}";
  }
}
