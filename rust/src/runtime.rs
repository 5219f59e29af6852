// SPDX-License-Identifier: Apache-2.0
//! [`Runtime`]: one device, its streams, allocator and memory accounting.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sys;
use crate::types::{Backend, MemoryTag};

/// Options for [`Runtime::new`]. `RuntimeOptions::new()` (or `default()`) means the
/// library's defaults: backend AUTO, device 0, no memory cap, automatic thread and
/// staging sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeOptions {
    backend: Backend,
    device_index: i32,
    device_memory_limit: u64,
    copy_threads: u32,
    staging_bytes: u64,
}

impl RuntimeOptions {
    /// The defaults.
    pub fn new() -> RuntimeOptions {
        RuntimeOptions::default()
    }

    /// The backend: [`Backend::Auto`] (default), [`Backend::Cuda`] or [`Backend::Host`].
    pub fn backend(mut self, backend: Backend) -> RuntimeOptions {
        self.backend = backend;
        self
    }

    /// The CUDA device ordinal (default 0).
    pub fn device_index(mut self, index: i32) -> RuntimeOptions {
        self.device_index = index;
        self
    }

    /// Bytes of device memory Wharf may hold; 0 (default) means no cap.
    pub fn device_memory_limit(mut self, bytes: u64) -> RuntimeOptions {
        self.device_memory_limit = bytes;
        self
    }

    /// Host threads that fill the pinned staging ring; 0 (default) chooses.
    pub fn copy_threads(mut self, threads: u32) -> RuntimeOptions {
        self.copy_threads = threads;
        self
    }

    /// Size of the pinned staging ring in bytes; 0 (default) chooses.
    pub fn staging_bytes(mut self, bytes: u64) -> RuntimeOptions {
        self.staging_bytes = bytes;
        self
    }
}

/// Owns the C runtime; freed when the last [`Runtime`] clone and the last container
/// created from it are gone.
#[derive(Debug)]
pub(crate) struct RuntimeHandle(NonNull<sys::wharf_runtime>);

// SAFETY: wharf.h: "a runtime is safe to use from many threads at once"; the handle has
// no thread affinity. wharf_runtime_free requires that no other thread uses the runtime,
// which holds because it runs only when the last Arc reference is dropped.
unsafe impl Send for RuntimeHandle {}
// SAFETY: as above: every runtime function is thread-safe.
unsafe impl Sync for RuntimeHandle {}

impl RuntimeHandle {
    pub(crate) fn as_ptr(&self) -> *mut sys::wharf_runtime {
        self.0.as_ptr()
    }
}

impl Drop for RuntimeHandle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from wharf_runtime_create and is freed exactly once; no
        // container uses it any more (each holds an Arc to this handle).
        unsafe { sys::wharf_runtime_free(self.0.as_ptr()) }
    }
}

/// One device (a CUDA GPU or the host backend), its streams, allocator and memory
/// accounting (`wharf_runtime`).
///
/// A `Runtime` is a cheap, reference-counted handle: clones share one C runtime, and every
/// [`Container`](crate::Container) created from it holds a reference too, so the runtime
/// outlives its containers (as `wharf.h` requires) however the Rust values are dropped.
/// It is `Send` and `Sync`: the C runtime is safe to use from many threads at once.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub(crate) handle: Arc<RuntimeHandle>,
}

/// A description of a runtime's device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// The backend in use.
    pub backend: Backend,
    /// The CUDA device ordinal.
    pub device_index: i32,
    /// `"NVIDIA H100 80GB HBM3"`, or `"host"`.
    pub name: String,
    /// Bytes; on the host backend, physical memory.
    pub total_memory: u64,
    /// Bytes free at the time of the call.
    pub free_memory: u64,
    /// CUDA compute capability, major (0 on the host backend).
    pub compute_major: i32,
    /// CUDA compute capability, minor.
    pub compute_minor: i32,
}

/// The bytes Wharf holds. `current`/`peak` count every allocation of a tag (index them
/// with [`MemoryStats::current_of`]), device and pinned host alike; `device_*` count
/// device memory only (what the device memory limit caps; on the host backend, the host
/// memory standing in for it); `pinned_host_*` count page-locked host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStats {
    /// Current bytes per tag (indexed by the `wharf_memory_tag` value).
    pub current: [u64; sys::WHARF_MEM_TAG_CAPACITY],
    /// Peak bytes per tag since creation or the last [`Runtime::reset_peak`].
    pub peak: [u64; sys::WHARF_MEM_TAG_CAPACITY],
    /// Current device bytes.
    pub device_current: u64,
    /// Peak device bytes.
    pub device_peak: u64,
    /// Current pinned host bytes.
    pub pinned_host_current: u64,
    /// Peak pinned host bytes.
    pub pinned_host_peak: u64,
}

