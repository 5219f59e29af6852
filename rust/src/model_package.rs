// SPDX-License-Identifier: Apache-2.0
//! [`ModelPackage`] (experimental tier): a Wharf model package (`docs/model-package.md`)
//! loaded in one call: its weights once into a weight store, every method as a [`Model`]
//! over it, its state declared from the manifest.

use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::constant_map::path_cstring;
use crate::error::{Code, Error, Result};
use crate::model::Model;
use crate::progress::{with_progress, Progress};
use crate::runtime::Runtime;
use crate::session::{Session, SessionOptions};
use crate::store::WeightStore;
use crate::sys;
use crate::types::{cstring, DType};

/// Options for [`ModelPackage::load`] (`wharf_model_package_options`).
/// `ModelPackageOptions::new()` (or `default()`) sets no session budget and finds the shim
/// library as the library does (`$WHARF_AOTI_SHIM`, else next to `libwharf`).
#[derive(Debug, Clone, Default)]
pub struct ModelPackageOptions {
    shim_path: Option<PathBuf>,
    max_session_bytes: u64,
    session_capacity: u32,
}

impl ModelPackageOptions {
    /// The defaults.
    pub fn new() -> ModelPackageOptions {
        ModelPackageOptions::default()
    }

    /// Where `libwharf_aoti_shim.so` (the `aoti_torch_*` functions compiled methods
    /// import) is. Default: `$WHARF_AOTI_SHIM`, else next to `libwharf`.
    pub fn shim_path(mut self, path: impl Into<PathBuf>) -> ModelPackageOptions {
        self.shim_path = Some(path.into());
        self
    }

    /// A budget in bytes for the state of all live sessions over each method's container
    /// (0, the default, means none); see
    /// [`ContainerOptions::max_session_bytes`](crate::ContainerOptions::max_session_bytes).
    pub fn max_session_bytes(mut self, bytes: u64) -> ModelPackageOptions {
        self.max_session_bytes = bytes;
        self
    }

    /// `> 0`: one state arena for up to this many sessions holds the manifest's states,
    /// shared by every method (a session of the package takes one slot); see
    /// [`ContainerOptions::session_capacity`](crate::ContainerOptions::session_capacity).
    /// 0 (the default): per-session buffers.
    pub fn session_capacity(mut self, sessions: u32) -> ModelPackageOptions {
        self.session_capacity = sessions;
        self
    }

    /// Builds the C options and passes them to `f`, which must not keep them past its
    /// return.
    fn with_c<R>(&self, f: impl FnOnce(&sys::wharf_model_package_options) -> R) -> Result<R> {
        let shim = self.shim_path.as_deref().map(path_cstring).transpose()?;
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_model_package_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_model_package_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_model_package_options>(),
            )
        };
        o.shim_path = shim.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
        o.max_session_bytes = self.max_session_bytes;
        o.session_capacity = self.session_capacity;
        // `shim` outlives the call.
        Ok(f(&o))
    }
}

/// One dimension of a [`TensorSpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(i64),
    /// A symbolic dimension (a sequence length): its name in the method's `dims`, its
    /// smallest size and its largest (`None`: no bound given).
    Symbolic {
        /// The dimension's name ("T").
        name: String,
        /// The smallest size.
        min: i64,
        /// The largest size, if the manifest bounds it.
        max: Option<i64>,
    },
}

/// One input or output of a package's method, as its manifest declares it
/// (`wharf_model_package_tensor_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorSpec {
    /// Its name ("input_ids").
    pub name: String,
    /// Its dtype.
    pub dtype: DType,
    /// Its dimensions, fixed or symbolic.
    pub dims: Vec<Dim>,
}

