// SPDX-License-Identifier: Apache-2.0
//! [`Container`]: one model's constants in copy-on-write generations, and [`Run`]s.

use std::any::Any;
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::NonNull;
use std::time::Duration;

use crate::constant_map::{path_cstring, ConstantMap};
use crate::container_options::ContainerOptions;
use crate::error::{Code, Error, Result};
use crate::progress::{with_progress, Progress};
use crate::runtime::Runtime;
use crate::session::Session;
use crate::sys;
use crate::tensor::{num_elements, FoldTensor, RawTensor, TensorView, TensorViewMut};
use crate::types::{cstring, Backend, DType, Device, Element, Placement, UpdateTarget};

/// The declaration of one constant of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantDecl {
    pub(crate) fqn: String,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<i64>,
    pub(crate) placement: Placement,
    pub(crate) derived: bool,
}

impl ConstantDecl {
    /// A device-placed, non-derived constant.
    pub fn new(fqn: impl Into<String>, dtype: DType, shape: &[i64]) -> ConstantDecl {
        ConstantDecl {
            fqn: fqn.into(),
            dtype,
            shape: shape.to_vec(),
            placement: Placement::Device,
            derived: false,
        }
    }

    /// Where the container keeps the constant (default [`Placement::Device`]).
    pub fn placement(mut self, placement: Placement) -> ConstantDecl {
        self.placement = placement;
        self
    }

    /// Marks the constant as derived (`WHARF_CONSTANT_DERIVED`): computed by the fold
    /// callback of every update ([`Container::update_with_fold`]), never read from a map.
    pub fn derived(mut self, derived: bool) -> ConstantDecl {
        self.derived = derived;
        self
    }
}

/// A declared constant of a container, as the container reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConstantInfo {
    /// The fully qualified name.
    pub fqn: String,
    /// The element type.
    pub dtype: DType,
    /// The dimensions.
    pub shape: Vec<i64>,
    /// Where the constant is kept.
    pub placement: Placement,
    /// Whether the fold callback computes it.
    pub derived: bool,
    /// The raw `WHARF_CONSTANT_*` flags.
    pub flags: u32,
    /// The size of the constant's storage in bytes.
    pub nbytes: u64,
}

/// The declaration of one state of a container (`wharf_state_info`): every session over the
/// container holds one buffer of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateInfo {
    /// The fully qualified name.
    pub fqn: String,
    /// The element type.
    pub dtype: DType,
    /// The dimensions.
    pub shape: Vec<i64>,
    /// The bytes of one session's buffer.
    pub nbytes: u64,
}

/// Options for an update. `UpdateOptions::new()` (or `default()`) writes the inactive
/// generation, accepts a partial map, orders after no stream, and lets an in-place update
/// wait up to one second for open runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateOptions {
    target: UpdateTarget,
    require_full: bool,
    wait_stream: *mut c_void,
    in_place_max_wait_ms: u32,
}

// SAFETY: `wait_stream` is an opaque `cudaStream_t` value that the binding never
// dereferences; it only hands it to the library, under the contract of the `unsafe`
// `wait_stream` setter (which covers every update the options are used for, from any
// thread: a CUDA stream has no thread affinity). The other fields are plain values.
unsafe impl Send for UpdateOptions {}
// SAFETY: as above; `&UpdateOptions` only reads plain values.
unsafe impl Sync for UpdateOptions {}

impl Default for UpdateOptions {
    fn default() -> UpdateOptions {
        UpdateOptions {
            target: UpdateTarget::Inactive,
            require_full: false,
            wait_stream: std::ptr::null_mut(),
            in_place_max_wait_ms: 1000,
        }
    }
}

impl UpdateOptions {
    /// The defaults.
    pub fn new() -> UpdateOptions {
        UpdateOptions::default()
    }

    /// Which generation to write (default [`UpdateTarget::Inactive`]).
    pub fn target(mut self, target: UpdateTarget) -> UpdateOptions {
        self.target = target;
        self
    }

    /// Whether the map must name every non-derived constant (default `false`).
    pub fn require_full(mut self, require_full: bool) -> UpdateOptions {
        self.require_full = require_full;
        self
    }

    /// A `cudaStream_t` whose work so far the update's reads of device sources wait for,
    /// on the device (the library records an event on it when the update starts; the host
    /// does not wait): the stream of a trainer or an NCCL receive that produced the new
    /// weights. NULL (the default) orders after nothing. Host sources are read as the call
    /// reads them. The host backend refuses a non-NULL stream (`InvalidArgument`) without
    /// using it.
    ///
    /// # Safety
    ///
    /// `stream` is NULL or a valid `cudaStream_t` of the runtime's device (the legacy
    /// default stream `0` is NULL here) that stays alive during every update these options
    /// (and their copies) are passed to. The binding cannot check it: the library hands it
    /// to `cudaEventRecord`.
    pub unsafe fn wait_stream(mut self, stream: *mut c_void) -> UpdateOptions {
        self.wait_stream = stream;
        self
    }

    /// For [`UpdateTarget::ActiveInPlace`]: how long the update waits (on the host) for
    /// open runs that pinned a constant it writes, before giving that constant fresh
    /// storage instead (its bytes of extra memory, returned when those runs have
    /// finished). Default one second; [`Duration::ZERO`] never waits. Rounded up to whole
    /// milliseconds (so a non-zero wait never becomes "never wait"), at most `u32::MAX`
    /// ms. Either way open runs never see their data change.
    pub fn in_place_max_wait(mut self, wait: Duration) -> UpdateOptions {
        let ms = wait.as_nanos().div_ceil(1_000_000);
        self.in_place_max_wait_ms = u32::try_from(ms).unwrap_or(u32::MAX);
        self
    }

    pub(crate) fn to_c(self) -> sys::wharf_update_options {
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_update_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_update_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_update_options>(),
            )
        };
        o.target = self.target.to_raw();
        o.require_full = i32::from(self.require_full);
        o.wait_stream = self.wait_stream;
        o.in_place_max_wait_ms = self.in_place_max_wait_ms;
        o
    }
}

