// SPDX-License-Identifier: Apache-2.0
//! The experimental tier of `wharf.h` (cargo feature `experimental`): [`Model`]s, compiled
//! by PyTorch's AOTInductor and executed by Wharf over a container it creates, and index
//! access to constants and states.

use std::ffi::{c_void, CStr};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::constant_map::{path_cstring, ConstantMap};
use crate::container::{Container, Run};
use crate::error::{Code, Error, Result};
use crate::offload::OffloaderOptions;
use crate::progress::{with_progress, Progress};
use crate::runtime::Runtime;
use crate::store::WeightStore;
use crate::sys;
use crate::tensor::{TensorView, TensorViewMut};
use crate::types::{cstring, Element};

/// Options for [`Model::load`] (`wharf_model_options`). `ModelOptions::new()` (or
/// `default()`) names the container after the file's stem, shares nothing, sets no
/// session budget and finds the shim library as the library does (`$WHARF_AOTI_SHIM`,
/// else next to `libwharf`).
#[derive(Debug, Clone, Default)]
pub struct ModelOptions<'a> {
    name: Option<String>,
    store: Option<&'a WeightStore>,
    max_session_bytes: u64,
    shim_path: Option<PathBuf>,
    offload: Option<OffloaderOptions>,
    session_capacity: u32,
}

impl<'a> ModelOptions<'a> {
    /// The defaults.
    pub fn new() -> ModelOptions<'a> {
        ModelOptions::default()
    }

    /// The container's name (default: the file's stem, `tiny_decoder` for
    /// `tiny_decoder.so`).
    pub fn name(mut self, name: impl Into<String>) -> ModelOptions<'a> {
        self.name = Some(name.into());
        self
    }

    /// Shares the model's parameters with the other containers of `store` (prefill and
    /// decode compiled separately hold one copy of their weights). A store of another
    /// runtime is refused (`InvalidArgument`).
    pub fn store(mut self, store: &'a WeightStore) -> ModelOptions<'a> {
        self.store = Some(store);
        self
    }

    /// A budget in bytes for the state of all live sessions over the model's container
    /// (0, the default, means none); see
    /// [`ContainerOptions::max_session_bytes`](crate::ContainerOptions::max_session_bytes).
    pub fn max_session_bytes(mut self, bytes: u64) -> ModelOptions<'a> {
        self.max_session_bytes = bytes;
        self
    }

    /// `> 0`: keep the model's states (its mutated buffers) for up to this many sessions in
    /// one state arena; see
    /// [`ContainerOptions::session_capacity`](crate::ContainerOptions::session_capacity).
    pub fn session_capacity(mut self, sessions: u32) -> ModelOptions<'a> {
        self.session_capacity = sessions;
        self
    }

    /// Where `libwharf_aoti_shim.so` (the `aoti_torch_*` functions compiled models
    /// import) is. Default: `$WHARF_AOTI_SHIM`, else next to `libwharf`.
    pub fn shim_path(mut self, path: impl Into<PathBuf>) -> ModelOptions<'a> {
        self.shim_path = Some(path.into());
        self
    }

    /// Offloads the layers `offload` selects: their parameters in pinned host memory,
    /// prefetched into device slots as the model runs ([`Model::offloader`] gives the
    /// offloader). A model with run-time constant folding cannot be offloaded
    /// (`Unsupported`).
    pub fn offload(mut self, offload: OffloaderOptions) -> ModelOptions<'a> {
        self.offload = Some(offload);
        self
    }

    /// Builds the C options and passes them to `f`, which must not keep them past its
    /// return.
    fn with_c<R>(&self, f: impl FnOnce(&sys::wharf_model_options) -> R) -> Result<R> {
        match &self.offload {
            Some(offload) => offload.with_c(|oo| self.with_c_offload(oo, f))?,
            None => self.with_c_offload(std::ptr::null(), f),
        }
    }

    fn with_c_offload<R>(
        &self,
        offload: *const sys::wharf_offloader_options,
        f: impl FnOnce(&sys::wharf_model_options) -> R,
    ) -> Result<R> {
        let name = self
            .name
            .as_deref()
            .map(|n| cstring(n, "model name"))
            .transpose()?;
        let shim = self.shim_path.as_deref().map(path_cstring).transpose()?;
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_model_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_model_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_model_options>(),
            )
        };
        o.name = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        o.store = self.store.map_or(std::ptr::null_mut(), WeightStore::as_raw);
        o.max_session_bytes = self.max_session_bytes;
        o.session_capacity = self.session_capacity;
        o.shim_path = shim.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
        o.offload = offload;
        // `name` and `shim` outlive the call.
        Ok(f(&o))
    }
}

