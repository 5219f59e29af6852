// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Wharf model package ({@code docs/model-package.md}: the directory {@code tools/export}
 * writes from a Hugging Face checkpoint, with a manifest, the compiled methods and the
 * weights by the checkpoint's FQNs) loaded in one call ({@code wharf_model_package}): one
 * {@link WeightStore} holding the weights once, one {@link Model} per method (prefill,
 * decode, ...) over it, and the per-conversation state declared from the manifest.
 *
 * <pre>{@code
 * try (ModelPackage pkg = ModelPackage.load(runtime, Path.of("llama.wharf"));
 *      Model prefill = pkg.method("prefill");
 *      Model decode = pkg.method("decode");
 *      Session chat = pkg.createSession()) {            // one KV cache for both methods
 *   try (Run run = prefill.container().beginRun(chat)) {
 *     List<TensorView> logits = prefill.run(run, inputIds, cachePosition);
 *   }
 *   pkg.store().updateFromFile(Path.of("finetune.safetensors"));  // every method at once
 *   pkg.store().swap();
 * }
 * }</pre>
 *
 * <p>Models run on the CUDA backend only: on the host backend {@link #load} checks the whole
 * package, then fails with {@link WharfException.Code#UNSUPPORTED} at the first method,
 * naming the package and the method.
 *
 * <p><b>Lifetime.</b> Close it when done; closing twice is a no-op and any other call on a
 * closed package throws {@link IllegalStateException}. {@link #store()} belongs to the
 * package: closing it does nothing, and it is closed with the package. The models
 * ({@link #method}) and sessions ({@link #createSession()}) taken from it are handles of their
 * own, which the caller closes; they stay valid after the package is closed. A package keeps
 * its {@link WharfRuntime} alive.
 *
 * <p><b>Threads.</b> Immutable once loaded, and safe to use from many threads at once.
 *
 * <p><b>Experimental</b>: model packages are in the experimental tier of the C API and may
 * change in any minor release.
 *
 * @since 0.3
 */
public final class ModelPackage extends NativeHandle<SWIGTYPE_p_wharf_model_package> {
  private final WharfRuntime runtime;
  private final String dir;
  private final Manifest manifest;
  private WeightStore store; // set once, right after construction

  /** What the package's manifest says, read once at load (the package is immutable). */
  private static final class Manifest {
    final String name;
    final long maxSeqLen;
    final Map<String, List<TensorSpec>> inputs = new LinkedHashMap<>();
    final Map<String, List<TensorSpec>> outputs = new LinkedHashMap<>();

    Manifest(SWIGTYPE_p_wharf_model_package p) {
      name = WharfNative.wharf_model_package_name(p);
      maxSeqLen = WharfNative.wharf_model_package_max_seq_len(p);
      long n = WharfNative.wharf_model_package_num_methods(p);
      for (long m = 0; m < n; m++) {
        String method = WharfNative.wharf_model_package_method_name(p, m);
        inputs.put(method, specs(p, m, true));
        outputs.put(method, specs(p, m, false));
      }
    }

    private static List<TensorSpec> specs(SWIGTYPE_p_wharf_model_package p, long method, boolean input) {
      int in = input ? 1 : 0;
      long n = input ? WharfNative.wharf_model_package_num_method_inputs(p, method)
          : WharfNative.wharf_model_package_num_method_outputs(p, method);
      List<TensorSpec> specs = new ArrayList<>();
      for (long i = 0; i < n; i++) {
        int ndim = WharfNative.wharf_swig_model_package_tensor_ndim(p, in, method, i);
        List<TensorSpec.Dim> dims = new ArrayList<>(ndim);
        for (int d = 0; d < ndim; d++) {
          dims.add(new TensorSpec.Dim(WharfNative.wharf_swig_model_package_dim_name(p, in, method, i, d),
              WharfNative.wharf_swig_model_package_dim_size(p, in, method, i, d),
              WharfNative.wharf_swig_model_package_dim_min(p, in, method, i, d),
              WharfNative.wharf_swig_model_package_dim_max(p, in, method, i, d)));
        }
        specs.add(new TensorSpec(WharfNative.wharf_swig_model_package_tensor_name(p, in, method, i),
            DType.fromValue(WharfNative.wharf_swig_model_package_tensor_dtype(p, in, method, i)), dims));
      }
      return Collections.unmodifiableList(specs);
    }
  }

  private ModelPackage(SWIGTYPE_p_wharf_model_package pointer, WharfRuntime runtime, String dir, Manifest manifest) {
    super(pointer, WharfNative::wharf_model_package_free, runtime);
    this.runtime = runtime;
    this.dir = dir;
    this.manifest = manifest;
    nameForLeaks();
  }

  /**
   * Loads a model package with the default options.
   *
   * @param runtime a CUDA runtime
   * @param dir the package's directory
   * @return a new package, owned by the caller
   * @throws WharfException as {@link #load(WharfRuntime, Path, ModelPackageOptions)}
   * @throws IllegalArgumentException if the path is not on the default file system
   * @throws IllegalStateException if the runtime has been closed
   */
  public static ModelPackage load(WharfRuntime runtime, Path dir) {
    return load(runtime, dir, ModelPackageOptions.defaults());
  }

  /**
   * Loads the model package in directory {@code dir}. The manifest is checked whole, and
   * every file it names against it, before the device is touched; then the weights are read
   * once into the package's weight store and every method is loaded as a model over it,
   * with the manifest's state declarations.
   *
   * @param runtime a CUDA runtime
   * @param dir the package's directory, on the default file system
   * @param options shim library, session budget, progress listener
   * @return a new package, owned by the caller
   * @throws WharfException each naming the package, the file and the field at fault:
   *     {@link WharfException.Code#NOT_FOUND} (no such directory, no {@code manifest.json},
   *     a file the manifest names is missing), {@link WharfException.Code#INVALID_ARGUMENT} (a
   *     malformed manifest, a path leaving the package, a weight file whose tensors differ
   *     from the manifest's, a method that disagrees with it),
   *     {@link WharfException.Code#UNSUPPORTED} (a {@code format_version} newer than the
   *     library reads; the host backend, at the first method; a shim function a method needs
   *     that Wharf lacks, named), {@link WharfException.Code#CANCELLED} (by the listener or an
   *     interrupt), {@link WharfException.Code#DATA_CORRUPT},
   *     {@link WharfException.Code#IO_ERROR}, {@link WharfException.Code#OUT_OF_MEMORY}.
   *     Nothing is left behind.
   * @throws IllegalArgumentException if a path is not on the default file system
   * @throws IllegalStateException if the runtime has been closed
   */
  public static ModelPackage load(WharfRuntime runtime, Path dir, ModelPackageOptions options) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(options, "options");
    String path = ConstantMap.nativePath(dir);
    String shim = options.shimPath() == null ? null : ConstantMap.nativePath(options.shimPath());
    return runtime.withPointer(rt -> {
      ProgressCall progress = ProgressCall.of(options.progress(), false);
      SWIGTYPE_p_wharf_model_package pointer = progress.around(() -> WharfNative.wharf_swig_model_package_load_progress(
          rt, path, shim, options.maxSessionBytes(), options.sessionCapacity(), progress));
      ModelPackage pkg;
      try {
        pkg = new ModelPackage(pointer, runtime, path, new Manifest(pointer));
      } catch (RuntimeException | Error e) {
        WharfNative.wharf_model_package_free(pointer);
        throw e;
      }
      // The package's store: borrowed from the native package, a dependent of this handle.
      pkg.store = pkg.withPointer(p -> WeightStore.ofPackage(WharfNative.wharf_model_package_store(p), pkg));
      return pkg;
    });
  }

  @Override
  String describe() {
    return "ModelPackage '" + manifest.name + "' (" + dir + ")";
  }

  /**
   * Closes the package and its {@link #store()}. Models and sessions taken from it stay
   * valid until they are closed.
   */
  @Override
  public void close() {
    if (isClosed()) return;
    try {
      if (store != null) store.closeForPackage();
    } finally {
      super.close();
    }
  }

  /**
   * The runtime the package was loaded on (possibly closed).
   *
   * @return the runtime
   */
  public WharfRuntime runtime() {
    return runtime;
  }

  /**
   * The manifest's {@code name}; each method's container is named {@code <name>/<method>}.
   *
   * @return the name
   */
  public String name() {
    return manifest.name;
  }

  /**
   * The manifest's {@code max_seq_len}, the KV cache's capacity (positions 0 ..
   * maxSeqLen - 1).
   *
   * @return the capacity, or 0 when the manifest gives none
   */
  public long maxSeqLen() {
    return manifest.maxSeqLen;
  }

  /**
   * The methods' names, in the manifest's order.
   *
   * @return an unmodifiable list
   */
  public List<String> methodNames() {
    return Collections.unmodifiableList(new ArrayList<>(manifest.inputs.keySet()));
  }

  /**
   * The inputs of a method as the manifest declares them, in the compiled forward's order.
   *
   * @param method the method's name
   * @return an unmodifiable list
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} for no such method
   */
  public List<TensorSpec> methodInputs(String method) {
    return specs(manifest.inputs, method);
  }

  /**
   * The outputs of a method as the manifest declares them.
   *
   * @param method the method's name
   * @return an unmodifiable list
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} for no such method
   */
  public List<TensorSpec> methodOutputs(String method) {
    return specs(manifest.outputs, method);
  }

  private List<TensorSpec> specs(Map<String, List<TensorSpec>> specs, String method) {
    Objects.requireNonNull(method, "method");
    List<TensorSpec> list = specs.get(method);
    if (list == null) {
      throw new WharfException(WharfException.Code.NOT_FOUND, "model package '" + manifest.name + "' has no method '"
          + method + "' (its methods: " + String.join(", ", manifest.inputs.keySet()) + ")");
    }
    return list;
  }

  /**
   * A method as a {@link Model} of its own ({@code wharf_model_package_get_method}: a new
   * reference): close it when done; it stays valid after the package is closed. Begin its
   * runs on its {@link Model#container()} with a session from {@link #createSession()}.
   *
   * @param method the method's name ("prefill", "decode")
   * @return a new model, owned by the caller
   * @throws WharfException {@link WharfException.Code#NOT_FOUND} for no such method (the
   *     message lists the package's)
   * @throws IllegalStateException if the package has been closed
   */
  public Model method(String method) {
    Objects.requireNonNull(method, "method");
    return withPointer(p -> Model.ofPackage(WharfNative.wharf_swig_model_package_get_method(p, method), this, method));
  }

  /**
   * A session over every method with the default options: see
   * {@link #createSession(SessionOptions)}.
   *
   * @return a new session, owned by the caller
   * @throws WharfException as {@link #createSession(SessionOptions)}
   * @throws IllegalStateException if the package has been closed
   */
  public Session createSession() {
    return createSession(SessionOptions.defaults());
  }

  /**
   * A session over every method's container ({@code wharf_model_package_create_session}):
   * one buffer per declared state, shared by all methods, so a conversation's prefill and
   * decode runs read and write the same KV cache. It stays valid after the package is
   * closed; its {@link Session#containers()} is empty.
   *
   * @param options the state limit and whether to allocate now
   * @return a new session, owned by the caller
   * @throws WharfException as {@link Session#create(WharfRuntime, List, SessionOptions)}
   * @throws IllegalStateException if the package has been closed
   */
  public Session createSession(SessionOptions options) {
    Objects.requireNonNull(options, "options");
    return withPointer(p -> {
      wharf_session_options o = new wharf_session_options();
      SWIGTYPE_p_wharf_session pointer;
      try {
        o.setMax_state_bytes(options.maxStateBytes());
        o.setAllocate_eagerly(options.allocateEagerly() ? 1 : 0);
        pointer = WharfNative.wharf_swig_model_package_create_session(p, o);
      } finally {
        o.delete();
      }
      return Session.ofPackage(pointer, this);
    });
  }

  /**
   * The package's weight store: its updates reach every method
   * ({@link WeightStore#updateFromFile(Path)} with a new checkpoint, or some of its tensors,
   * by the checkpoint's FQNs, then {@link WeightStore#swap()}). It belongs to the package:
   * closing it does nothing; it is closed with the package.
   *
   * @return the store (the same object every time)
   */
  public WeightStore store() {
    return store;
  }

  @Override
  public String toString() {
    return describe() + "{methods " + manifest.inputs.keySet() + ", maxSeqLen " + manifest.maxSeqLen
        + (isClosed() ? ", closed" : "") + "}";
  }
}
