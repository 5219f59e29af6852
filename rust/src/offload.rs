// SPDX-License-Identifier: Apache-2.0
//! [`Offloader`]: layer weights in pinned host memory, prefetched into device slots within
//! a run (`wharf_offloader`, experimental tier).

use std::ffi::{c_char, CStr, CString};
use std::ptr::NonNull;
use std::time::Duration;

use crate::container::{Container, Run};
use crate::error::{Code, Error, Result};
use crate::model::Model;
use crate::sys;
use crate::tensor::TensorView;
use crate::types::{cstring, Device};

/// Which layers an [`Offloader`] keeps in pinned host memory and how it prefetches them
/// (`wharf_offloader_options`). `OffloaderOptions::new()` offloads every layer matching
/// `"layers.{layer}."`, copies one layer ahead and uses one slot.
#[derive(Debug, Clone)]
pub struct OffloaderOptions {
    fqns: Option<Vec<String>>,
    layer_pattern: Option<String>,
    group_size: u32,
    num_in_group: u32,
    prefetch_step: u32,
    slot_capacity: u32,
    step_compute: Duration,
    h2d_bytes_per_second: u64,
    refuse_if_exposed: bool,
}

impl Default for OffloaderOptions {
    fn default() -> OffloaderOptions {
        OffloaderOptions {
            fqns: None,
            layer_pattern: None,
            group_size: 0,
            num_in_group: 1,
            prefetch_step: 1,
            slot_capacity: 0,
            step_compute: Duration::ZERO,
            h2d_bytes_per_second: 0,
            refuse_if_exposed: false,
        }
    }
}

impl OffloaderOptions {
    /// The defaults.
    pub fn new() -> OffloaderOptions {
        OffloaderOptions::default()
    }

    /// Offloads exactly these constants (each must carry a layer number) instead of
    /// selecting by layer.
    pub fn fqns<S: Into<String>>(mut self, fqns: impl IntoIterator<Item = S>) -> OffloaderOptions {
        self.fqns = Some(fqns.into_iter().map(Into::into).collect());
        self
    }

    /// The pattern giving each constant whose FQN contains it, with `{layer}` a decimal
    /// number, that layer number (default `"layers.{layer}."`).
    pub fn layer_pattern(mut self, pattern: impl Into<String>) -> OffloaderOptions {
        self.layer_pattern = Some(pattern.into());
        self
    }

    /// vLLM's selection: layer `L` is offloaded when `L % group_size >= group_size -
    /// num_in_group` (default: every layer).
    pub fn group(mut self, group_size: u32, num_in_group: u32) -> OffloaderOptions {
        self.group_size = group_size;
        self.num_in_group = num_in_group;
        self
    }

    /// Layers copied ahead (default 1; 0 issues each copy at its wait).
    pub fn prefetch_step(mut self, step: u32) -> OffloaderOptions {
        self.prefetch_step = step;
        self
    }

    /// Device slots (default 0: `max(prefetch_step, 1)`).
    pub fn slot_capacity(mut self, slots: u32) -> OffloaderOptions {
        self.slot_capacity = slots;
        self
    }

    /// A step's measured compute time, for the budget check (default zero: unknown, no
    /// check); whole microseconds.
    pub fn step_compute(mut self, compute: Duration) -> OffloaderOptions {
        self.step_compute = compute;
        self
    }

    /// The host-to-device bandwidth to assume (default 0: measured on CUDA, 12 GB/s on the
    /// host backend).
    pub fn h2d_bytes_per_second(mut self, bytes: u64) -> OffloaderOptions {
        self.h2d_bytes_per_second = bytes;
        self
    }

    /// Whether creation fails ([`Code::ResourceExhausted`]) when prefetch cannot hide the
    /// copies a step needs (default `false`: a warning is logged).
    pub fn refuse_if_exposed(mut self, refuse: bool) -> OffloaderOptions {
        self.refuse_if_exposed = refuse;
        self
    }