/// A model compiled by PyTorch's AOTInductor without libtorch (`docs/aoti-compile.md`),
/// executed by Wharf over a container it creates (`wharf_model`, experimental tier): the
/// model's parameters are the container's constants (by FQN), its mutated buffers (KV
/// caches, recurrent state) are the container's session state, and constants it folds
/// from its parameters are recomputed for each generation. Every container operation
/// (updates, swaps, rollback, in-place updates, weight stores, sessions, budgets) applies
/// through [`container`](Self::container).
///
/// The container is borrowed from the model, so runs (which borrow the container) keep the
/// model alive at compile time; sessions over it keep what they use alive in the library,
/// so they may outlive the model. It is `Send` and `Sync`: the C model is safe to use from
/// many threads, and concurrent runs execute on separate instances.
///
/// Loading the model on the host backend fails with [`Code::Unsupported`]: compiled
/// models run on CUDA.
///
/// The whole sequence, as `tests/gpu/model_api_gpu_test.cpp` drives it in C (and
/// `tests/model.rs` in Rust, on a GPU): weights from a safetensors file plus the KV
/// caches' shapes and zero initial values, the model, a session, then per step a run,
/// `Model::run` and the outputs read back, then the run's end. It needs a GPU, so it is
/// compiled but not run here:
///
/// ```no_run
/// use wharf::{
///     Backend, ConstantMap, Model, ModelOptions, Runtime, RuntimeOptions, Session,
///     SessionOptions, TensorView,
/// };
///
/// fn main() -> wharf::Result<()> {
///     let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Cuda))?;
///     let dir = std::path::Path::new("tests/data/models/tiny_decoder");
///
///     // 1. The weights: the state dict's tensors (memory-mapped), plus the mutated
///     //    buffers' shapes and initial values: each becomes per-session state.
///     let zeros = vec![0.0f32; 4 * 64 * 16];
///     // SAFETY: nothing modifies the file while it is mapped.
///     let mut weights = unsafe { ConstantMap::load_safetensors(dir.join("tiny_decoder.safetensors"))? };
///     for cache in ["layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"] {
///         weights.set_slice(cache, &[1, 4, 64, 16], &zeros)?;
///     }
///
///     // 2. The model: a container whose constants are the model's parameters.
///     // SAFETY: an AOTInductor-compiled model (trusted native code), given token ids
///     // below its vocabulary size and positions below its cache length.
///     let model = unsafe {
///         Model::load(&rt, dir.join("tiny_decoder.so"), &weights, &ModelOptions::new().name("tiny"))?
///     };
///     drop(weights); // the container holds its own copy
///
///     // 3. A conversation: its KV caches, isolated from every other session.
///     let mut chat = Session::new(&rt, &[model.container()], &SessionOptions::new())?;
///
///     // 4. Prefill, then greedy decoding: one run per step.
///     let prompt = [1i64, 7, 42, 3];
///     let mut next = 0i64;
///     for step in 0..5 {
///         let (tokens, positions): (Vec<i64>, Vec<i64>) = if step == 0 {
///             (prompt.to_vec(), (0..prompt.len() as i64).collect())
///         } else {
///             (vec![next], vec![prompt.len() as i64 + step - 1])
///         };
///         // Host inputs: Wharf copies them to the device on the run's stream. Device
///         // memory of your own is passed with `unsafe { TensorView::from_raw(..) }`.
///         let inputs = [
///             TensorView::from_slice(&tokens, &[1, tokens.len() as i64])?,
///             TensorView::from_slice(&positions, &[positions.len() as i64])?,
///         ];
///         let run = model.container().begin_run_with_session(&mut chat)?;
///         let outputs = model.run(&run, &inputs)?; // device tensors the run owns
///         let logits = outputs[0].read_to_vec::<f32>()?; // [1, T, 256], copied out
///         let last = &logits[logits.len() - 256..];
///         next = (0..256).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap() as i64;
///         run.end()?; // `outputs` cannot be used after this (they borrow the run)
///         println!("token {next}");
///     }
///     Ok(())
/// }
/// ```
///
/// Runs borrow the model (through its container), so it cannot be dropped while one is
/// open:
///
/// ```compile_fail,E0505
/// # fn serve(model: wharf::Model, chat: &mut wharf::Session) -> wharf::Result<()> {
/// let run = model.container().begin_run_with_session(chat)?;
/// drop(model); // error: `model` is borrowed by `run`
/// run.end()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Model {
    raw: NonNull<sys::wharf_model>,
    /// The model's container, owned by the model (never freed through this value).
    container: Container,
}