impl TensorSpec {
    /// The shape with -1 where a dimension is symbolic.
    pub fn shape(&self) -> Vec<i64> {
        self.dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => *n,
                Dim::Symbolic { .. } => -1,
            })
            .collect()
    }

    /// Copies a tensor info the package filled (its arrays owned by the package).
    ///
    /// # Safety
    ///
    /// `info` was filled by the library from a package that is still alive.
    unsafe fn from_c(info: &sys::wharf_model_package_tensor_info) -> Result<TensorSpec> {
        let dtype = DType::from_raw(info.dtype).ok_or_else(|| {
            Error::new(
                Code::Internal,
                format!("a package tensor with unknown dtype {}", info.dtype),
            )
        })?;
        let n = usize::try_from(info.ndim).unwrap_or(0);
        let mut dims = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: the library's contract: `ndim` entries in each array, owned by the
            // live package.
            let (size, lo, hi, name) = unsafe {
                (
                    *info.shape.add(i),
                    *info.dim_min.add(i),
                    *info.dim_max.add(i),
                    *info.dim_names.add(i),
                )
            };
            dims.push(if name.is_null() {
                Dim::Fixed(size)
            } else {
                Dim::Symbolic {
                    // SAFETY: a NUL-terminated string owned by the package.
                    name: unsafe { c_string(name) },
                    min: lo,
                    max: (hi >= 0).then_some(hi),
                }
            });
        }
        Ok(TensorSpec {
            // SAFETY: as above.
            name: unsafe { c_string(info.name) },
            dtype,
            dims,
        })
    }
}