impl MemoryStats {
    /// Current bytes with `tag`.
    pub fn current_of(&self, tag: MemoryTag) -> u64 {
        self.current[tag.index()]
    }

    /// Peak bytes with `tag`.
    pub fn peak_of(&self, tag: MemoryTag) -> u64 {
        self.peak[tag.index()]
    }
}

impl Runtime {
    /// Creates a runtime. Fails if the loaded library's ABI differs from the binding's
    /// ([`check_version`](crate::check_version)); with [`Code::Unsupported`](crate::Code)
    /// when CUDA is asked for but unavailable; with `InvalidArgument` for bad options.
    pub fn new(options: &RuntimeOptions) -> Result<Runtime> {
        crate::check_version()?;
        // SAFETY: a zeroed options struct is valid input for *_init_sized, which fills it.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_runtime_options>() };
        // SAFETY: o is a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_runtime_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_runtime_options>(),
            )
        };
        o.backend = options.backend.to_raw();
        o.device_index = options.device_index;
        o.device_memory_limit = options.device_memory_limit;
        o.copy_threads = options.copy_threads;
        o.staging_bytes = options.staging_bytes;
        let mut out = std::ptr::null_mut();
        // SAFETY: valid options and out pointer for the call.
        unsafe { Error::check(sys::wharf_runtime_create(&o, &mut out))? };
        let ptr = NonNull::new(out).ok_or_else(|| {
            Error::new(crate::Code::Internal, "wharf_runtime_create returned NULL")
        })?;
        Ok(Runtime {
            handle: Arc::new(RuntimeHandle(ptr)),
        })
    }

    fn ptr(&self) -> *mut sys::wharf_runtime {
        self.handle.as_ptr()
    }

    /// The C handle, for calling [`sys`](crate::sys) functions this crate does not wrap.
    /// It stays owned by the runtime: do not free it, and do not use it after the last
    /// `Runtime` clone and every object created from it are dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_runtime {
        self.ptr()
    }

    /// Whether `self` and `other` are handles of one C runtime.
    pub(crate) fn same_as(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.handle, &other.handle)
    }

    /// The backend the runtime chose (never [`Backend::Auto`]).
    pub fn backend(&self) -> Backend {
        // SAFETY: a live runtime.
        Backend::from_raw(unsafe { sys::wharf_runtime_backend(self.ptr()) })
    }

    /// Describes the runtime's device.
    pub fn device_info(&self) -> Result<DeviceInfo> {
        // SAFETY: all-zero is a valid wharf_device_info.
        let mut info = unsafe { std::mem::zeroed::<sys::wharf_device_info>() };
        info.struct_size = std::mem::size_of::<sys::wharf_device_info>() as u32;
        // SAFETY: a live runtime and a writable struct of the size given.
        unsafe { Error::check(sys::wharf_runtime_get_device_info(self.ptr(), &mut info))? };
        // The name is NUL-terminated within its 256 bytes (the library writes at most 255).
        let name_bytes: Vec<u8> = info
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Ok(DeviceInfo {
            backend: Backend::from_raw(info.backend),
            device_index: info.device_index,
            name: String::from_utf8_lossy(&name_bytes).into_owned(),
            total_memory: info.total_memory,
            free_memory: info.free_memory,
            compute_major: info.compute_major,
            compute_minor: info.compute_minor,
        })
    }

    /// Reads the runtime's memory figures (a consistent snapshot per counter).
    pub fn memory_stats(&self) -> Result<MemoryStats> {
        // SAFETY: all-zero is a valid wharf_memory_stats.
        let mut s = unsafe { std::mem::zeroed::<sys::wharf_memory_stats>() };
        s.struct_size = std::mem::size_of::<sys::wharf_memory_stats>() as u32;
        // SAFETY: a live runtime and a writable struct of the size given.
        unsafe { Error::check(sys::wharf_runtime_get_memory_stats(self.ptr(), &mut s))? };
        Ok(MemoryStats {
            current: s.current,
            peak: s.peak,
            device_current: s.device_current,
            device_peak: s.device_peak,
            pinned_host_current: s.pinned_host_current,
            pinned_host_peak: s.pinned_host_peak,
        })
    }

    /// Sets every peak figure to its current value.
    pub fn reset_peak(&self) {
        // SAFETY: a live runtime; thread-safe.
        unsafe { sys::wharf_runtime_reset_peak(self.ptr()) }
    }

    /// Waits until all work Wharf enqueued on the runtime's own streams has finished.
    /// Errors: `DeviceError`, naming the failed work.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live runtime; thread-safe.
        unsafe { Error::check(sys::wharf_runtime_synchronize(self.ptr())) }
    }
}