// SAFETY: wharf.h (models): "Threads: safe to use from many threads; concurrent runs
// execute on separate instances"; the handle has no thread affinity. wharf_model_free runs
// in Drop, with exclusive ownership, once no run borrows the container.
unsafe impl Send for Model {}
// SAFETY: as above; every `&self` method calls a thread-safe model function.
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: created by the library, freed once; no run borrows its container any
        // more (runs borrow `self`). Sessions keep what they use alive in the library.
        // `self.container` does not free the handle, which this frees.
        unsafe { sys::wharf_model_free(self.raw.as_ptr()) }
    }
}

impl Model {
    /// Loads the compiled model at `path` on `runtime` (a CUDA runtime) with `weights`,
    /// read during the call: every parameter the model declares must be in `weights` by
    /// its original FQN, with the model's dtype and byte size (the shape is taken from
    /// there). A mutated buffer found in `weights` gives the state's shape and initial
    /// value (absent: a 1-D zero state of the buffer's size). The weights are copied in and
    /// made active: the model is ready to run. The first load in a process opens
    /// `libwharf_aoti_shim.so` with global symbol scope.
    ///
    /// Errors: `Unsupported` (the host backend; the shim library missing; the process
    /// already provides `aoti_torch_*` from libtorch; a shim function the model needs that
    /// Wharf lacks, named), `InvalidArgument` (not an AOTInductor model; a weight of the
    /// wrong dtype or size, named; a store of another runtime), `NotFound` (a parameter
    /// missing from `weights`, named), `OutOfMemory`. Nothing is left behind on error.
    ///
    /// # Safety
    ///
    /// A model is native code: loading it runs the library's initialisers in this process,
    /// and [`Model::run`] runs its host code and launches its kernels, none of which the
    /// binding can check. `path` must be a model compiled by AOTInductor as
    /// `docs/aoti-compile.md` describes (or code that is as sound), and the inputs given to
    /// `Model::run` must be in the domain it was compiled for: AOTInductor's kernels do not
    /// check shapes or values by default (token ids below the vocabulary size, positions
    /// below the cache length, shapes within the compiled dynamic ranges; setting
    /// `AOTI_RUNTIME_CHECK_INPUTS=1` makes the model check shapes and dtypes).
    pub unsafe fn load(
        runtime: &Runtime,
        path: impl AsRef<Path>,
        weights: &ConstantMap<'_>,
        options: &ModelOptions<'_>,
    ) -> Result<Model> {
        // SAFETY: the caller's promises, passed on.
        unsafe { Model::load_with_progress(runtime, path, weights, options, Progress::default()) }
    }