    /// Builds the C options and passes them to `f`, which must not keep them past its
    /// return.
    pub(crate) fn with_c<R>(
        &self,
        f: impl FnOnce(&sys::wharf_offloader_options) -> R,
    ) -> Result<R> {
        let fqns: Vec<CString> = match &self.fqns {
            Some(list) => list
                .iter()
                .map(|f| cstring(f, "offloaded constant name"))
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let fqn_ptrs: Vec<*const c_char> = fqns.iter().map(|c| c.as_ptr()).collect();
        let pattern = self
            .layer_pattern
            .as_deref()
            .map(|p| cstring(p, "layer pattern"))
            .transpose()?;
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_offloader_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_offloader_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_offloader_options>(),
            )
        };
        if self.fqns.is_some() {
            o.fqns = fqn_ptrs.as_ptr();
            o.num_fqns = fqn_ptrs.len();
        }
        o.layer_pattern = pattern.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
        o.group_size = self.group_size;
        o.num_in_group = self.num_in_group;
        o.prefetch_step = self.prefetch_step;
        o.slot_capacity = self.slot_capacity;
        o.step_compute_us = u64::try_from(self.step_compute.as_micros()).unwrap_or(u64::MAX);
        o.h2d_bytes_per_second = self.h2d_bytes_per_second;
        o.refuse_if_exposed = i32::from(self.refuse_if_exposed);
        // `fqns`, `fqn_ptrs` and `pattern` outlive the call.
        Ok(f(&o))
    }
}

/// Where an [`OffloaderBudget`]'s bandwidth comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2dSource {
    /// [`OffloaderOptions::h2d_bytes_per_second`].
    Given,
    /// A timed pinned-to-device copy at creation (CUDA).
    Measured,
    /// The host backend: 12 GB/s.
    Assumed,
}

/// What a step (a run through every layer) copies against its compute, estimated when the
/// offloader was created (`wharf_offloader_budget`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffloaderBudget {
    /// Layers offloaded.
    pub num_offloaded_layers: u32,
    /// The offloaded constants' bytes, every offloaded layer once.
    pub bytes_per_step: u64,
    /// The bandwidth the estimate uses.
    pub h2d_bytes_per_second: u64,
    /// Where that bandwidth comes from.
    pub h2d_source: H2dSource,
    /// `bytes_per_step` at that bandwidth, in microseconds.
    pub copy_us: f64,
    /// The step's compute time as given (0: unknown).
    pub compute_us: f64,
    /// `copy_us - compute_us` when positive: what prefetch cannot hide.
    pub exposed_us: f64,
}

/// Keeps chosen layers' constants of a container (declared
/// [`Placement::Host`](crate::Placement::Host)) in pinned host memory and a small pool of
/// device slots; within a run ([`Run::begin_offload`]) it copies layer `i + prefetch_step`
/// into a slot while layer `i` computes. One run at a time holds an offloader (others get
/// [`Code::Busy`]). A run copies from the generation it pinned, so updates and swaps change
/// what later runs prefetch. It keeps its container alive in the library, and is `Send` and
/// `Sync` (every offloader function is thread-safe). Experimental tier.
#[derive(Debug)]
pub struct Offloader {
    raw: NonNull<sys::wharf_offloader>,
}

// SAFETY: wharf.h: "all functions are safe to call from many threads"; Drop has exclusive
// ownership, and a run holding the offloader keeps its own reference in the library.
unsafe impl Send for Offloader {}
// SAFETY: as above.
unsafe impl Sync for Offloader {}

impl Drop for Offloader {
    fn drop(&mut self) {
        // SAFETY: created by the library, released once.
        unsafe { sys::wharf_offloader_free(self.raw.as_ptr()) }
    }
}

impl Offloader {
    /// Creates an offloader over `container`, allocating its slot pool
    /// ([`MemoryTag::Offload`](crate::MemoryTag)), a copy stream and its events. Errors:
    /// `InvalidArgument` (a pattern without exactly one `{layer}`, no constant matching it, a
    /// listed constant without a layer number, `num_in_group` outside `1..=group_size`,
    /// `prefetch_step` above `slot_capacity`: the message says which), `NotFound` (a listed
    /// FQN the container does not declare), `AlreadyExists` (one listed twice),
    /// `FailedPrecondition` (an offloaded constant not host-placed, named), `OutOfMemory`,
    /// `ResourceExhausted` (`refuse_if_exposed` and a budget prefetch cannot hide),
    /// `DeviceError`.
    pub fn new(container: &Container, options: &OffloaderOptions) -> Result<Offloader> {
        let mut out = std::ptr::null_mut();
        options.with_c(|o| {
            // SAFETY: a live container; the options and their strings outlive the call.
            unsafe { Error::check(sys::wharf_offloader_create(container.as_raw(), o, &mut out)) }
        })??;
        Offloader::wrap(out)
    }