/// A copy of a C string the library owns ("" for NULL).
///
/// # Safety
///
/// `p` is NULL or a live NUL-terminated string.
unsafe fn c_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// One method's manifest entry, read once at load (a package is immutable).
#[derive(Debug, Clone)]
struct MethodSpec {
    name: String,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

/// A Wharf model package (`docs/model-package.md`: what `tools/export` writes from a
/// Hugging Face checkpoint) loaded in one call (`wharf_model_package`, experimental tier):
/// one [`WeightStore`] holding the weights once, one [`Model`] per method (prefill,
/// decode, ...) over it, and the per-conversation state declared from the manifest.
///
/// [`method`](Self::method) gives a method as a [`Model`] of its own (it stays valid after
/// the package is dropped); [`new_session`](Self::new_session) a [`Session`] over every
/// method, so a conversation's prefill and decode runs share its KV cache;
/// [`store`](Self::store) the store whose updates reach every method at once. The store is
/// borrowed from the package, so it cannot outlive it:
///
/// ```compile_fail,E0505
/// # fn f(package: wharf::ModelPackage) {
/// let store = package.store();
/// drop(package); // error: `package` is borrowed by `store`
/// store.swap().ok();
/// # }
/// ```
///
/// A package is immutable and `Send` and `Sync`: every package function of the C API is
/// safe to call from many threads at once.
///
/// Loading it on the host backend checks the whole package, then fails with
/// [`Code::Unsupported`] at the first method: compiled methods run on CUDA.
///
/// A conversation (the README's example: `tests/model_package.rs` checks that the README
/// shows this code; it needs a GPU and a package, so it is compiled but not run):
///
/// ```no_run
/// use wharf::{Backend, Model, ModelPackage, ModelPackageOptions, Runtime, RuntimeOptions};
/// use wharf::{Session, SessionOptions, TensorView, UpdateOptions};
///
/// fn main() -> wharf::Result<()> {
///     let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Cuda))?;
///     let dir = std::path::Path::new("llama.wharf");
///
///     // 1. The package in one call: the weights once, every method over them, the state
///     //    (KV caches) declared with its shapes and initial values.
///     // SAFETY: a package tools/export wrote (trusted native code), given token ids below
///     // its vocabulary size and positions below its max_seq_len.
///     let package = unsafe { ModelPackage::load(&rt, dir, &ModelPackageOptions::new())? };
///     let prefill = package.method("prefill")?;
///     let decode = package.method("decode")?;
///
///     // 2. A conversation: one session over every method (they share its KV cache).
///     let mut chat = package.new_session(&SessionOptions::new())?;
///
///     // One run of `model` on `tokens` at positions pos, pos + 1, ...: the most likely
///     // next token (the argmax of the last position's logits).
///     let mut step = |model: &Model, tokens: &[i64], pos: i64| -> wharf::Result<i64> {
///         let positions: Vec<i64> = (pos..pos + tokens.len() as i64).collect();
///         let inputs = [
///             TensorView::from_slice(tokens, &[1, tokens.len() as i64])?,
///             TensorView::from_slice(&positions, &[positions.len() as i64])?,
///         ];
///         let run = model.container().begin_run_with_session(&mut chat)?;
///         let outputs = model.run(&run, &inputs)?; // F32 [1, T or 1, vocab] on the device
///         let vocab = *outputs[0].shape().last().unwrap() as usize;
///         let logits = outputs[0].read_to_vec::<f32>()?;
///         drop(outputs);
///         run.end()?;
///         let last = &logits[logits.len() - vocab..];
///         Ok((0..vocab).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap() as i64)
///     };
///
///     // 3. Prefill the prompt, then decode greedily, one token per step.
///     let prompt = [1i64, 7, 42, 3];
///     let mut tokens = vec![step(&prefill, &prompt, 0)?];
///     while tokens.len() < 8 {
///         let pos = (prompt.len() + tokens.len() - 1) as i64;
///         tokens.push(step(&decode, &tokens[tokens.len() - 1..], pos)?);
///     }
///     println!("tokens: {tokens:?}");
///
///     // 4. New weights from a checkpoint with the same FQNs (a fine-tune; here the
///     //    package's own file again) reach every method at once.
///     let store = package.store();
///     store.update_from_file(dir.join("weights/model.safetensors"), &UpdateOptions::new())?;
///     store.swap()?;
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct ModelPackage {
    raw: NonNull<sys::wharf_model_package>,
    /// The package's store, owned by the package (never freed through this value).
    store: WeightStore,
    name: String,
    max_seq_len: u64,
    methods: Vec<MethodSpec>,
}

// SAFETY: wharf.h (model packages): "Immutable once loaded. Threads: every function is safe
// to call from many threads at once"; the handle has no thread affinity.
// wharf_model_package_free runs in Drop, with exclusive ownership, once no borrow of the
// store is left.
unsafe impl Send for ModelPackage {}
// SAFETY: as above; every `&self` method calls a thread-safe package function.
unsafe impl Sync for ModelPackage {}

impl Drop for ModelPackage {
    fn drop(&mut self) {
        // SAFETY: created by the library, freed once; nothing borrows the store any more
        // (it borrows `self`). Models and sessions taken from the package keep what they
        // use alive in the library.
        unsafe { sys::wharf_model_package_free(self.raw.as_ptr()) }
    }
}

impl ModelPackage {
    /// Loads the model package in directory `dir` on `runtime` (a CUDA runtime). The
    /// manifest is checked whole, and every file it names against it, before the device
    /// is touched; then the weights are read once into the package's weight store and
    /// every method is loaded as a model over it, with the manifest's state declarations.
    ///
    /// Errors (each naming the package, the file and the field at fault): `NotFound` (no
    /// such directory, no `manifest.json`, a file the manifest names is missing),
    /// `InvalidArgument` (a malformed manifest, a path leaving the package, a weight file
    /// whose tensors differ from the manifest's, a method that disagrees with it),
    /// `Unsupported` (a `format_version` newer than the library reads; the host backend, at
    /// the first method; a shim function a method needs that Wharf lacks, named),
    /// `DataCorrupt`, `IoError`, `OutOfMemory`. Nothing is left behind on error.
    ///
    /// # Safety
    ///
    /// As [`Model::load`]: the package's methods are native code that loading runs the
    /// initialisers of and [`Model::run`] executes, none of which the binding can check.
    /// `dir` must be a package whose methods were compiled as `docs/aoti-compile.md`
    /// describes (what `tools/export` writes), and the inputs given to `Model::run` must be
    /// in the domain they were compiled for (token ids below the vocabulary size,
    /// positions below [`max_seq_len`](Self::max_seq_len), shapes within the methods'
    /// [`TensorSpec`]s).
    pub unsafe fn load(
        runtime: &Runtime,
        dir: impl AsRef<Path>,
        options: &ModelPackageOptions,
    ) -> Result<ModelPackage> {
        // SAFETY: the caller's promises, passed on.
        unsafe { ModelPackage::load_with_progress(runtime, dir, options, Progress::default()) }
    }

