// SPDX-License-Identifier: Apache-2.0
//! [`Session`]: one conversation's mutable state over shared weights.

use std::ptr::NonNull;

use crate::container::Container;
use crate::error::{Code, Error, Result};
use crate::runtime::Runtime;
use crate::sys;

/// Options for [`Session::new`]. `SessionOptions::new()` (or `default()`) means no limit
/// and lazy allocation (at the first run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionOptions {
    max_state_bytes: u64,
    allocate_eagerly: bool,
}

impl SessionOptions {
    /// The defaults.
    pub fn new() -> SessionOptions {
        SessionOptions::default()
    }

    /// Refuse (`ResourceExhausted`) a session whose state exceeds `bytes` (0, the
    /// default, means no limit).
    pub fn max_state_bytes(mut self, bytes: u64) -> SessionOptions {
        self.max_state_bytes = bytes;
        self
    }

    /// Allocate and initialise the state at creation instead of at the first run (default
    /// `false`).
    pub fn allocate_eagerly(mut self, eagerly: bool) -> SessionOptions {
        self.allocate_eagerly = eagerly;
        self
    }

    pub(crate) fn to_c(self) -> sys::wharf_session_options {
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_session_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_session_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_session_options>(),
            )
        };
        o.max_state_bytes = self.max_state_bytes;
        o.allocate_eagerly = i32::from(self.allocate_eagerly);
        o
    }
}

/// One conversation's mutable state (`wharf_session`): one buffer per state FQN declared
/// by its containers (one buffer for an FQN that several declare, such as the KV cache of
/// a prefill and a decode container). Runs name their session explicitly
/// ([`Container::begin_run_with_session`]); a container that declares states refuses a run
/// without one. State survives weight swaps, is accounted under
/// [`MemoryTag::State`](crate::MemoryTag), and is freed only after the device has
/// finished the session's last run (dropping a session may wait for it).
///
/// A session holds references to its containers and its runtime in the C library, so
/// dropping them first is fine. It is `Send` and `Sync`: different sessions are
/// independent, and the C calls on one session are safe from several threads
/// (conflicting ones fail with `Busy` rather than wait).
///
/// A run borrows its session mutably, so the one-run-at-a-time rule of the C API (which
/// answers `Busy`) is checked at compile time. Two open runs on one session do not
/// compile:
///
/// ```compile_fail,E0499
/// # fn main() -> wharf::Result<()> {
/// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
/// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
/// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
/// # let prefill = Container::with_options(&rt, &opts)?;
/// # let decode = Container::with_options(&rt, &opts)?;
/// let mut session = Session::new(&rt, &[&prefill, &decode], &SessionOptions::new())?;
/// let a = prefill.begin_run_with_session(&mut session)?;
/// let b = decode.begin_run_with_session(&mut session)?; // error: second mutable borrow
/// a.end()?;
/// b.end()?;
/// # Ok(())
/// # }
/// ```
///
/// Nor does a reset (or fork) while a run is open:
///
/// ```compile_fail,E0502
/// # fn main() -> wharf::Result<()> {
/// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
/// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
/// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
/// # let model = Container::with_options(&rt, &opts)?;
/// let mut session = Session::new(&rt, &[&model], &SessionOptions::new())?;
/// let run = model.begin_run_with_session(&mut session)?;
/// session.reset()?; // error: `session` is mutably borrowed by `run`
/// run.end()?;
/// # Ok(())
/// # }
/// ```
///
/// Nor dropping the session while a run is open:
///
/// ```compile_fail,E0505
/// # fn main() -> wharf::Result<()> {
/// # use wharf::{Backend, Container, ContainerOptions, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl};
/// # let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
/// # let opts = ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &[4]));
/// # let model = Container::with_options(&rt, &opts)?;
/// let mut session = Session::new(&rt, &[&model], &SessionOptions::new())?;
/// let run = model.begin_run_with_session(&mut session)?;
/// drop(session); // error: `session` is borrowed by `run`
/// run.end()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Session {
    raw: NonNull<sys::wharf_session>,
    runtime: Runtime,
}