    fn wrap(out: *mut sys::wharf_offloader) -> Result<Offloader> {
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_offloader_create returned NULL"))?;
        Ok(Offloader { raw })
    }

    /// The raw handle, for the C API.
    pub fn as_raw(&self) -> *mut sys::wharf_offloader {
        self.raw.as_ptr()
    }

    /// Number of layers the offloader spans (the largest layer number + 1).
    pub fn num_layers(&self) -> u32 {
        // SAFETY: a live offloader.
        unsafe { sys::wharf_offloader_num_layers(self.raw.as_ptr()) }
    }

    /// The FQNs of `layer`'s offloaded constants, in the order [`OffloadLayer::tensors`]
    /// gives their slots (empty: not offloaded, or out of range).
    pub fn layer_constants(&self, layer: u32) -> Vec<String> {
        // SAFETY: a live offloader; the names are owned by the container, copied at once.
        unsafe {
            let n = sys::wharf_offloader_num_layer_constants(self.raw.as_ptr(), layer);
            (0..n)
                .filter_map(|i| {
                    let p = sys::wharf_offloader_layer_constant(self.raw.as_ptr(), layer, i);
                    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
                })
                .collect()
        }
    }

    /// The budget estimated at creation.
    pub fn budget(&self) -> Result<OffloaderBudget> {
        // SAFETY: all-zero is a valid budget to be overwritten.
        let mut b = unsafe { std::mem::zeroed::<sys::wharf_offloader_budget>() };
        b.struct_size = std::mem::size_of::<sys::wharf_offloader_budget>() as u32;
        // SAFETY: a live offloader and a writable struct of the size given.
        unsafe { Error::check(sys::wharf_offloader_get_budget(self.raw.as_ptr(), &mut b))? };
        Ok(OffloaderBudget {
            num_offloaded_layers: b.num_offloaded_layers,
            bytes_per_step: b.bytes_per_step,
            h2d_bytes_per_second: b.h2d_bytes_per_second,
            h2d_source: match b.h2d_source {
                sys::WHARF_H2D_GIVEN => H2dSource::Given,
                sys::WHARF_H2D_MEASURED => H2dSource::Measured,
                _ => H2dSource::Assumed,
            },
            copy_us: b.copy_us,
            compute_us: b.compute_us,
            exposed_us: b.exposed_us,
        })
    }
}

impl Model {
    /// The offloader of a model loaded with
    /// [`ModelOptions::offload`](crate::ModelOptions::offload) (a new reference; the model
    /// keeps its own), or `None`. The model passes its offload points itself
    /// ([`Model::run`]): use it for [`Offloader::budget`] and the layer queries.
    pub fn offloader(&self) -> Result<Option<Offloader>> {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live model.
        unsafe { Error::check(sys::wharf_model_get_offloader(self.as_raw(), &mut out))? };
        if out.is_null() {
            return Ok(None);
        }
        Offloader::wrap(out).map(Some)
    }
}

/// Offloading in one run ([`Run::begin_offload`]): wait for each layer in increasing order
/// ([`wait`](Self::wait)), launch its work, let the [`OffloadLayer`] go (or
/// [`issue`](OffloadLayer::issue) it); then [`end`](Self::end) (dropping it ends too,
/// ignoring errors).
#[derive(Debug)]
pub struct OffloadRun<'r> {
    run: *mut sys::wharf_run,
    container: &'r Container,
    offloader: &'r Offloader,
    ended: bool,
    _run: std::marker::PhantomData<&'r Run<'r>>,
}

/// One layer's slots, valid until the layer is issued ([`issue`](Self::issue), or drop):
/// the borrow of the [`OffloadRun`] keeps the next layer waiting until then.
#[derive(Debug)]
pub struct OffloadLayer<'o> {
    run: *mut sys::wharf_run,
    offloader: &'o Offloader,
    layer: u32,
    tensors: Vec<TensorView<'o>>,
    issued: bool,
}

impl<'c> Run<'c> {
    /// Begins offloading in this run (a run of `offloader`'s container): the copy stream
    /// forks from the run's stream and the first `prefetch_step` offloaded layers are
    /// copied. Errors: `InvalidArgument` (a run of another container), `Busy` (another
    /// open run holds the offloader), `FailedPrecondition` (this run already began),
    /// `DeviceError`. Experimental tier.
    pub fn begin_offload<'r>(&'r self, offloader: &'r Offloader) -> Result<OffloadRun<'r>> {
        // SAFETY: a live run and offloader.
        unsafe {
            Error::check(sys::wharf_run_begin_offload(
                self.as_raw(),
                offloader.as_raw(),
            ))?
        };
        Ok(OffloadRun {
            run: self.as_raw(),
            container: self.container(),
            offloader,
            ended: false,
            _run: std::marker::PhantomData,
        })
    }
}