    /// [`load`](Self::load) that reports how many of the weights' bytes are copied in and
    /// can be cancelled ([`Progress`]): a cancelled load leaves nothing behind and returns
    /// [`Code::Cancelled`].
    ///
    /// # Safety
    ///
    /// As [`load`](Self::load).
    pub unsafe fn load_with_progress(
        runtime: &Runtime,
        path: impl AsRef<Path>,
        weights: &ConstantMap<'_>,
        options: &ModelOptions<'_>,
        progress: Progress<'_>,
    ) -> Result<Model> {
        let path = path.as_ref();
        if let Some(store) = options.store {
            if !store.runtime().same_as(runtime) {
                return Err(Error::invalid(format!(
                    "model {path:?}: its weight store belongs to another runtime"
                )));
            }
        }
        let cpath = path_cstring(path)?;
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            let mut o = *o;
            with_progress(progress, |f, user| {
                o.progress = f;
                o.progress_user = user;
                // SAFETY: a live runtime and map (whose data is valid by its borrowing
                // contract); the options and their strings outlive the call; the caller
                // vouches for the file's code.
                unsafe {
                    Error::check(sys::wharf_model_load(
                        runtime.handle.as_ptr(),
                        cpath.as_ptr(),
                        weights.as_ptr(),
                        &o,
                        &mut out,
                    ))
                }
            })
        })??;
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_model_load returned NULL"))?;
        // SAFETY: a live model of `runtime` whose reference this takes over.
        unsafe { Model::adopt(runtime, raw) }
    }

    /// Wraps a model reference the caller owns (freed by the returned value's Drop, or
    /// here on error).
    ///
    /// # Safety
    ///
    /// `raw` is a live model of `runtime`, and the caller hands its reference over.
    pub(crate) unsafe fn adopt(runtime: &Runtime, raw: NonNull<sys::wharf_model>) -> Result<Model> {
        // SAFETY: a live model.
        let container = NonNull::new(unsafe { sys::wharf_model_container(raw.as_ptr()) });
        let Some(container) = container else {
            // SAFETY: a live model, freed once.
            unsafe { sys::wharf_model_free(raw.as_ptr()) };
            return Err(Error::new(
                Code::Internal,
                "wharf_model_container returned NULL",
            ));
        };
        Ok(Model {
            raw,
            // SAFETY: the model's container lives as long as the model, and `Model`
            // drops this value (which never frees it) with itself.
            container: unsafe { Container::borrowed(runtime, container) },
        })
    }

    /// The model's container: update, swap and create sessions through it, and begin the
    /// runs that [`Model::run`] executes in. It borrows the model.
    pub fn container(&self) -> &Container {
        &self.container
    }

    /// The runtime the model was loaded on.
    pub fn runtime(&self) -> &Runtime {
        self.container.runtime()
    }

    /// The model's name (its container's).
    pub fn name(&self) -> String {
        self.container.name()
    }

    /// The C handle, for calling [`sys`](crate::sys) functions this crate does not wrap.
    /// It stays owned by `self`: do not free it, and do not use it after `self` is dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_model {
        self.raw.as_ptr()
    }

    /// The number of inputs of the model's forward.
    pub fn num_inputs(&self) -> usize {
        // SAFETY: a live model.
        unsafe { sys::wharf_model_num_inputs(self.raw.as_ptr()) }
    }

    /// The number of outputs of the model's forward.
    pub fn num_outputs(&self) -> usize {
        // SAFETY: a live model.
        unsafe { sys::wharf_model_num_outputs(self.raw.as_ptr()) }
    }

    /// The name of input `i`, or `None` past the end.
    pub fn input_name(&self, i: usize) -> Option<String> {
        // SAFETY: a live model; the string is owned by it and copied before `&self` ends.
        let p = unsafe { sys::wharf_model_input_name(self.raw.as_ptr(), i) };
        // SAFETY: NUL-terminated, owned by the model.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// The names of the forward's inputs, in order.
    pub fn input_names(&self) -> Vec<String> {
        (0..self.num_inputs())
            .filter_map(|i| self.input_name(i))
            .collect()
    }
}

/// An output of [`Model::run`]: a tensor in device memory that the run owns, valid
/// until the run ends (freed stream-ordered after it). It borrows the run, so it cannot
/// outlive it; the borrow checker refuses this:
///
/// ```compile_fail,E0505
/// # fn serve(model: &wharf::Model, chat: &mut wharf::Session) -> wharf::Result<()> {
/// let tokens = [1i64, 2, 3];
/// let positions = [0i64, 1, 2];
/// let inputs = [
///     wharf::TensorView::from_slice(&tokens, &[1, 3])?,
///     wharf::TensorView::from_slice(&positions, &[3])?,
/// ];
/// let run = model.container().begin_run_with_session(chat)?;
/// let outputs = model.run(&run, &inputs)?;
/// run.end()?; // error: `run` is borrowed by `outputs`
/// println!("{:?}", outputs[0].shape());
/// # Ok(())
/// # }
/// ```
///
/// It dereferences to a [`TensorView`] (shape, dtype, device, data pointer; pass it as
/// an input of another `Model::run` in the same run). Read it into host memory with
/// [`read`](Self::read) or [`read_to_vec`](Self::read_to_vec) (`wharf_run_copy`, ordered on
/// the run's stream after the model's work).
#[derive(Debug, Clone)]
pub struct OutputView<'r> {
    view: TensorView<'r>,
    run: NonNull<sys::wharf_run>,
}

// SAFETY: a shared borrow of run-owned memory (TensorView is Send + Sync) plus the run
// handle, used only for wharf_run_copy, which is thread-safe.
unsafe impl Send for OutputView<'_> {}
// SAFETY: as above.
unsafe impl Sync for OutputView<'_> {}