/// One model's constants, double-buffered in copy-on-write generations
/// (`wharf_container`): an *active* generation that new runs read and an *inactive* one
/// that updates write and [`swap`](Self::swap) publishes.
///
/// A container holds a reference to its [`Runtime`], so dropping every `Runtime` handle
/// first is fine. Runs borrow the container, so it cannot be dropped while one is open.
/// It is `Send` and `Sync`: every container function of the C API is thread-safe (two
/// concurrent updates are not interleaved; the second fails with [`Code::Busy`]).
#[derive(Debug)]
pub struct Container {
    raw: NonNull<sys::wharf_container>,
    runtime: Runtime,
    /// False for a model's container, which the model owns
    /// ([`Model::container`](crate::Model::container)): never freed here.
    owned: bool,
}

// SAFETY: wharf.h: "every container function is safe to call from many threads at once";
// the handle has no thread affinity. wharf_container_free runs in Drop, which has
// exclusive ownership, and runs (which borrow the container) have all ended by then.
unsafe impl Send for Container {}
// SAFETY: as above; every `&self` method calls a thread-safe container function.
unsafe impl Sync for Container {}

impl Drop for Container {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: created by the library, freed once, no run borrows it any more. The
            // runtime (held by `self.runtime`) is dropped only after this.
            unsafe { sys::wharf_container_free(self.raw.as_ptr()) }
        }
    }
}

/// The state of one update's fold callback, passed through `fold_user`.
struct FoldState<F> {
    fold: F,
    error: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

/// A status for the library (`wharf_status_create`, which copies the message). Never NULL
/// for a code other than OK.
fn new_status(code: sys::wharf_code, message: &str) -> *mut sys::wharf_status {
    // An interior NUL cannot cross as a C string: cut the message there.
    let text = message.split('\0').next().unwrap_or("");
    let c = std::ffi::CString::new(text).unwrap_or_default();
    // SAFETY: a valid C string, copied by the call.
    unsafe { sys::wharf_status_create(code, c.as_ptr()) }
}

/// The status a failed fold hands the library: a [`wharf::Error`](Error)'s code and message,
/// or `WHARF_FAILED_PRECONDITION` and the error's text for any other error.
fn fold_status(e: &(dyn std::error::Error + Send + Sync + 'static)) -> *mut sys::wharf_status {
    match e.downcast_ref::<Error>() {
        Some(we) => new_status(we.code().to_raw(), we.message()),
        None => new_status(sys::WHARF_FAILED_PRECONDITION, &e.to_string()),
    }
}

unsafe extern "C" fn fold_trampoline<F>(
    run: *mut sys::wharf_run,
    user: *mut c_void,
) -> *mut sys::wharf_status
where
    F: FnMut(
        &FoldRun<'_>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    // SAFETY: `user` is the `&mut FoldState<F>` that `call_with_fold` passed, alive and
    // not otherwise accessed for the duration of the update call.
    let state = unsafe { &mut *user.cast::<FoldState<F>>() };
    let Some(run) = NonNull::new(run) else {
        return new_status(sys::WHARF_INTERNAL, "the fold callback got a NULL run");
    };
    let fold_run = FoldRun {
        raw: run,
        _scope: PhantomData,
    };
    // A panic must not unwind through the library's C++ frames: catch it, abort the
    // update, and resume it once the library has returned.
    match catch_unwind(AssertUnwindSafe(|| (state.fold)(&fold_run))) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(e)) => {
            let st = fold_status(&*e);
            state.error = Some(e);
            st
        }
        Err(payload) => {
            state.panic = Some(payload);
            new_status(sys::WHARF_INTERNAL, "the Rust fold callback panicked")
        }
    }
}

