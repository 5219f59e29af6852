// SPDX-License-Identifier: Apache-2.0
//! [`WeightStore`]: one copy of each weight shared by every container that uses it.

use std::path::Path;
use std::ptr::NonNull;

use crate::constant_map::{path_cstring, ConstantMap};
use crate::container::{call_with_fold, FoldRun, UpdateOptions};
use crate::error::{Code, Error, Result};
use crate::progress::{with_progress, Progress};
use crate::runtime::Runtime;
use crate::sys;

/// What a [`WeightStore`] holds, from [`WeightStore::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WeightStoreStats {
    /// Live shared weights.
    pub num_unique_constants: u64,
    /// Their bytes.
    pub unique_bytes: u64,
    /// (container, constant) pairs whose active generation uses one of them.
    pub num_references: u64,
    /// Bytes that would be allocated without sharing, minus `unique_bytes`.
    pub saved_bytes: u64,
}

/// Shared storage for the constants of several containers (`wharf_weight_store`): two
/// methods of one model (prefill and decode, say) cost the union of their weights, not
/// the sum.
///
/// Containers join a store when they are created
/// ([`ContainerOptions::store`](crate::ContainerOptions::store)); they share every
/// constant whose FQN, dtype, shape and placement are equal (a different declaration
/// under a shared FQN is refused). Storage is refcounted per weight: it lives while any
/// container's generation or any open run uses it. [`Container::update`] on one container
/// detaches what it writes (the others keep the old storage); [`update`](Self::update)
/// writes each FQN once and stages it in every member that declares it, and
/// [`swap`](Self::swap) publishes all of them at once.
///
/// Member containers keep the store alive, so it may be dropped first. It is `Send` and
/// `Sync`: every weight store function of the C API is safe to call from many threads at
/// once.
///
/// [`Container::update`]: crate::Container::update
#[derive(Debug)]
pub struct WeightStore {
    raw: NonNull<sys::wharf_weight_store>,
    runtime: Runtime,
    /// False for a model package's store, which the package owns
    /// (`ModelPackage::store`): never freed here.
    owned: bool,
}

// SAFETY: wharf.h (weight store): "every function is safe to call from many threads at
// once"; the handle has no thread affinity. wharf_weight_store_free only releases the
// caller's reference (member containers keep the store) and runs in Drop, with exclusive
// ownership.
unsafe impl Send for WeightStore {}
// SAFETY: as above; every `&self` method calls a thread-safe store function.
unsafe impl Sync for WeightStore {}

impl Drop for WeightStore {
    fn drop(&mut self) {
        if !self.owned {
            return; // a package's store: the package frees it
        }
        // SAFETY: created by the library, released once; containers hold their own
        // references.
        unsafe { sys::wharf_weight_store_free(self.raw.as_ptr()) }
    }
}