impl<'r> Deref for OutputView<'r> {
    type Target = TensorView<'r>;

    fn deref(&self) -> &TensorView<'r> {
        &self.view
    }
}

impl<'r> OutputView<'r> {
    /// The output as a [`TensorView`] borrowing the run.
    pub fn view(&self) -> &TensorView<'r> {
        &self.view
    }

    /// Copies `dst.len()` bytes of the output, from byte `offset`, into `dst`, after the
    /// work enqueued on the run's stream so far (the model's kernels), and returns when
    /// the copy is complete. Errors: `InvalidArgument` (a range past the output's bytes, a
    /// strided output), `DeviceError`.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        if !self.view.is_contiguous() {
            return Err(Error::invalid(
                "OutputView::read: the output is strided; read it with your own kernels",
            ));
        }
        let total = self.view.num_bytes() as u64;
        if offset
            .checked_add(dst.len() as u64)
            .map_or(true, |end| end > total)
        {
            return Err(Error::invalid(format!(
                "OutputView::read: bytes {offset}..{} are past the output's {total} bytes",
                offset.saturating_add(dst.len() as u64)
            )));
        }
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: the run is live (the view borrows it); the source range lies inside the
        // output, which the run owns until it ends (a device address, not a Rust
        // allocation: hence wrapping_add); `dst` is writable for its length and the call
        // returns when the copy is complete.
        unsafe {
            Error::check(sys::wharf_run_copy(
                self.run.as_ptr(),
                dst.as_mut_ptr().cast::<c_void>(),
                self.view
                    .data_ptr()
                    .cast::<u8>()
                    .wrapping_add(offset as usize)
                    .cast::<c_void>(),
                dst.len() as u64,
            ))
        }
    }

    /// Copies the whole output into a new vector (see [`read`](Self::read)). Errors:
    /// `InvalidArgument` if its dtype is not `T`'s, otherwise as `read`.
    pub fn read_to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.view.dtype() != T::DTYPE {
            return Err(Error::invalid(format!(
                "OutputView::read_to_vec: the output has dtype {}, the Rust type is {}",
                self.view.dtype(),
                T::DTYPE
            )));
        }
        // SAFETY: all-zero bits are a valid value of every Element type.
        let mut out = vec![unsafe { std::mem::zeroed::<T>() }; self.view.num_elements()];
        // SAFETY: the vector's elements are plain bytes to write into (any bit pattern is
        // a valid T), and the byte slice covers exactly its initialized length.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out.as_slice()),
            )
        };
        self.read(0, bytes)?;
        Ok(out)
    }
}

impl Model {
    /// Runs the model for `run` (a run of [`self.container()`](Model::container), begun
    /// with the session whose state the model reads and writes) on the run's stream, and
    /// returns when the work is enqueued. `inputs` are the forward's inputs in order, read
    /// during the call: host memory ([`TensorView::from_slice`]: token ids from the
    /// service), which Wharf copies to the device on the run's stream, or device memory
    /// of the runtime's device ([`TensorView::from_raw`], or an earlier output of this
    /// run). The outputs are device tensors the run owns: they borrow the run and cannot
    /// outlive it ([`OutputView`]).
    ///
    /// The model writes its session state on the device, ordered on the run's stream;
    /// state is device memory on a CUDA runtime, so no slice from
    /// [`TensorView::as_slice`] can see it change (models do not load on the host backend).
    /// Errors: `InvalidArgument` (the run is of another container, wrong input count,
    /// unsupported dtype), `DeviceError` (copying a host input), `Internal` (the model
    /// failed; the message says why).
    pub fn run<'r>(
        &self,
        run: &'r Run<'_>,
        inputs: &[TensorView<'_>],
    ) -> Result<Vec<OutputView<'r>>> {
        let model = self;
        let views: Vec<sys::wharf_tensor_view> = inputs.iter().map(TensorView::to_c).collect();
        let n = model.num_outputs();
        let mut outs = vec![
            sys::wharf_tensor_view {
                struct_size: std::mem::size_of::<sys::wharf_tensor_view>() as u32,
                flags: 0,
                data: std::ptr::null_mut(),
                dtype: 0,
                device_type: 0,
                device_index: 0,
                ndim: 0,
                shape: std::ptr::null(),
                strides: std::ptr::null(),
                byte_offset: 0,
            };
            n
        ];
        // SAFETY: a live run and model; the input views (and the arrays in `inputs` they
        // point to) outlive the call, which only reads them; `outs` holds n writable views.
        unsafe {
            Error::check(sys::wharf_model_run(
                model.as_raw(),
                run.as_raw(),
                views.as_ptr(),
                views.len(),
                outs.as_mut_ptr(),
                n,
            ))?
        };
        outs.iter()
            .map(|v| {
                // SAFETY: filled by the library: device memory the run owns until it ends,
                // never written again (a later Model::run gives fresh outputs); the shape
                // arrays live as long as the run and are copied at once.
                let view = unsafe { TensorView::from_c(v)? };
                Ok(OutputView {
                    view,
                    run: NonNull::new(run.as_raw()).expect("a live run"),
                })
            })
            .collect()
    }
}

