// SPDX-License-Identifier: Apache-2.0
//! [`ReplicaGroup`]: one container per device of a host, updated once, swapped together
//! (`wharf_replica_group`, experimental tier).

use std::ptr::NonNull;

use crate::constant_map::ConstantMap;
use crate::container::{Container, UpdateOptions};
use crate::error::{Code, Error, Result};
use crate::progress::{with_progress, Progress};
use crate::sys;

/// A replica group's counters (`wharf_replica_group_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplicaGroupStats {
    /// Replicas in the group.
    pub num_replicas: u32,
    /// `ncclGetVersion` when the group broadcasts with NCCL; 0 otherwise.
    pub nccl_version: i32,
    /// Group updates that staged.
    pub num_updates: u64,
    /// Group swaps, rollbacks included.
    pub num_swaps: u64,
    /// Bytes read from update sources (once per update).
    pub source_bytes: u64,
    /// Bytes written into replicas 1..N-1 from replica 0.
    pub broadcast_bytes: u64,
    /// Broadcast rounds (NCCL group calls, or host copies).
    pub num_broadcasts: u64,
}

/// The same model on several devices of one host (data-parallel replicas): one
/// [`Container`] per device, each on a [`Runtime`](crate::Runtime) of its own, updated
/// together (the sources read once: copied into replica 0, then broadcast with NCCL on
/// CUDA, copied between replicas on the host backend) and swapped together: a run begun on
/// any replica after [`swap`](Self::swap) returns sees the new weights, and no run sees old
/// weights on one replica beside new ones on another. A failure anywhere stages nothing on
/// any replica.
///
/// While a container is in a group it is written only through the group (its own update,
/// swap, bind and `free_inactive` fail with [`Code::FailedPrecondition`]); runs and sessions
/// of each replica are used as usual. Dropping the group lets the containers go their own
/// ways again. The library keeps the containers alive while they are in the group. It is
/// `Send` and `Sync` (group calls run one at a time). Experimental tier.
#[derive(Debug)]
pub struct ReplicaGroup {
    raw: NonNull<sys::wharf_replica_group>,
}

// SAFETY: wharf.h: "all functions are safe to call from many threads; group calls on one
// group run one at a time"; free (Drop) has exclusive ownership.
unsafe impl Send for ReplicaGroup {}
// SAFETY: as above.
unsafe impl Sync for ReplicaGroup {}

impl Drop for ReplicaGroup {
    fn drop(&mut self) {
        // SAFETY: created by the library, freed once, no call in progress (&mut self).
        unsafe { sys::wharf_replica_group_free(self.raw.as_ptr()) }
    }
}

impl ReplicaGroup {
    /// Groups `containers` (at least one), each on its own runtime (on CUDA, each on a
    /// different GPU), declared alike (the same constants in the same order with the same
    /// FQN, dtype, shape and placement, and the same states). Errors: `InvalidArgument` (no
    /// containers, one given twice, two on one runtime, mixed backends, declarations that
    /// differ: the first difference is named), `Unsupported` (NCCL cannot be loaded for a
    /// CUDA group of two or more; derived constants; a weight store member),
    /// `FailedPrecondition` (a container already in a group, or with an update staged),
    /// `Busy`, `DeviceError`. Nothing changes on error.
    pub fn new(containers: &[&Container]) -> Result<ReplicaGroup> {
        let ptrs: Vec<*mut sys::wharf_container> = containers.iter().map(|c| c.as_raw()).collect();
        let mut out = std::ptr::null_mut();
        // SAFETY: live containers (borrowed for the call); the group takes its own
        // references.
        unsafe {
            Error::check(sys::wharf_replica_group_create(
                ptrs.as_ptr(),
                ptrs.len(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out).ok_or_else(|| {
            Error::new(Code::Internal, "wharf_replica_group_create returned NULL")
        })?;
        Ok(ReplicaGroup { raw })
    }

    /// The raw handle, for the C API.
    pub fn as_raw(&self) -> *mut sys::wharf_replica_group {
        self.raw.as_ptr()
    }

    /// Number of replicas.
    pub fn num_replicas(&self) -> usize {
        // SAFETY: a live group.
        unsafe { sys::wharf_replica_group_num_replicas(self.raw.as_ptr()) }
    }

    /// Stages `map` in the inactive generation of every replica, as
    /// [`Container::update`] would on each (validation first), reading the sources once;
    /// [`swap`](Self::swap) publishes. Only [`UpdateTarget::Inactive`](crate::UpdateTarget)
    /// is supported (`Unsupported`). Errors: those of `Container::update`, the replica
    /// named; `DeviceError` (NCCL). On any error no replica changes.
    pub fn update(&self, map: &ConstantMap<'_>, options: &UpdateOptions) -> Result<()> {
        self.update_with_progress(map, options, Progress::default())
    }

    /// [`update`](Self::update) with [`Progress`] (each source byte counted once, however
    /// many replicas): a cancelled group update stages nothing on any replica.
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
            // SAFETY: a live group and map; the options outlive the call.
            unsafe {
                Error::check(sys::wharf_replica_group_update(
                    self.raw.as_ptr(),
                    map.as_ptr(),
                    &o,
                ))
            }
        })
    }

    /// Publishes what group updates staged on every replica at once or, when nothing is
    /// staged, rolls every replica back. Errors: `FailedPrecondition` (nothing to swap in,
    /// the replica named; nothing is swapped).
    pub fn swap(&self) -> Result<()> {
        // SAFETY: a live group.
        unsafe { Error::check(sys::wharf_replica_group_swap(self.raw.as_ptr())) }
    }

    /// Frees every replica's inactive generation; runs in flight keep what they pinned.
    pub fn free_inactive(&self) -> Result<()> {
        // SAFETY: a live group.
        unsafe { Error::check(sys::wharf_replica_group_free_inactive(self.raw.as_ptr())) }
    }

    /// The group's counters.
    pub fn stats(&self) -> Result<ReplicaGroupStats> {
        // SAFETY: all-zero is valid to be overwritten.
        let mut s = unsafe { std::mem::zeroed::<sys::wharf_replica_group_stats>() };
        s.struct_size = std::mem::size_of::<sys::wharf_replica_group_stats>() as u32;
        // SAFETY: a live group and a writable struct of the size given.
        unsafe {
            Error::check(sys::wharf_replica_group_get_stats(
                self.raw.as_ptr(),
                &mut s,
            ))?
        };
        Ok(ReplicaGroupStats {
            num_replicas: s.num_replicas,
            nccl_version: s.nccl_version,
            num_updates: s.num_updates,
            num_swaps: s.num_swaps,
            source_bytes: s.source_bytes,
            broadcast_bytes: s.broadcast_bytes,
            num_broadcasts: s.num_broadcasts,
        })
    }
}