/// The error a fold callback returns.
pub(crate) type FoldError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Calls `call` with `options` plus `fold` installed as the update's fold callback (through
/// [`fold_trampoline`]), then turns the callback's failure into the result and resumes its
/// panic, if any, once the library has returned. Shared by container and weight store
/// updates. A [`wharf::Error`](Error) from the callback crossed the C API with its code: the
/// result is the library's error (that code, the message after the library's context) with
/// the callback's error as its source; any other error gives [`Code::Callback`] with the
/// library's message and the callback's error as source.
pub(crate) fn call_with_fold<F>(
    options: &UpdateOptions,
    fold: F,
    call: impl FnOnce(&sys::wharf_update_options) -> Result<()>,
) -> Result<()>
where
    F: FnMut(&FoldRun<'_>) -> std::result::Result<(), FoldError> + Send,
{
    let mut state = FoldState {
        fold,
        error: None,
        panic: None,
    };
    let mut o = options.to_c();
    o.fold = Some(fold_trampoline::<F>);
    o.fold_user = (&mut state as *mut FoldState<F>).cast::<c_void>();
    // `state` outlives the call and is accessed only through fold_user while it runs (the
    // library calls the fold on the calling thread or, F: Send, on one of its own, one call
    // at a time).
    let result = call(&o);
    if let Some(payload) = state.panic {
        resume_unwind(payload);
    }
    match (result, state.error) {
        (Err(library), Some(e)) => Err(if e.downcast_ref::<Error>().is_some() {
            Error::new(library.code(), library.message()).with_source(e)
        } else {
            Error::new(Code::Callback, library.message()).with_source(e)
        }),
        (result, _) => result,
    }
}

unsafe extern "C" fn release_trampoline(_data: *mut c_void, user: *mut c_void) {
    // SAFETY: `user` is the Box<Box<dyn FnOnce() + Send>> leaked by bind_user_constant;
    // the library calls release exactly once.
    let release = unsafe { Box::from_raw(user.cast::<Box<dyn FnOnce() + Send + 'static>>()) };
    // Called from any thread, possibly a library worker: never unwind into C.
    let _ = catch_unwind(AssertUnwindSafe(release));
}

impl Container {
    /// Declares a container: constants only, no weights yet. Runs fail with
    /// `FailedPrecondition` until a first update has been swapped in. `name` is used in
    /// messages (`""` means `"model"`). Errors: `InvalidArgument` (a bad or duplicate
    /// declaration, naming it). For a weight store, states or a session budget, use
    /// [`with_options`](Self::with_options).
    pub fn new(runtime: &Runtime, name: &str, constants: &[ConstantDecl]) -> Result<Container> {
        Container::with_options(
            runtime,
            &ContainerOptions::new()
                .name(name)
                .constants(constants.iter().cloned()),
        )
    }

    /// Declares a container as `options` describe it: constants (no weights yet, as
    /// [`new`](Self::new)), optionally a [`WeightStore`](crate::WeightStore) to share them
    /// through, per-session states and their budget. Initial values of states are captured
    /// now. Errors: `InvalidArgument` (a bad or duplicate declaration, a state named like a
    /// constant, an initial value of the wrong dtype or length, a store of another runtime,
    /// or a declaration that disagrees with the store's under the same FQN: the message
    /// names both containers), `OutOfMemory`.
    pub fn with_options(runtime: &Runtime, options: &ContainerOptions<'_>) -> Result<Container> {
        options.check_runtime(runtime)?;
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            // SAFETY: a live runtime; the options and every array they point to outlive the
            // call, which only borrows them.
            unsafe {
                Error::check(sys::wharf_container_create(
                    runtime.handle.as_ptr(),
                    o,
                    &mut out,
                ))
            }
        })??;
        Container::wrap(runtime, out)
    }

    /// Declares one device-placed constant per entry of `map` (in map order), loads them
    /// and makes them active: the container is ready to run. The map is read during the
    /// call only. Errors: as [`update`](Self::update).
    pub fn from_map(runtime: &Runtime, map: &ConstantMap<'_>, name: &str) -> Result<Container> {
        Container::from_map_with_options(runtime, map, &ContainerOptions::new().name(name))
    }

    /// Like [`from_map`](Self::from_map), with `options`' name, store, states and budget
    /// (its constants must be empty: the map declares them). With a store, constants the
    /// store already holds with equal dtype, shape and placement are shared: no allocation
    /// and no copy (the map's data for them is not read; one FQN names one weight).
    /// Errors: as [`with_options`](Self::with_options) and [`update`](Self::update).
    pub fn from_map_with_options(
        runtime: &Runtime,
        map: &ConstantMap<'_>,
        options: &ContainerOptions<'_>,
    ) -> Result<Container> {
        if options.has_constants() {
            return Err(Error::invalid(
                "Container::from_map_with_options: the options must declare no constants (the map declares them)",
            ));
        }
        options.check_runtime(runtime)?;
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            // SAFETY: a live runtime and map (whose data is valid by its borrowing contract);
            // the options and their arrays outlive the call.
            unsafe {
                Error::check(sys::wharf_container_create_from_map(
                    runtime.handle.as_ptr(),
                    map.as_ptr(),
                    o,
                    &mut out,
                ))
            }
        })??;
        Container::wrap(runtime, out)
    }

    /// [`from_map_with_options`](Self::from_map_with_options) that reports how many of the
    /// map's bytes are loaded and can be cancelled ([`Progress`]): a cancelled load creates
    /// nothing and returns [`Code::Cancelled`]. Since 0.3.
    pub fn from_map_with_progress(
        runtime: &Runtime,
        map: &ConstantMap<'_>,
        options: &ContainerOptions<'_>,
        progress: Progress<'_>,
    ) -> Result<Container> {
        if options.has_constants() {
            return Err(Error::invalid(
                "Container::from_map_with_progress: the options must declare no constants (the map declares them)",
            ));
        }
        options.check_runtime(runtime)?;
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            let mut o = *o;
            with_progress(progress, |f, user| {
                o.progress = f;
                o.progress_user = user;
                // SAFETY: as from_map_with_options.
                unsafe {
                    Error::check(sys::wharf_container_create_from_map(
                        runtime.handle.as_ptr(),
                        map.as_ptr(),
                        &o,
                        &mut out,
                    ))
                }
            })
        })??;
        Container::wrap(runtime, out)
    }

    fn wrap(runtime: &Runtime, out: *mut sys::wharf_container) -> Result<Container> {
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_container_create returned NULL"))?;
        Ok(Container {
            raw,
            runtime: runtime.clone(),
            owned: true,
        })
    }

    /// A container handle another object owns (a model's): usable while that object
    /// lives, never freed by this value.
    ///
    /// # Safety
    ///
    /// `raw` is a live container of `runtime` that outlives the returned value.
    #[cfg(feature = "experimental")]
    pub(crate) unsafe fn borrowed(
        runtime: &Runtime,
        raw: NonNull<sys::wharf_container>,
    ) -> Container {
        Container {
            raw,
            runtime: runtime.clone(),
            owned: false,
        }
    }

    fn ptr(&self) -> *mut sys::wharf_container {
        self.raw.as_ptr()
    }

    /// The C handle, for calling [`sys`](crate::sys) functions this crate does not wrap
    /// (`wharf_run_begin` on your own CUDA stream, say). It stays owned by `self`: do not
    /// free it, and do not use it after `self` is dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_container {
        self.raw.as_ptr()
    }

    /// The runtime the container was created on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Writes the map's tensors into the container and returns when the data is in place
    /// (the map's memory is no longer read). Sources may be host or device memory.
    ///
    /// Everything is validated before anything is copied: an unknown name (`NotFound`), a
    /// derived constant, a wrong dtype or shape, a non-contiguous tensor
    /// (`InvalidArgument`) change nothing; `OutOfMemory` midway leaves the active
    /// generation untouched. A concurrent update fails with `Busy`. A container that
    /// declares derived constants needs [`update_with_fold`](Self::update_with_fold).
    ///
    /// With [`UpdateTarget::ActiveInPlace`] the update writes and publishes a new
    /// generation at once, reusing storage that nothing else references: it waits for open
    /// runs that pinned such storage for at most
    /// [`in_place_max_wait`](UpdateOptions::in_place_max_wait) (so a run held on the
    /// calling thread costs that wait, never a hang), then gives what is still pinned
    /// fresh storage. Open runs never see their data change (so slices from
    /// [`TensorView::as_slice`] stay valid and unchanged); runs begun after the call
    /// returns see only new data. A device source written on another CUDA stream is
    /// ordered with [`wait_stream`](UpdateOptions::wait_stream).
    pub fn update(&self, map: &ConstantMap<'_>, options: &UpdateOptions) -> Result<()> {
        let o = options.to_c();
        // SAFETY: a live container and map; options outlive the call.
        unsafe { Error::check(sys::wharf_container_update(self.ptr(), map.as_ptr(), &o)) }
    }

    /// Like [`update`](Self::update), computing the derived constants of the generation
    /// being written with `fold`. The callback receives a [`FoldRun`] over that
    /// generation (valid only during the call), writes the derived constants through
    /// their pointers, or launches work on [`FoldRun::stream`]. It runs on the calling
    /// thread. Calls it makes back into the API answer instead of hanging: another update
    /// of this container gets `Busy`, a weight store's update or swap from inside that
    /// store's fold `FailedPrecondition`, a swap or `free_inactive` during an in-place
    /// update `Busy`; a run begun inside it sees the weights before the update (and a swap
    /// under an update into the inactive generation makes that update fail with `Busy`,
    /// since its derived constants were computed from the old base).
    ///
    /// If `fold` returns an error the update is aborted and changes nothing. The error
    /// crosses the C API as a status (`wharf_status_create`): a [`wharf::Error`](Error)
    /// ([`Error::new`]) with its code and message, anything else as `FAILED_PRECONDITION`
    /// with its text. The result is the library's error: that code ([`Code::Callback`] for a
    /// non-Wharf error) and the message after the library's context
    /// (`"container 'm': fold callback: "`), with the callback's error as its
    /// [`source`](std::error::Error::source). A panic in `fold` aborts the update and is
    /// resumed once the library has returned.
    pub fn update_with_fold<F>(
        &self,
        map: &ConstantMap<'_>,
        options: &UpdateOptions,
        fold: F,
    ) -> Result<()>
    where
        F: FnMut(
                &FoldRun<'_>,
            )
                -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync + 'static>>
            + Send,
    {
        call_with_fold(options, fold, |o| {
            // SAFETY: a live container and map; the options outlive the call.
            unsafe { Error::check(sys::wharf_container_update(self.ptr(), map.as_ptr(), o)) }
        })
    }

    /// [`update`](Self::update) from a safetensors file, or from every shard of a sharded
    /// checkpoint's index (a path ending in `.json`). The file is validated whole before
    /// anything is written; it is not memory-mapped: its tensors are read (`pread`, from the
    /// page cache) straight into the staging ring (no host copy), and it is closed before
    /// the call returns. The file may name a subset of the container's constants
    /// ([`require_full`](UpdateOptions::require_full) demands all of them).
    ///
    /// Errors, each changing nothing: those of
    /// [`ConstantMap::load_safetensors`] for the file (`NotFound`, `IoError`, `DataCorrupt`,
    /// `Unsupported`), then `NotFound` for a tensor the container does not declare and
    /// `InvalidArgument` for a dtype or shape that differs; the rest as
    /// [`update`](Self::update). A file that shrinks during the call (truncated by another
    /// process) is an `IoError` naming it, not a crash, which is why this function is safe
    /// where [`ConstantMap::load_safetensors`] (views into a mapping) is not. An in-place
    /// update ([`UpdateTarget::ActiveInPlace`]) whose file shrinks while it is being copied
    /// may leave the constants it was overwriting with part of the new bytes; every other
    /// failure changes nothing. Replace model files by rename, as
    /// [`ConstantMap::save_safetensors`] does. Since 0.3.
    pub fn update_from_file(&self, path: impl AsRef<Path>, options: &UpdateOptions) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        let o = options.to_c();
        // SAFETY: a live container, a valid C string and options that outlive the call.
        unsafe {
            Error::check(sys::wharf_container_update_from_file(
                self.ptr(),
                cpath.as_ptr(),
                &o,
            ))
        }
    }

    /// [`update_from_file`](Self::update_from_file) with `fold` computing the derived
    /// constants, as [`update_with_fold`](Self::update_with_fold). Since 0.3.
    pub fn update_from_file_with_fold<F>(
        &self,
        path: impl AsRef<Path>,
        options: &UpdateOptions,
        fold: F,
    ) -> Result<()>
    where
        F: FnMut(
                &FoldRun<'_>,
            )
                -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync + 'static>>
            + Send,
    {
        let cpath = path_cstring(path.as_ref())?;
        call_with_fold(options, fold, |o| {
            // SAFETY: a live container, a valid C string; the options outlive the call.
            unsafe {
                Error::check(sys::wharf_container_update_from_file(
                    self.ptr(),
                    cpath.as_ptr(),
                    o,
                ))
            }
        })
    }

    /// [`update`](Self::update) that reports its progress and can be cancelled (see
    /// [`Progress`]): a cancelled update returns [`Code::Cancelled`] and changes nothing
    /// (no generation is staged, the values and the generation stay as they were). An
    /// in-place update ([`UpdateTarget::ActiveInPlace`]) refuses a progress callback
    /// (`Unsupported`: it cannot stop midway). Since 0.3.
    pub fn update_with_progress(
        &self,
        map: &ConstantMap<'_>,
        options: &UpdateOptions,
        progress: Progress<'_>,
    ) -> Result<()> {
        let mut o = options.to_c();
        with_progress(progress, |f, user| {
            o.progress = f;
            o.progress_user = user;
            // SAFETY: a live container and map; options outlive the call.
            unsafe { Error::check(sys::wharf_container_update(self.ptr(), map.as_ptr(), &o)) }
        })
    }

    /// [`update_from_file`](Self::update_from_file) with [`Progress`], as
    /// [`update_with_progress`](Self::update_with_progress). Since 0.3.
    pub fn update_from_file_with_progress(
        &self,
        path: impl AsRef<Path>,
        options: &UpdateOptions,
        progress: Progress<'_>,
    ) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        let mut o = options.to_c();
        with_progress(progress, |f, user| {
            o.progress = f;
            o.progress_user = user;
            // SAFETY: a live container, a valid C string and options that outlive the call.
            unsafe {
                Error::check(sys::wharf_container_update_from_file(
                    self.ptr(),
                    cpath.as_ptr(),
                    &o,
                ))
            }
        })
    }

    /// Binds `data` to constant `fqn` of the inactive generation without copying it (as an
    /// update of that one constant would); [`swap`](Self::swap) publishes it. The vector
    /// moves into the container, which drops it once no generation or run references it
    /// (possibly on a library thread, possibly after the container is dropped). `shape`
    /// must match the declaration, which must be placed in host memory (the host backend,
    /// or [`Placement::Host`]). Errors: as [`update`](Self::update); on error nothing
    /// changes (and `data` is dropped).
    pub fn bind_host<T: Element>(&self, fqn: &str, shape: &[i64], data: Vec<T>) -> Result<()> {
        let what = format!("constant '{fqn}'");
        let n = num_elements(&what, shape)?;
        if n != data.len() {
            return Err(Error::invalid(format!(
                "{what}: shape {shape:?} has {n} elements, the vector {}",
                data.len()
            )));
        }
        let shape = shape.to_vec();
        let ptr = data.as_ptr().cast::<c_void>();
        let raw = RawTensor {
            data: ptr,
            dtype: T::DTYPE,
            device: Device::Cpu,
            shape: &shape,
            strides: None,
        };
        // SAFETY: the vector's heap buffer does not move when the vector does; it is owned
        // by the release closure, so nothing else can touch it until the library lets go.
        unsafe { self.bind_user_constant(fqn, &raw, Some(Box::new(move || drop(data)))) }
    }

    /// Binds caller-managed memory to constant `fqn` of the inactive generation without a
    /// copy. `release` (if any) is called once the library no longer references the
    /// memory, from any thread; it is dropped uncalled on error. Errors: as
    /// [`update`](Self::update).
    ///
    /// # Safety
    ///
    /// `tensor.data` must hold the whole contiguous tensor, live where the constant is
    /// placed (device memory of the runtime's device for device placement on CUDA, host
    /// memory otherwise), and stay valid and unchanged until `release` is called (or, with
    /// no `release`, for the rest of the process).
    pub unsafe fn bind_user_constant(
        &self,
        fqn: &str,
        tensor: &RawTensor<'_>,
        release: Option<Box<dyn FnOnce() + Send + 'static>>,
    ) -> Result<()> {
        tensor.check(&format!("constant '{fqn}'"))?;
        let cfqn = cstring(fqn, "constant name")?;
        let view = tensor.to_c();
        let (release_fn, user): (sys::wharf_release_fn, *mut c_void) = match release {
            Some(f) => (
                Some(release_trampoline),
                Box::into_raw(Box::new(f)).cast::<c_void>(),
            ),
            None => (None, std::ptr::null_mut()),
        };
        // SAFETY: a live container; the view and name outlive the call; the caller vouches
        // for the memory; `user` is reclaimed below if the library does not take it.
        let result = unsafe {
            Error::check(sys::wharf_container_bind_user_constant(
                self.ptr(),
                cfqn.as_ptr(),
                &view,
                release_fn,
                user,
            ))
        };
        if result.is_err() && !user.is_null() {
            // wharf.h: "on error `release` is not called": the closure is still ours.
            // SAFETY: `user` came from Box::into_raw above and the library did not keep it.
            drop(unsafe { Box::from_raw(user.cast::<Box<dyn FnOnce() + Send + 'static>>()) });
        }
        result
    }

    /// Makes the inactive generation active, in O(1) and without waiting for the device:
    /// open runs keep the generation they pinned. The previous active generation becomes
    /// the inactive one, so swapping again without an update rolls back. Errors:
    /// `FailedPrecondition` when nothing is staged, or when a fresh container's constant
    /// was never written (naming it).
    pub fn swap(&self) -> Result<()> {
        // SAFETY: a live container; thread-safe.
        unsafe { Error::check(sys::wharf_container_swap(self.ptr())) }
    }

    /// Releases the inactive generation (after the runs that read it).
    pub fn free_inactive(&self) -> Result<()> {
        // SAFETY: a live container; thread-safe.
        unsafe { Error::check(sys::wharf_container_free_inactive(self.ptr())) }
    }

    /// The active generation's id: 0 before the first swap, a new id after every swap.
    pub fn generation(&self) -> u64 {
        // SAFETY: a live container; thread-safe.
        unsafe { sys::wharf_container_generation(self.ptr()) }
    }

    /// The number of declared constants.
    pub fn num_constants(&self) -> usize {
        // SAFETY: a live container; thread-safe.
        unsafe { sys::wharf_container_num_constants(self.ptr()) }
    }

    /// The `i`-th declared constant. Errors: `InvalidArgument` past the end.
    pub fn constant_info(&self, i: usize) -> Result<ConstantInfo> {
        // SAFETY: all-zero is a valid wharf_constant_info.
        let mut info = unsafe { std::mem::zeroed::<sys::wharf_constant_info>() };
        info.struct_size = std::mem::size_of::<sys::wharf_constant_info>() as u32;
        // SAFETY: a live container and a writable struct of the size given; the strings it
        // points to are owned by the container and copied before `&self` ends.
        unsafe {
            Error::check(sys::wharf_container_get_constant_info(
                self.ptr(),
                i,
                &mut info,
            ))?;
            let fqn = CStr::from_ptr(info.fqn).to_string_lossy().into_owned();
            let n = usize::try_from(info.ndim).unwrap_or(0);
            let shape = if n > 0 && !info.shape.is_null() {
                std::slice::from_raw_parts(info.shape, n).to_vec()
            } else {
                Vec::new()
            };
            Ok(ConstantInfo {
                fqn,
                dtype: DType::from_raw(info.dtype).ok_or_else(|| {
                    Error::new(
                        Code::Unsupported,
                        format!("dtype value {} is unknown to this binding", info.dtype),
                    )
                })?,
                shape,
                placement: Placement::from_raw(info.placement)?,
                derived: info.flags & sys::WHARF_CONSTANT_DERIVED != 0,
                flags: info.flags,
                nbytes: info.nbytes,
            })
        }
    }

    /// Every declared constant, in declaration order.
    pub fn constants(&self) -> Result<Vec<ConstantInfo>> {
        (0..self.num_constants())
            .map(|i| self.constant_info(i))
            .collect()
    }

    /// The container's name (the one it was created with).
    pub fn name(&self) -> String {
        // SAFETY: a live container; the string is owned by it and copied before `&self` ends.
        unsafe { CStr::from_ptr(sys::wharf_container_name(self.ptr())) }
            .to_string_lossy()
            .into_owned()
    }

    /// Every declared state, in declaration order.
    pub fn states(&self) -> Result<Vec<StateInfo>> {
        // SAFETY: a live container.
        let n = unsafe { sys::wharf_container_num_states(self.ptr()) };
        (0..n)
            .map(|i| {
                // SAFETY: all-zero is a valid wharf_state_info.
                let mut info = unsafe { std::mem::zeroed::<sys::wharf_state_info>() };
                info.struct_size = std::mem::size_of::<sys::wharf_state_info>() as u32;
                // SAFETY: a live container and a writable struct of the size given; the
                // strings it points to are owned by the container and copied at once.
                unsafe {
                    Error::check(sys::wharf_container_get_state_info(
                        self.ptr(),
                        i,
                        &mut info,
                    ))?;
                    let n = usize::try_from(info.ndim).unwrap_or(0);
                    Ok(StateInfo {
                        fqn: CStr::from_ptr(info.fqn).to_string_lossy().into_owned(),
                        dtype: DType::from_raw(info.dtype).ok_or_else(|| {
                            Error::new(
                                Code::Unsupported,
                                format!("dtype value {} is unknown to this binding", info.dtype),
                            )
                        })?,
                        shape: if n > 0 && !info.shape.is_null() {
                            std::slice::from_raw_parts(info.shape, n).to_vec()
                        } else {
                            Vec::new()
                        },
                        nbytes: info.nbytes,
                    })
                }
            })
            .collect()
    }

    /// Begins a run on the active generation, on the runtime's own stream, without a
    /// session. Errors: `FailedPrecondition` before the first update has been swapped in,
    /// or when the container declares states (use
    /// [`begin_run_with_session`](Self::begin_run_with_session)).
    pub fn begin_run(&self) -> Result<Run<'_>> {
        // SAFETY: a NULL session is allowed (the library refuses it for a container with
        // states).
        unsafe { self.begin(std::ptr::null_mut()) }
    }

    /// Begins a run on the active generation and `session`'s state, on the runtime's own
    /// stream. [`Run::tensor`] resolves the container's constants, then the session's
    /// state. The state is allocated at the session's first run (unless it was created
    /// eagerly) and initialised on the run's stream, after the session's previous run,
    /// reset or fork. On the host backend the call also waits for that initialisation, so
    /// host code may touch the state as soon as the run begins.
    ///
    /// The run borrows the session mutably: one run at a time per session (the C library
    /// would return `Busy` for a second one), and no reset or fork while it is open. The
    /// borrow checker enforces it; see [`Session`]. Errors: `FailedPrecondition` before the
    /// first swap, `InvalidArgument` when the session was not created over this container,
    /// `OutOfMemory` (allocating the state).
    pub fn begin_run_with_session<'a>(&'a self, session: &'a mut Session) -> Result<Run<'a>> {
        // SAFETY: a live session, borrowed for as long as the run.
        let run = unsafe { self.begin(session.as_raw())? };
        if self.runtime.backend() == Backend::Host {
            // The state's initialisation (and a reset or fork before this run) is written
            // by the stream's worker thread, asynchronously. State is host memory here,
            // which `TensorView::as_slice` reads and host code may write: wait for that
            // work so nothing the library does races with them. (On CUDA the state is
            // device memory, ordered by the stream, and never read as a Rust slice.)
            self.runtime.synchronize()?;
        }
        Ok(run)
    }

    /// # Safety
    ///
    /// `session` is NULL or a live session that outlives the returned run.
    unsafe fn begin(&self, session: *mut sys::wharf_session) -> Result<Run<'_>> {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live container and (caller) session; NULL stream = the runtime's own
        // stream, as the host backend requires.
        unsafe {
            Error::check(sys::wharf_run_begin(
                self.ptr(),
                session,
                std::ptr::null_mut(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_run_begin returned NULL"))?;
        Ok(Run {
            raw,
            container: self,
        })
    }
}

/// `wharf_run_read` into a Rust buffer.
///
/// # Safety
///
/// `run` is a live run.
unsafe fn run_read(
    run: *const sys::wharf_run,
    fqn: &str,
    offset: u64,
    dst: &mut [u8],
) -> Result<()> {
    let cfqn = cstring(fqn, "constant name")?;
    // SAFETY: a live run (caller); `dst` is writable for its length, and the call returns
    // only when the copy into it is complete.
    unsafe {
        Error::check(sys::wharf_run_read(
            run,
            cfqn.as_ptr(),
            offset,
            dst.as_mut_ptr().cast::<c_void>(),
            dst.len() as u64,
        ))
    }
}

/// A lease (`wharf_run`): one generation of a container (and, for a run begun with
/// [`Container::begin_run_with_session`], one session's state) pinned for one execution.
/// Nothing the run can read is freed or overwritten before it ends, and in-place updates
/// wait for it. Resolve constants and state with [`tensor`](Self::tensor), do the work,
/// then call [`end`](Self::end) (dropping a run ends it too, discarding any error).
///
/// A run borrows its container, and mutably its session (see [`Session`]). It is `Send`
/// and `Sync`: the C run has no thread affinity and `wharf_run_get_tensor` is documented as
/// safe for concurrent calls on one run.
///
/// The borrow keeps a container alive while its runs are open; this does not compile:
///
/// ```compile_fail,E0505
/// # fn main() -> wharf::Result<()> {
/// use wharf::{Backend, Container, Runtime, RuntimeOptions};
/// let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
/// let container = Container::new(&rt, "model", &[])?;
/// let run = container.begin_run()?;
/// drop(container); // error: `container` is borrowed by `run`
/// run.end()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Run<'c> {
    pub(crate) raw: NonNull<sys::wharf_run>,
    pub(crate) container: &'c Container,
}

// SAFETY: see the type's documentation; ending (Drop/end) needs `self` by value.
unsafe impl Send for Run<'_> {}
// SAFETY: the `&self` methods (tensor, generation, stream) are safe concurrently.
unsafe impl Sync for Run<'_> {}

impl<'c> Run<'c> {
    /// Resolves `fqn` in the run's generation, then in its session's state: a view of the
    /// storage (device memory on a CUDA runtime; host memory on the host backend or for
    /// [`Placement::Host`], readable with [`TensorView::as_slice`]). Errors: `NotFound`.
    ///
    /// Session state is the memory a run is meant to modify: write it through
    /// [`state_mut`](Self::state_mut), which borrows the run mutably (so no view from
    /// `tensor` is alive meanwhile). A slice from [`TensorView::as_slice`] never changes
    /// while it lives: constants are never written while a run has them pinned (in-place
    /// updates included), and state only through `state_mut` (or your own kernels, on
    /// device memory, which `as_slice` does not hand out).
    pub fn tensor(&self, fqn: &str) -> Result<TensorView<'_>> {
        let cfqn = cstring(fqn, "constant name")?;
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live run; the storage stays allocated and unchanged while the run is
        // open (the C API reclaims or overwrites a pinned generation only after the run
        // ends), and the view borrows the run.
        unsafe {
            Error::check(sys::wharf_run_get_tensor(
                self.raw.as_ptr(),
                cfqn.as_ptr(),
                &mut v,
            ))?;
            TensorView::from_c(&v)
        }
    }

    /// A mutable view of session state `fqn` (a state the run's container declares),
    /// borrowed from the run: the safe way to write a session's state from host code.
    /// On the host backend the state is host memory, written in place with
    /// [`TensorViewMut::as_mut_slice`] or [`TensorViewMut::copy_from_slice`]; on CUDA it is
    /// device memory for your kernels on [`stream`](Self::stream)
    /// ([`TensorViewMut::data_ptr_mut`]).
    ///
    /// The view borrows the run mutably, so no [`TensorView`] of the run is alive while it
    /// is (a slice from [`TensorView::as_slice`] never sees a state change under it), and
    /// it cannot outlive the run. Constants are never writable: other runs share them.
    /// Errors: `InvalidArgument` (`fqn` is a constant), `NotFound` (the container declares
    /// no state `fqn`, or the run has no session).
    ///
    /// ```
    /// # fn main() -> wharf::Result<()> {
    /// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
    /// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    /// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
    /// # let model = Container::with_options(&rt, &opts)?;
    /// # model.update(&wharf::ConstantMap::new()?, &wharf::UpdateOptions::new())?;
    /// # model.swap()?;
    /// let mut session = Session::new(&rt, &[&model], &SessionOptions::new())?;
    /// let mut run = model.begin_run_with_session(&mut session)?;
    /// run.state_mut("kv")?.copy_from_slice(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// run.state_mut("kv")?.as_mut_slice::<f32>()?[0] = 0.5;
    /// assert_eq!(run.tensor("kv")?.as_slice::<f32>()?, &[0.5, 2.0, 3.0, 4.0]);
    /// run.end()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A slice read from the run cannot be alive while the state is written:
    ///
    /// ```compile_fail,E0502
    /// # fn main() -> wharf::Result<()> {
    /// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
    /// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    /// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
    /// # let model = Container::with_options(&rt, &opts)?;
    /// let mut session = Session::new(&rt, &[&model], &SessionOptions::new())?;
    /// let mut run = model.begin_run_with_session(&mut session)?;
    /// let seen = run.tensor("kv")?.as_slice::<f32>()?;
    /// run.state_mut("kv")?.as_mut_slice::<f32>()?[0] = 1.0; // error: `run` is borrowed
    /// assert_eq!(seen[0], 0.0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Nor can a mutable view outlive its run:
    ///
    /// ```compile_fail,E0505
    /// # fn main() -> wharf::Result<()> {
    /// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
    /// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    /// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
    /// # let model = Container::with_options(&rt, &opts)?;
    /// let mut session = Session::new(&rt, &[&model], &SessionOptions::new())?;
    /// let mut run = model.begin_run_with_session(&mut session)?;
    /// let kv = run.state_mut("kv")?.into_mut_slice::<f32>()?;
    /// run.end()?; // error: `run` is borrowed by `kv`
    /// kv[0] = 1.0;
    /// # Ok(())
    /// # }
    /// ```
    pub fn state_mut(&mut self, fqn: &str) -> Result<TensorViewMut<'_>> {
        let states = self.container.states()?;
        if !states.iter().any(|s| s.fqn == fqn) {
            let constant = (0..self.container.num_constants())
                .filter_map(|i| self.container.constant_info(i).ok())
                .any(|c| c.fqn == fqn);
            let container = self.container.name();
            return Err(if constant {
                Error::invalid(format!(
                    "Run::state_mut: '{fqn}' is a constant of container '{container}': constants are read-only (runs share them); update them instead"
                ))
            } else {
                Error::new(
                    Code::NotFound,
                    format!("Run::state_mut: container '{container}' declares no state '{fqn}'"),
                )
            });
        }
        let cfqn = cstring(fqn, "state name")?;
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live run. `fqn` is a state of this container (a state's name is never
        // a constant's, so wharf_run_get_tensor resolves the session's buffer). The run holds
        // its session exclusively (one run at a time; no reset or fork meanwhile), the
        // buffer stays allocated while the run is open, and `&mut self` makes the view the
        // only access to the run while it lives. On the host backend begin waited for the
        // state's initialisation and nothing else is queued on it; on CUDA it is device
        // memory, which the view never touches from the host.
        unsafe {
            Error::check(sys::wharf_run_get_tensor(
                self.raw.as_ptr(),
                cfqn.as_ptr(),
                &mut v,
            ))?;
            TensorViewMut::from_c(&v)
        }
    }

    /// Copies `dst.len()` bytes of constant (or session state) `fqn`, starting at byte
    /// `offset`, from the run's generation (or session) into `dst`, after the work already
    /// on the run's stream, and returns when the copy is complete. It works
    /// wherever the constant lives (device memory included) but waits for the run's
    /// stream: it is meant for inspection and tests, not the serving path. Errors:
    /// `NotFound`, `InvalidArgument` (a range past the constant's bytes).
    pub fn read(&self, fqn: &str, offset: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: a live run.
        unsafe { run_read(self.raw.as_ptr(), fqn, offset, dst) }
    }

    /// Copies a whole constant (or session state) into a new vector through
    /// [`read`](Self::read) (so it works for device memory too). Errors: `InvalidArgument` if the constant's dtype is not
    /// `T`'s, otherwise as `read`.
    pub fn read_to_vec<T: Element>(&self, fqn: &str) -> Result<Vec<T>> {
        let t = self.tensor(fqn)?;
        if t.dtype() != T::DTYPE {
            return Err(Error::invalid(format!(
                "constant '{fqn}' has dtype {}, the Rust type is {}",
                t.dtype(),
                T::DTYPE
            )));
        }
        // SAFETY: all-zero bits are a valid value of every Element type.
        let mut out = vec![unsafe { std::mem::zeroed::<T>() }; t.num_elements()];
        // SAFETY: the vector's elements are plain bytes to write into (any bit pattern is a
        // valid T), and the byte slice covers exactly its initialized length.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out.as_slice()),
            )
        };
        self.read(fqn, 0, bytes)?;
        Ok(out)
    }

    /// The id of the generation this run pinned.
    pub fn generation(&self) -> u64 {
        // SAFETY: a live run.
        unsafe { sys::wharf_run_generation(self.raw.as_ptr()) }
    }

    /// The C handle, for calling [`sys`](crate::sys) functions this crate does not wrap.
    /// It stays owned by `self`: do not end it, and do not use it after `self` ends.
    pub fn as_raw(&self) -> *mut sys::wharf_run {
        self.raw.as_ptr()
    }

    /// The container this run is a run of.
    pub fn container(&self) -> &'c Container {
        self.container
    }

    /// The `cudaStream_t` the run's work goes on (NULL on the host backend).
    pub fn stream(&self) -> *mut c_void {
        // SAFETY: a live run.
        unsafe { sys::wharf_run_stream(self.raw.as_ptr()) }
    }

    /// Ends the run: records its completion on its stream and releases the lease, even
    /// when it returns an error (`DeviceError`: the generation is then held until the
    /// container is dropped).
    pub fn end(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: a live run, ended exactly once (Drop will not run).
        unsafe { Error::check(sys::wharf_run_end(raw.as_ptr())) }
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        // SAFETY: a live run, ended exactly once. The error cannot be reported here; use
        // `end` to see it. The handle is freed either way.
        let _ = unsafe { Error::check(sys::wharf_run_end(self.raw.as_ptr())) };
    }
}