    /// [`load`](Self::load) that reports how many of the package's weight bytes are loaded
    /// (all methods as one total) and can be cancelled ([`Progress`]): a cancelled load
    /// leaves nothing behind and returns [`Code::Cancelled`].
    ///
    /// # Safety
    ///
    /// As [`load`](Self::load).
    pub unsafe fn load_with_progress(
        runtime: &Runtime,
        dir: impl AsRef<Path>,
        options: &ModelPackageOptions,
        progress: Progress<'_>,
    ) -> Result<ModelPackage> {
        let cdir = path_cstring(dir.as_ref())?;
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            let mut o = *o;
            with_progress(progress, |f, user| {
                o.progress = f;
                o.progress_user = user;
                // SAFETY: a live runtime; the options and strings outlive the call; the
                // caller vouches for the methods' code.
                unsafe {
                    Error::check(sys::wharf_model_package_load(
                        runtime.handle.as_ptr(),
                        cdir.as_ptr(),
                        &o,
                        &mut out,
                    ))
                }
            })
        })??;
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_model_package_load returned NULL"))?;
        // SAFETY: a live package whose reference this takes over.
        unsafe { ModelPackage::adopt(runtime, raw) }
    }

    /// Wraps a package reference the caller hands over (freed here on error).
    ///
    /// # Safety
    ///
    /// `raw` is a live package of `runtime`.
    unsafe fn adopt(
        runtime: &Runtime,
        raw: NonNull<sys::wharf_model_package>,
    ) -> Result<ModelPackage> {
        let p = raw.as_ptr();
        let read = || -> Result<(WeightStore, String, u64, Vec<MethodSpec>)> {
            // SAFETY (each call below): a live package; strings and arrays are owned by it
            // and copied at once.
            let store =
                NonNull::new(unsafe { sys::wharf_model_package_store(p) }).ok_or_else(|| {
                    Error::new(Code::Internal, "wharf_model_package_store returned NULL")
                })?;
            let name = unsafe { c_string(sys::wharf_model_package_name(p)) };
            let max_seq_len = unsafe { sys::wharf_model_package_max_seq_len(p) };
            let mut methods = Vec::new();
            for m in 0..unsafe { sys::wharf_model_package_num_methods(p) } {
                let name = unsafe { c_string(sys::wharf_model_package_method_name(p, m)) };
                let mut specs = [Vec::new(), Vec::new()];
                for (k, list) in specs.iter_mut().enumerate() {
                    let n = unsafe {
                        if k == 0 {
                            sys::wharf_model_package_num_method_inputs(p, m)
                        } else {
                            sys::wharf_model_package_num_method_outputs(p, m)
                        }
                    };
                    for i in 0..n {
                        // SAFETY: all-zero is a valid info to be overwritten.
                        let mut info =
                            unsafe { std::mem::zeroed::<sys::wharf_model_package_tensor_info>() };
                        info.struct_size =
                            std::mem::size_of::<sys::wharf_model_package_tensor_info>() as u32;
                        unsafe {
                            Error::check(if k == 0 {
                                sys::wharf_model_package_get_method_input(p, m, i, &mut info)
                            } else {
                                sys::wharf_model_package_get_method_output(p, m, i, &mut info)
                            })?;
                            list.push(TensorSpec::from_c(&info)?);
                        }
                    }
                }
                let [inputs, outputs] = specs;
                methods.push(MethodSpec {
                    name,
                    inputs,
                    outputs,
                });
            }
            // SAFETY: the package's store lives as long as the package, and the package
            // drops this value (which never frees it) with itself.
            Ok((
                unsafe { WeightStore::borrowed(runtime, store) },
                name,
                max_seq_len,
                methods,
            ))
        };
        match read() {
            Ok((store, name, max_seq_len, methods)) => Ok(ModelPackage {
                raw,
                store,
                name,
                max_seq_len,
                methods,
            }),
            Err(e) => {
                // SAFETY: a live package, freed once; nothing refers to it.
                unsafe { sys::wharf_model_package_free(p) };
                Err(e)
            }
        }
    }

    /// The C handle, for calling [`sys`](crate::sys) functions directly. It stays owned by
    /// `self`: do not free it, and do not use it after `self` is dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_model_package {
        self.raw.as_ptr()
    }

    /// The runtime the package was loaded on.
    pub fn runtime(&self) -> &Runtime {
        self.store.runtime()
    }

    /// The manifest's `name` (each method's container is `<name>/<method>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The manifest's `max_seq_len`, the KV cache's capacity (positions 0 ..
    /// max_seq_len - 1), or 0 when the manifest gives none.
    pub fn max_seq_len(&self) -> u64 {
        self.max_seq_len
    }

    /// The methods' names, in the manifest's order.
    pub fn method_names(&self) -> Vec<&str> {
        self.methods.iter().map(|m| m.name.as_str()).collect()
    }

    fn spec(&self, what: &str, name: &str) -> Result<&MethodSpec> {
        self.methods.iter().find(|m| m.name == name).ok_or_else(|| {
            Error::new(
                Code::NotFound,
                format!(
                    "{what}: model package '{}' has no method '{name}' (its methods: {})",
                    self.name,
                    self.method_names().join(", ")
                ),
            )
        })
    }

    /// The inputs of method `name` as the manifest declares them, in the compiled
    /// forward's order. Errors: `NotFound` (no such method).
    pub fn method_inputs(&self, name: &str) -> Result<&[TensorSpec]> {
        Ok(&self.spec("ModelPackage::method_inputs", name)?.inputs)
    }

    /// The outputs of method `name` as the manifest declares them. Errors: `NotFound` (no
    /// such method).
    pub fn method_outputs(&self, name: &str) -> Result<&[TensorSpec]> {
        Ok(&self.spec("ModelPackage::method_outputs", name)?.outputs)
    }

    /// Method `name` as a [`Model`] of its own (`wharf_model_package_get_method`: a new
    /// reference, released when the model is dropped; it stays valid after the package
    /// is). Begin its runs on its [`container`](Model::container), with a session from
    /// [`new_session`](Self::new_session). Errors: `NotFound` (no such method; the message
    /// lists the package's), `InvalidArgument` (a name with a NUL byte).
    pub fn method(&self, name: &str) -> Result<Model> {
        let cname = cstring(name, "method name")?;
        let mut out = std::ptr::null_mut();
        // SAFETY: a live package, a C string and a valid out pointer; thread-safe.
        unsafe {
            Error::check(sys::wharf_model_package_get_method(
                self.raw.as_ptr(),
                cname.as_ptr(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out).ok_or_else(|| {
            Error::new(
                Code::Internal,
                "wharf_model_package_get_method returned NULL",
            )
        })?;
        // SAFETY: a live model of this package's runtime, a new reference handed over.
        unsafe { Model::adopt(self.runtime(), raw) }
    }

    /// A session over every method's container (`wharf_model_package_create_session`):
    /// one buffer per declared state, shared by all methods, so a conversation's prefill
    /// and decode runs read and write the same KV cache. It keeps what it uses alive in the
    /// library, so it may outlive the package. Errors: those of [`Session::new`].
    pub fn new_session(&self, options: &SessionOptions) -> Result<Session> {
        let o = options.to_c();
        let mut out = std::ptr::null_mut();
        // SAFETY: a live package; the options outlive the call; thread-safe.
        unsafe {
            Error::check(sys::wharf_model_package_create_session(
                self.raw.as_ptr(),
                &o,
                &mut out,
            ))?
        };
        Session::wrap(self.runtime(), out, "wharf_model_package_create_session")
    }

    /// The package's weight store (borrowed from the package): its updates reach every
    /// method. [`update_from_file`](WeightStore::update_from_file) with a new checkpoint
    /// (or some of its tensors, by the checkpoint's FQNs), then
    /// [`swap`](WeightStore::swap).
    pub fn store(&self) -> &WeightStore {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn options_reach_the_c_struct() {
        let (cap, bytes, size) = ModelPackageOptions::new()
            .with_c(|o| (o.session_capacity, o.max_session_bytes, o.struct_size))
            .unwrap();
        assert_eq!((cap, bytes), (0, 0));
        assert_eq!(
            size as usize,
            std::mem::size_of::<sys::wharf_model_package_options>()
        );
        let (cap, bytes) = ModelPackageOptions::new()
            .session_capacity(8)
            .max_session_bytes(1 << 20)
            .with_c(|o| (o.session_capacity, o.max_session_bytes))
            .unwrap();
        assert_eq!((cap, bytes), (8, 1 << 20));
    }

    // A tensor info as the library fills it, read into a TensorSpec: fixed and symbolic
    // dimensions, bounded and not.
    #[test]
    fn tensor_spec_from_c() {
        let name = CString::new("input_ids").unwrap();
        let t = CString::new("T").unwrap();
        let shape = [1i64, -1, -1];
        let names = [std::ptr::null(), t.as_ptr(), t.as_ptr()];
        let lo = [1i64, 1, 0];
        let hi = [1i64, 64, -1];
        let info = sys::wharf_model_package_tensor_info {
            struct_size: std::mem::size_of::<sys::wharf_model_package_tensor_info>() as u32,
            name: name.as_ptr(),
            dtype: DType::I64.to_raw(),
            ndim: 3,
            shape: shape.as_ptr(),
            dim_names: names.as_ptr(),
            dim_min: lo.as_ptr(),
            dim_max: hi.as_ptr(),
        };
        // SAFETY: every array holds ndim entries and outlives the call.
        let spec = unsafe { TensorSpec::from_c(&info) }.unwrap();
        assert_eq!(spec.name, "input_ids");
        assert_eq!(spec.dtype, DType::I64);
        assert_eq!(spec.shape(), vec![1, -1, -1]);
        assert_eq!(spec.dims[0], Dim::Fixed(1));
        assert_eq!(
            spec.dims[1],
            Dim::Symbolic {
                name: "T".into(),
                min: 1,
                max: Some(64)
            }
        );
        assert_eq!(
            spec.dims[2],
            Dim::Symbolic {
                name: "T".into(),
                min: 0,
                max: None
            }
        );
        // A scalar: no arrays at all.
        let scalar = sys::wharf_model_package_tensor_info {
            ndim: 0,
            shape: std::ptr::null(),
            dim_names: std::ptr::null(),
            dim_min: std::ptr::null(),
            dim_max: std::ptr::null(),
            ..info
        };
        // SAFETY: ndim 0: no array is read.
        assert!(unsafe { TensorSpec::from_c(&scalar) }
            .unwrap()
            .dims
            .is_empty());
        // An unknown dtype is the library's bug, reported, not a panic.
        let odd = sys::wharf_model_package_tensor_info {
            dtype: 9999,
            ..info
        };
        // SAFETY: as above.
        let err = unsafe { TensorSpec::from_c(&odd) }.unwrap_err();
        assert_eq!(err.code(), Code::Internal);
    }
}