// SAFETY: wharf.h: "different sessions are independent (no process-wide lock); calls on
// one session from several threads are safe, and conflicting ones (a run, a reset, a fork
// of it at the same time) return WHARF_BUSY rather than wait"; the handle has no thread
// affinity. wharf_session_free runs in Drop, with exclusive ownership, after every run
// (which borrows the session) has ended.
unsafe impl Send for Session {}
// SAFETY: as above; every `&self` method calls a function the header makes safe on one
// session from several threads.
unsafe impl Sync for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: created by the library, freed once; no run borrows it any more. It may
        // wait for the device to finish the session's last operation.
        unsafe { sys::wharf_session_free(self.raw.as_ptr()) }
    }
}

impl Session {
    /// Creates a session serving runs of `containers` (at least one, all of `runtime`).
    /// A state FQN that several containers declare is one buffer; their declarations must
    /// agree (dtype and shape), and the first container's initial value is used.
    /// Errors: `InvalidArgument` (no container, one of another runtime or listed twice,
    /// disagreeing declarations, naming both containers), `ResourceExhausted` (past
    /// [`SessionOptions::max_state_bytes`] or a container's
    /// [`max_session_bytes`](crate::ContainerOptions::max_session_bytes)), `OutOfMemory`
    /// (eager allocation).
    pub fn new(
        runtime: &Runtime,
        containers: &[&Container],
        options: &SessionOptions,
    ) -> Result<Session> {
        let handles: Vec<*mut sys::wharf_container> =
            containers.iter().map(|c| c.as_raw()).collect();
        let o = options.to_c();
        let mut out = std::ptr::null_mut();
        // SAFETY: a live runtime and live containers (borrowed for the call; the session
        // keeps its own references); the array and options outlive the call.
        unsafe {
            Error::check(sys::wharf_session_create(
                runtime.handle.as_ptr(),
                handles.as_ptr(),
                handles.len(),
                &o,
                &mut out,
            ))?
        };
        Session::wrap(runtime, out, "wharf_session_create")
    }

    pub(crate) fn wrap(
        runtime: &Runtime,
        out: *mut sys::wharf_session,
        what: &str,
    ) -> Result<Session> {
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::new(Code::Internal, format!("{what} returned NULL")))?;
        Ok(Session {
            raw,
            runtime: runtime.clone(),
        })
    }

    /// The runtime the session was created on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The C handle, for calling [`sys`](crate::sys) functions this crate does not wrap
    /// (`wharf_run_begin` on your own CUDA stream, say). It stays owned by `self`: do not
    /// free it, and do not use it after `self` is dropped.
    pub fn as_raw(&self) -> *mut sys::wharf_session {
        self.raw.as_ptr()
    }

    /// Restores every state to its initial value, after the session's last run (on the
    /// runtime's stream; the next run waits for it). Returns without waiting for the
    /// device. Errors: `Busy` (a run is open on it, begun through [`as_raw`](Self::as_raw):
    /// safe code cannot reset a session while one of its runs borrows it).
    pub fn reset(&self) -> Result<()> {
        // SAFETY: a live session; thread-safe.
        unsafe { Error::check(sys::wharf_session_reset(self.as_raw())) }
    }

    /// Creates a session over the same containers whose state is a copy of this one's
    /// (branching a conversation, beam search), made on the device after this session's
    /// last run. The two then diverge. The copy counts against the containers' session
    /// budgets. Errors: `Busy` (a run is
    /// open on it, through [`as_raw`](Self::as_raw)), `ResourceExhausted`, `OutOfMemory`.
    pub fn fork(&self) -> Result<Session> {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live session and a valid out pointer; thread-safe.
        unsafe { Error::check(sys::wharf_session_fork(self.as_raw(), &mut out))? };
        Session::wrap(&self.runtime, out, "wharf_session_fork")
    }

    /// Bytes of state this session holds (or will hold at its first run).
    pub fn state_bytes(&self) -> u64 {
        // SAFETY: a live session; thread-safe.
        unsafe { sys::wharf_session_state_bytes(self.as_raw()) }
    }
}