/// The run a fold callback receives: a view of the generation being written, derived
/// constants included. It exists only during the callback (the borrow checker enforces
/// it) and is not ended by the callback.
#[derive(Debug)]
pub struct FoldRun<'f> {
    raw: NonNull<sys::wharf_run>,
    _scope: PhantomData<&'f mut ()>,
}

impl FoldRun<'_> {
    /// Resolves `fqn` in the generation being written. Errors: `NotFound`.
    pub fn tensor(&self, fqn: &str) -> Result<FoldTensor> {
        let cfqn = cstring(fqn, "constant name")?;
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: the run is alive during the callback; the shape is copied at once.
        unsafe {
            Error::check(sys::wharf_run_get_tensor(
                self.raw.as_ptr(),
                cfqn.as_ptr(),
                &mut v,
            ))?;
            FoldTensor::from_c(&v)
        }
    }

    /// Copies bytes of constant `fqn` from the generation being written into `dst`, after
    /// the work already on the fold's stream; see [`Run::read`].
    pub fn read(&self, fqn: &str, offset: u64, dst: &mut [u8]) -> Result<()> {
        // SAFETY: the run is alive during the callback.
        unsafe { run_read(self.raw.as_ptr(), fqn, offset, dst) }
    }

    /// The id of the generation being written.
    pub fn generation(&self) -> u64 {
        // SAFETY: alive during the callback.
        unsafe { sys::wharf_run_generation(self.raw.as_ptr()) }
    }

    /// The `cudaStream_t` to launch the fold's work on (NULL on the host backend).
    pub fn stream(&self) -> *mut c_void {
        // SAFETY: alive during the callback.
        unsafe { sys::wharf_run_stream(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_options_reach_the_c_struct() {
        let o = UpdateOptions::new().to_c();
        assert_eq!(o.in_place_max_wait_ms, 1000);
        assert!(o.wait_stream.is_null());
        assert_eq!(o.target, sys::WHARF_TARGET_INACTIVE);
        let wait = |d: Duration| UpdateOptions::new().in_place_max_wait(d).to_c();
        assert_eq!(wait(Duration::ZERO).in_place_max_wait_ms, 0);
        assert_eq!(wait(Duration::from_micros(1)).in_place_max_wait_ms, 1);
        assert_eq!(wait(Duration::from_millis(50)).in_place_max_wait_ms, 50);
        assert_eq!(wait(Duration::from_micros(50_001)).in_place_max_wait_ms, 51);
        assert_eq!(wait(Duration::MAX).in_place_max_wait_ms, u32::MAX);
        // SAFETY: never passed to the library.
        let s = unsafe { UpdateOptions::new().wait_stream(8usize as *mut c_void) };
        assert_eq!(s.to_c().wait_stream as usize, 8);
        assert_eq!(s.to_c().in_place_max_wait_ms, 1000);
    }
}