impl<'c> Run<'c> {
    /// [`tensor`](Self::tensor) for constant `index` of the container's declarations (see
    /// [`Container::find_constant`]), with no name lookup. Errors: `InvalidArgument`
    /// (index out of range).
    pub fn tensor_at(&self, index: usize) -> Result<TensorView<'_>> {
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live run; the storage stays allocated and unchanged while the run is
        // open (as for `tensor`), and the view borrows the run.
        unsafe {
            Error::check(sys::wharf_run_get_tensor_at(self.as_raw(), index, &mut v))?;
            TensorView::from_c(&v)
        }
    }

    /// [`tensor`](Self::tensor) for state `index` of the container's state declarations
    /// (see [`Container::find_state`]), in the run's session. Errors: `InvalidArgument`
    /// (index out of range), `FailedPrecondition` (the run has no session).
    pub fn state_at(&self, index: usize) -> Result<TensorView<'_>> {
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: as in `tensor`: the state changes only through `&mut self`.
        unsafe {
            Error::check(sys::wharf_run_get_state_at(self.as_raw(), index, &mut v))?;
            TensorView::from_c(&v)
        }
    }

    /// [`state_mut`](Self::state_mut) for state `index` of the container's state
    /// declarations. Errors as [`state_at`](Self::state_at).
    pub fn state_mut_at(&mut self, index: usize) -> Result<TensorViewMut<'_>> {
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live run; wharf_run_get_state_at resolves only the session's state (never
        // a constant); the rest as in `state_mut`.
        unsafe {
            Error::check(sys::wharf_run_get_state_at(self.as_raw(), index, &mut v))?;
            TensorViewMut::from_c(&v)
        }
    }
}

impl Container {
    /// The index of constant `fqn` in the container's declarations (what
    /// [`Run::tensor_at`] and [`constant_info`](Self::constant_info) take), or `None`.
    /// Resolve names once, then use indices on the serving path.
    pub fn find_constant(&self, fqn: &str) -> Option<usize> {
        let c = cstring(fqn, "constant name").ok()?;
        // SAFETY: a live container and a C string; thread-safe.
        let i = unsafe { sys::wharf_container_find_constant(self.as_raw(), c.as_ptr()) };
        usize::try_from(i).ok()
    }

    /// The index of state `fqn` in the container's state declarations (what
    /// [`Run::state_at`] takes), or `None`.
    pub fn find_state(&self, fqn: &str) -> Option<usize> {
        let c = cstring(fqn, "state name").ok()?;
        // SAFETY: a live container and a C string; thread-safe.
        let i = unsafe { sys::wharf_container_find_state(self.as_raw(), c.as_ptr()) };
        usize::try_from(i).ok()
    }

    /// Whether an update was staged since the last swap (a swap, or the weight store's
    /// swap for a store update, would publish it). The answer may be stale once another
    /// thread updates or swaps.
    pub fn has_staged(&self) -> bool {
        // SAFETY: a live container; thread-safe.
        unsafe { sys::wharf_container_has_staged(self.as_raw()) != 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_reach_the_c_struct() {
        let (cap, size) = ModelOptions::new()
            .with_c(|o| (o.session_capacity, o.struct_size))
            .unwrap();
        assert_eq!(cap, 0);
        assert_eq!(
            size as usize,
            std::mem::size_of::<sys::wharf_model_options>()
        );
        let (cap, bytes) = ModelOptions::new()
            .session_capacity(64)
            .max_session_bytes(7)
            .with_c(|o| (o.session_capacity, o.max_session_bytes))
            .unwrap();
        assert_eq!((cap, bytes), (64, 7));
    }
}