impl<'r> OffloadRun<'r> {
    /// Makes the run's stream wait (on the device) for `layer`'s copy and returns its slots
    /// (none for a layer that is not offloaded). Errors: `InvalidArgument` (layer out of
    /// range), `FailedPrecondition` (a layer out of order, or the previous offloaded layer
    /// not issued, named), `DeviceError`.
    pub fn wait(&mut self, layer: u32) -> Result<OffloadLayer<'_>> {
        // SAFETY: a live offloader.
        let n = unsafe { sys::wharf_offloader_num_layer_constants(self.offloader.as_raw(), layer) };
        // SAFETY: all-zero views with struct_size set are valid to be filled.
        let mut views: Vec<sys::wharf_tensor_view> = (0..n)
            .map(|_| {
                let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
                v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
                v
            })
            .collect();
        // SAFETY: a live run and offloader; `views` holds `n` writable views.
        unsafe {
            Error::check(sys::wharf_run_wait_offload(
                self.run,
                self.offloader.as_raw(),
                layer,
                if n == 0 {
                    std::ptr::null_mut()
                } else {
                    views.as_mut_ptr()
                },
                n,
            ))?
        };
        let tensors = views
            .iter()
            // SAFETY: filled by the library; the slot is not rewritten before the layer is
            // issued, which needs this borrow of `self` to end.
            .map(|v| unsafe { TensorView::from_c(v) })
            .collect::<Result<Vec<_>>>()?;
        // Host-memory slots (the host backend) are readable from safe code (as_slice): wait
        // for the copy the run's stream waits for, so that no slice is read while the copy
        // writes it. Device slots are for kernels on the run's stream, which waits itself.
        if tensors.iter().any(|t| t.device() == Device::Cpu) {
            self.container.runtime().synchronize()?;
        }
        Ok(OffloadLayer {
            run: self.run,
            offloader: self.offloader,
            layer,
            tensors,
            issued: false,
        })
    }

    /// Ends offloading: the run's stream joins the copy stream and the offloader is free
    /// for the next run. Errors: `DeviceError`.
    pub fn end(mut self) -> Result<()> {
        self.ended = true;
        // SAFETY: a live run and offloader.
        unsafe {
            Error::check(sys::wharf_run_end_offload(
                self.run,
                self.offloader.as_raw(),
            ))
        }
    }
}

impl Drop for OffloadRun<'_> {
    fn drop(&mut self) {
        if !self.ended {
            // SAFETY: as `end`; an error here has nowhere to go (the run's end joins too),
            // and Error::check frees the status.
            drop(unsafe {
                Error::check(sys::wharf_run_end_offload(
                    self.run,
                    self.offloader.as_raw(),
                ))
            });
        }
    }
}

impl OffloadLayer<'_> {
    /// The layer number.
    pub fn layer(&self) -> u32 {
        self.layer
    }

    /// The slots of the layer's offloaded constants, in
    /// [`Offloader::layer_constants`] order: device memory that the copy the run's stream
    /// waits for fills (read it from work on the run's stream), or, on the host backend,
    /// host memory already filled ([`OffloadRun::wait`] waited for the copy).
    pub fn tensors(&self) -> &[TensorView<'_>] {
        &self.tensors
    }

    /// Records that the run's stream has been given all of the layer's work: its slot may
    /// be refilled once the device gets there, and the next prefetch is issued. Errors:
    /// `DeviceError`.
    pub fn issue(mut self) -> Result<()> {
        self.issued = true;
        // SAFETY: a live run and offloader.
        unsafe {
            Error::check(sys::wharf_run_mark_offload_issued(
                self.run,
                self.offloader.as_raw(),
                self.layer,
            ))
        }
    }
}

impl Drop for OffloadLayer<'_> {
    fn drop(&mut self) {
        if !self.issued {
            // SAFETY: as `issue`; Error::check frees the status.
            drop(unsafe {
                Error::check(sys::wharf_run_mark_offload_issued(
                    self.run,
                    self.offloader.as_raw(),
                    self.layer,
                ))
            });
        }
    }
}
