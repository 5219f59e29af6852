// SPDX-License-Identifier: Apache-2.0
//! [`ReplicaGroup`]: one container per device of a host, updated once, swapped together
//! (`wharf_replica_group`, experimental tier).

use std::ptr::NonNull;
use std::time::Duration;

use crate::constant_map::ConstantMap;
use crate::container::{call_with_fold, Container, FoldRun, UpdateOptions};
use crate::error::{Code, Error, Result};
use crate::progress::{with_progress, Progress};
use crate::runtime::Runtime;
use crate::sys;

/// The id a group spanning processes is formed from (`wharf_replica_group_id`): 256 opaque
/// bytes the caller sends to every rank through its own control plane (Wharf runs no
/// rendezvous service); [`as_bytes`](Self::as_bytes) on the rank that made it,
/// [`from_bytes`](Self::from_bytes) on the others. One id forms one group. Experimental tier.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplicaGroupId([u8; ReplicaGroupId::SIZE]);

impl std::fmt::Debug for ReplicaGroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplicaGroupId(")?;
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        f.write_str("..)")
    }
}

impl ReplicaGroupId {
    /// The size of an id in bytes.
    pub const SIZE: usize = 256;

    /// Makes a fresh id for a group whose ranks use `runtime`'s backend (call it in one
    /// process, usually rank 0's, and send the bytes to the others). On the host backend the
    /// id names an abstract Unix-domain socket rank 0 listens on (a test stand-in for NCCL
    /// between processes of one host); on CUDA it carries an `ncclUniqueId`. Errors:
    /// `Unsupported` (CUDA: NCCL cannot be loaded or is too old), `DeviceError`.
    pub fn new(runtime: &Runtime) -> Result<ReplicaGroupId> {
        let mut out = sys::wharf_replica_group_id {
            internal: [0; Self::SIZE],
        };
        // SAFETY: a live runtime and a writable id.
        unsafe {
            Error::check(sys::wharf_replica_group_get_unique_id(
                runtime.as_raw(),
                &mut out,
            ))?
        };
        Ok(ReplicaGroupId(out.internal))
    }

    /// Rebuilds an id from the bytes another rank sent. Errors: `InvalidArgument` (not
    /// [`SIZE`](Self::SIZE) bytes). Whether they are an id is checked by
    /// [`ReplicaGroup::create_rank`].
    pub fn from_bytes(bytes: &[u8]) -> Result<ReplicaGroupId> {
        let b: [u8; Self::SIZE] = bytes.try_into().map_err(|_| {
            Error::new(
                Code::InvalidArgument,
                format!(
                    "replica group id: an id is {} bytes, got {}",
                    Self::SIZE,
                    bytes.len()
                ),
            )
        })?;
        Ok(ReplicaGroupId(b))
    }

    /// The id's bytes, to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; Self::SIZE] {
        &self.0
    }
}

impl TryFrom<&[u8]> for ReplicaGroupId {
    type Error = Error;
    fn try_from(bytes: &[u8]) -> Result<ReplicaGroupId> {
        ReplicaGroupId::from_bytes(bytes)
    }
}

/// Options of [`ReplicaGroup::create_rank`] (`wharf_replica_group_rank_options`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RankOptions {
    timeout: Option<Duration>,
}

impl RankOptions {
    /// The defaults (a 30 s timeout).
    pub fn new() -> RankOptions {
        RankOptions::default()
    }

    /// Bounds forming the group and every wait of an update (whole milliseconds, rounded
    /// up; above `u32::MAX` ms `create_rank` fails with `InvalidArgument`).
    pub fn timeout(mut self, timeout: Duration) -> RankOptions {
        self.timeout = Some(timeout);
        self
    }

