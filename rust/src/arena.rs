// SPDX-License-Identifier: Apache-2.0
//! State arenas and batched runs (experimental): [`Container::begin_batch`],
//! [`Session::slot`], [`Run::slot_indices`], [`Container::state_arena_stats`].

use std::ptr::NonNull;

use crate::container::{Container, Run};
use crate::error::{Code, Error, Result};
use crate::session::Session;
use crate::sys;
use crate::tensor::TensorView;

/// The figures of a state arena (`wharf_state_arena_stats`), from
/// [`Container::state_arena_stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateArenaStats {
    /// The arena's session capacity.
    pub num_slots: u32,
    /// Slots held by live sessions.
    pub num_slots_used: u32,
    /// Slots free.
    pub num_slots_free: u32,
    /// The arena's storage: `num_slots` times one session's bytes, all states.
    pub bytes: u64,
}

impl StateArenaStats {
    pub(crate) fn from_c(s: &sys::wharf_state_arena_stats) -> StateArenaStats {
        StateArenaStats {
            num_slots: s.num_slots,
            num_slots_used: s.num_slots_used,
            num_slots_free: s.num_slots_free,
            bytes: s.bytes,
        }
    }
}

impl Container {
    /// The figures of the container's state arena (a container created with
    /// [`ContainerOptions::session_capacity`](crate::ContainerOptions::session_capacity) or
    /// [`state_arena_of`](crate::ContainerOptions::state_arena_of)); they may be stale once
    /// another thread creates or drops a session. Errors: `FailedPrecondition` (no arena).
    pub fn state_arena_stats(&self) -> Result<StateArenaStats> {
        // SAFETY: all-zero is a valid struct to be overwritten.
        let mut s = unsafe { std::mem::zeroed::<sys::wharf_state_arena_stats>() };
        s.struct_size = std::mem::size_of::<sys::wharf_state_arena_stats>() as u32;
        // SAFETY: a live container and a writable struct of the size it states.
        unsafe {
            Error::check(sys::wharf_container_get_state_arena_stats(
                self.as_raw(),
                &mut s,
            ))?
        };
        Ok(StateArenaStats::from_c(&s))
    }

    /// Begins one run over `sessions` (at least one, each a session of this container's
    /// state arena) on the active generation, pinned for all of them, on the runtime's own
    /// stream. Each session's state is initialised at its first run and ordered after its
    /// previous operation, as in
    /// [`begin_run_with_session`](Self::begin_run_with_session); on the host backend the
    /// memory is ready when this returns.
    ///
    /// In the run, [`Run::tensor`] of a state is the whole arena (`[capacity, ...shape]`;
    /// only the run's slots may be written), [`Run::slot_indices`] gives the sessions'
    /// slots in the order of `sessions`, and [`Run::read`] of a state reads the arena's
    /// bytes. [`Model::run`](crate::Model::run) takes a batched run for a method compiled over
    /// the arena (a package's `decode_batch`), with [`Run::slot_indices`] as its `slots`
    /// input; a method bound per session refuses it (`Unsupported`).
    ///
    /// The run borrows every session mutably, so a session cannot be in two runs (or be
    /// reset or forked meanwhile), nor appear twice: the borrow checker enforces what the
    /// C library answers with `Busy` (claiming none of the sessions) and `InvalidArgument`.
    /// This does not compile:
    ///
    /// ```compile_fail,E0499
    /// # fn main() -> wharf::Result<()> {
    /// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
    /// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    /// # let c = Container::with_options(&rt, &ContainerOptions::new()
    /// #     .state(StateDecl::new("kv", DType::F32, &[4])).session_capacity(4))?;
    /// let mut a = Session::new(&rt, &[&c], &SessionOptions::new())?;
    /// let mut b = Session::new(&rt, &[&c], &SessionOptions::new())?;
    /// let run = c.begin_run_with_session(&mut a)?;
    /// let batch = c.begin_batch(&mut [&mut a, &mut b])?; // error: `a` is in `run`
    /// # drop((run, batch));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: `FailedPrecondition` (no state arena, no active weights), `InvalidArgument`
    /// (no sessions, a session not covering the container or not of its arena, more
    /// sessions than the capacity), `Busy` (a session's run, reset or fork holds it through
    /// its raw handle), `OutOfMemory`.
    pub fn begin_batch<'a>(&'a self, sessions: &'a mut [&mut Session]) -> Result<Run<'a>> {
        if sessions.is_empty() {
            return Err(Error::invalid(format!(
                "begin_batch on container '{}': at least one session is required",
                self.name()
            )));
        }
        let raws: Vec<*mut sys::wharf_session> = sessions.iter().map(|s| s.as_raw()).collect();
        let mut out = std::ptr::null_mut();
        // SAFETY: a live container and live sessions (borrowed mutably for as long as the
        // run); the array is only read during the call; NULL stream = the runtime's own.
        unsafe {
            Error::check(sys::wharf_run_begin_batch(
                self.as_raw(),
                raws.as_ptr(),
                raws.len(),
                std::ptr::null_mut(),
                &mut out,
            ))?
        };
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, "wharf_run_begin_batch returned NULL"))?;
        Ok(Run {
            raw,
            container: self,
        })
    }
}

impl Session {
    /// The session's slot in its containers' state arena (fixed for its life; distinct
    /// among the arena's live sessions, and another session's after this one is dropped),
    /// or `None` without an arena.
    pub fn slot(&self) -> Option<u32> {
        // SAFETY: a live session.
        let slot = unsafe { sys::wharf_session_slot(self.as_raw()) };
        u32::try_from(slot).ok()
    }
}

impl Run<'_> {
    /// The number of sessions of the run: N for a batched run
    /// ([`Container::begin_batch`]), 1 for a run with a session, else 0.
    pub fn num_sessions(&self) -> usize {
        // SAFETY: a live run.
        unsafe { sys::wharf_run_num_sessions(self.raw.as_ptr()) }
    }

    /// The slots of the run's sessions: an `I64` tensor `[N]` in the order the sessions
    /// were given (one element for a run of one arena session), device memory (host memory
    /// on the host backend, readable with [`TensorView::as_slice`]), read-only, borrowed
    /// from the run and written in its stream order. Errors: `FailedPrecondition` (the
    /// run's sessions hold no arena slot).
    pub fn slot_indices(&self) -> Result<TensorView<'_>> {
        // SAFETY: all-zero is a valid view to be overwritten.
        let mut v = unsafe { std::mem::zeroed::<sys::wharf_tensor_view>() };
        v.struct_size = std::mem::size_of::<sys::wharf_tensor_view>() as u32;
        // SAFETY: a live run; the index buffer lives, unchanged, while the run is open, and
        // the view borrows the run.
        unsafe {
            Error::check(sys::wharf_run_get_slot_indices(self.raw.as_ptr(), &mut v))?;
            TensorView::from_c(&v)
        }
    }
}