impl WeightStore {
    /// Creates an empty store on `runtime`.
    pub fn new(runtime: &Runtime) -> Result<WeightStore> {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live runtime and a valid out pointer.
        unsafe {
            Error::check(sys::wharf_weight_store_create(
                runtime.handle.as_ptr(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_weight_store_create returned NULL"))?;
        Ok(WeightStore {
            raw,
            runtime: runtime.clone(),
            owned: true,
        })
    }

    /// A store owned by something else (a model package), never freed through the value.
    ///
    /// # Safety
    ///
    /// `raw` is a live store of `runtime` that outlives the returned value.
    #[cfg(feature = "experimental")]
    pub(crate) unsafe fn borrowed(
        runtime: &Runtime,
        raw: NonNull<sys::wharf_weight_store>,
    ) -> WeightStore {
        WeightStore {
            raw,
            runtime: runtime.clone(),
            owned: false,
        }
    }

    /// The runtime the store was created on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The C handle, for calling [`sys`](crate::sys) functions directly. It stays owned by
    /// `self`: do not free it, and do not use it after `self` is dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_weight_store {
        self.raw.as_ptr()
    }

    /// The store's live weights, their bytes, references and the bytes sharing saves.
    pub fn stats(&self) -> Result<WeightStoreStats> {
        // SAFETY: all-zero is a valid wharf_weight_store_stats.
        let mut s = unsafe { std::mem::zeroed::<sys::wharf_weight_store_stats>() };
        s.struct_size = std::mem::size_of::<sys::wharf_weight_store_stats>() as u32;
        // SAFETY: a live store and a writable struct of the size given; thread-safe.
        unsafe { Error::check(sys::wharf_weight_store_get_stats(self.as_raw(), &mut s))? };
        Ok(WeightStoreStats {
            num_unique_constants: s.num_unique_constants,
            unique_bytes: s.unique_bytes,
            num_references: s.num_references,
            saved_bytes: s.saved_bytes,
        })
    }

    /// Writes every entry of `map` once (one allocation and one copy per FQN) and stages
    /// it in the inactive generation of every member container that declares it;
    /// [`swap`](Self::swap) publishes them. All or nothing: an FQN no member declares
    /// (`NotFound`) or a wrong dtype or shape (`InvalidArgument`) is found before anything
    /// is copied, and a failure stages nothing anywhere. Only
    /// [`UpdateTarget::Inactive`](crate::UpdateTarget) is supported (`Unsupported`
    /// otherwise). Errors also: `Busy` (a member container is being updated),
    /// `InvalidArgument` (a member that declares derived constants needs
    /// [`update_with_fold`](Self::update_with_fold)).
    pub fn update(&self, map: &ConstantMap<'_>, options: &UpdateOptions) -> Result<()> {
        let o = options.to_c();
        // SAFETY: a live store and map; the options outlive the call; thread-safe.
        unsafe {
            Error::check(sys::wharf_weight_store_update(
                self.as_raw(),
                map.as_ptr(),
                &o,
            ))
        }
    }

    /// [`update`](Self::update) from a safetensors file or a sharded checkpoint's index (a
    /// path ending in `.json`), validated whole, read with `pread` (not mapped) and written as
    /// one store update (see [`Container::update_from_file`](crate::Container::update_from_file)
    /// for the file rules). All or nothing across the members: a corrupt file or shard, or
    /// one that shrinks during the call (`IoError`, never a crash), stages nothing
    /// anywhere. Errors: those of
    /// [`ConstantMap::load_safetensors`], then [`update`](Self::update)'s. Since 0.3.
    pub fn update_from_file(&self, path: impl AsRef<Path>, options: &UpdateOptions) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        let o = options.to_c();
        // SAFETY: a live store, a valid C string and options that outlive the call;
        // thread-safe.
        unsafe {
            Error::check(sys::wharf_weight_store_update_from_file(
                self.as_raw(),
                cpath.as_ptr(),
                &o,
            ))
        }
    }

    /// Like [`update`](Self::update), with `fold` computing the derived constants of the
    /// members that declare them (as
    /// [`Container::update_with_fold`](crate::Container::update_with_fold): it is called
    /// once per such container, with a [`FoldRun`] over that container's generation being
    /// written, and must not call methods of the store or its containers). Its error or
    /// panic aborts the update, which then stages nothing.
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
            // SAFETY: a live store and map; the options outlive the call; thread-safe.
            unsafe {
                Error::check(sys::wharf_weight_store_update(
                    self.as_raw(),
                    map.as_ptr(),
                    o,
                ))
            }
        })
    }

    /// [`update`](Self::update) that reports its progress (each source byte counted once)
    /// and can be cancelled ([`Progress`]): a cancelled store update stages nothing in any
    /// member and returns [`Code::Cancelled`](crate::Code::Cancelled). Since 0.3.
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
            // SAFETY: a live store and map; the options outlive the call; thread-safe.
            unsafe {
                Error::check(sys::wharf_weight_store_update(
                    self.as_raw(),
                    map.as_ptr(),
                    &o,
                ))
            }
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
            // SAFETY: a live store, a valid C string; the options outlive the call.
            unsafe {
                Error::check(sys::wharf_weight_store_update_from_file(
                    self.as_raw(),
                    cpath.as_ptr(),
                    &o,
                ))
            }
        })
    }

    /// Swaps every member container staged by [`update`](Self::update) at once: no run
    /// begun after this returns sees old weights in one container and new ones in another.
    /// Open runs keep the generation they pinned. Errors: `FailedPrecondition` (nothing
    /// staged by a store update since the last store swap).
    pub fn swap(&self) -> Result<()> {
        // SAFETY: a live store; thread-safe.
        unsafe { Error::check(sys::wharf_weight_store_swap(self.as_raw())) }
    }
}