    fn to_c(self) -> Result<sys::wharf_replica_group_rank_options> {
        let mut o = sys::wharf_replica_group_rank_options {
            struct_size: 0,
            timeout_ms: 0,
        };
        // SAFETY: a writable struct of the size given.
        unsafe {
            sys::wharf_replica_group_rank_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_replica_group_rank_options>(),
            )
        };
        if let Some(t) = self.timeout {
            let ms = t.as_nanos().div_ceil(1_000_000);
            o.timeout_ms = u32::try_from(ms).map_err(|_| {
                Error::new(
                    Code::InvalidArgument,
                    format!(
                        "replica group rank options: timeout {t:?} is over {} ms",
                        u32::MAX
                    ),
                )
            })?;
        }
        Ok(o)
    }
}

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
    /// CUDA group of two or more),
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

    /// Makes `container` (this process's replica; the library keeps it alive) rank `rank`
    /// of a group of `size` processes formed from `id` (the same id and size on every
    /// rank). Blocks until every rank has joined, or fails after the timeout; two ranks in
    /// one process (each with its own runtime and container) must call it from different
    /// threads. The ranks' containers must be declared alike. While in the group the
    /// container refuses writes of its own; runs on it are used as usual. Of the group's
    /// methods, [`update_ranks`](Self::update_ranks), `free_inactive`, `num_replicas` (the
    /// size) and `stats` (this rank's) apply; `update` and `swap` fail with
    /// `FailedPrecondition`. Dropping the group leaves it (peers still in an update fail
    /// naming this rank). Errors (nothing changes): `InvalidArgument` (size 0, rank >= size,
    /// an id not made for this backend, sizes that differ between ranks, a rank given twice,
    /// declarations unlike rank 0's, a timeout over `u32::MAX` ms), `Unsupported` (CUDA
    /// without a usable NCCL), `FailedPrecondition`
    /// (the container is in a group already, or has an update staged), `Busy`,
    /// `AlreadyExists` (rank 0: the id is in use), `IoError` (a rank did not join within the
    /// timeout, named), `DeviceError`.
    pub fn create_rank(
        container: &Container,
        id: &ReplicaGroupId,
        rank: u32,
        size: u32,
        options: &RankOptions,
    ) -> Result<ReplicaGroup> {
        let o = options.to_c()?;
        let cid = sys::wharf_replica_group_id { internal: id.0 };
        let mut out = std::ptr::null_mut();
        // SAFETY: a live container (borrowed for the call; the group takes its own
        // reference), an id and options that outlive the call.
        unsafe {
            Error::check(sys::wharf_replica_group_create_rank(
                container.as_raw(),
                &cid,
                rank,
                size,
                &o,
                &mut out,
            ))?
        };
        let raw = NonNull::new(out).ok_or_else(|| {
            Error::new(
                Code::Internal,
                "wharf_replica_group_create_rank returned NULL",
            )
        })?;
        Ok(ReplicaGroup { raw })
    }

    /// One update of every rank of a group made by [`create_rank`](Self::create_rank), with
    /// a two-phase swap: every rank calls it, rank 0 with `Some(map)` (its sources, read
    /// once), every other rank with `None` (they receive). Only
    /// [`UpdateTarget::Inactive`](crate::UpdateTarget) applies; `require_full`, `wait_stream`
    /// and progress apply on rank 0. Returns `Ok` on every rank once the new weights are
    /// published everywhere (runs begun after see them). On failure nothing changes
    /// anywhere: a refused map fails every rank with rank 0's code; a rank that fails to
    /// stage fails with its own error and the others with the same code naming it; a rank
    /// that dies or times out fails every survivor with `IoError` naming it, and the group
    /// is aborted (later calls fail with `FailedPrecondition`: drop it and form a new one).
    /// Other errors: `InvalidArgument` (`None` on rank 0, a map on another rank),
    /// `FailedPrecondition` (a group made by [`new`](Self::new)).
    pub fn update_ranks(
        &self,
        map: Option<&ConstantMap<'_>>,
        options: &UpdateOptions,
    ) -> Result<()> {
        self.update_ranks_with_progress(map, options, Progress::default())
    }

    /// [`update_ranks`](Self::update_ranks) with [`Progress`] (on rank 0): a cancelled update
    /// fails every rank with `Cancelled`, nothing changed anywhere.
    pub fn update_ranks_with_progress(
        &self,
        map: Option<&ConstantMap<'_>>,
        options: &UpdateOptions,
        progress: Progress<'_>,
    ) -> Result<()> {
        let mut o = options.to_c();
        let m = map.map_or(std::ptr::null(), |m| m.as_ptr());
        with_progress(progress, |f, user| {
            o.progress = f;
            o.progress_user = user;
            // SAFETY: a live group and map (or NULL); the options outlive the call.
            unsafe {
                Error::check(sys::wharf_replica_group_update_ranks(
                    self.raw.as_ptr(),
                    m,
                    &o,
                ))
            }
        })
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

    /// [`update`](Self::update) with `fold` computing the derived constants of every
    /// replica's containers that declare them (a grouped weight store member brings its
    /// whole store): it is called once per such container on every replica, on the calling
    /// thread, with a [`FoldRun`] over that replica's generation being written (its own
    /// device and stream), after the new bytes arrived there and before anything is staged.
    /// Its error or panic aborts the update on every replica, which then changes nothing
    /// (errors as [`Container::update_with_fold`]). Group calls on this group from inside
    /// `fold` answer `FailedPrecondition`. Since 0.3 (experimental).
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
            // SAFETY: a live group and map; the options outlive the call.
            unsafe {
                Error::check(sys::wharf_replica_group_update(
                    self.raw.as_ptr(),
                    map.as_ptr(),
                    o,
                ))
            }
        })
    }

    /// [`update_ranks`](Self::update_ranks) with `fold` (as
    /// [`update_with_fold`](Self::update_with_fold)) folding this rank's derived constants
    /// before the vote: every rank passes its own fold, and a fold failing on any rank fails
    /// the update on every rank with nothing changed. Since 0.3 (experimental).
    pub fn update_ranks_with_fold<F>(
        &self,
        map: Option<&ConstantMap<'_>>,
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
        let m = map.map_or(std::ptr::null(), |m| m.as_ptr());
        call_with_fold(options, fold, |o| {
            // SAFETY: a live group and map (or NULL); the options outlive the call.
            unsafe {
                Error::check(sys::wharf_replica_group_update_ranks(
                    self.raw.as_ptr(),
                    m,
                    o,
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
