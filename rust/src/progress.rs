// SPDX-License-Identifier: Apache-2.0
//! [`Progress`] and [`CancelToken`]: progress of long calls (updates, loads) and their
//! cancellation (`wharf_progress_fn`).

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::sys;

/// A flag another thread sets to cancel long calls ([`Progress::cancel_token`]). Clones
/// share the flag. Once cancelled it stays cancelled: use a new token for the next call.
///
/// ```
/// let token = wharf::CancelToken::new();
/// let other = token.clone();
/// std::thread::spawn(move || other.cancel()).join().unwrap();
/// assert!(token.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels the calls watching this token (from any thread): each stops at its next
    /// progress point (every 16 MiB copied, and before it publishes anything) and returns
    /// [`Code::Cancelled`](crate::Code::Cancelled), having changed nothing.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// How a long call reports its progress and learns that it should stop: an optional
/// closure told `(done, total)` bytes, and an optional [`CancelToken`]. The library calls
/// back on the calling thread, inside the call, every 16 MiB copied (at least every
/// 64 MiB) and once more with `done == total` before it publishes or stages anything;
/// `total` is fixed for the call and `done` never decreases. The call is cancelled when
/// the closure returns [`ControlFlow::Break`], panics, or the token is cancelled: it then
/// stops copying, waits for the copies in flight, releases what it allocated and returns
/// [`Code::Cancelled`](crate::Code::Cancelled), having changed nothing. A panic is resumed
/// once the library has returned (it never unwinds through the library's frames). The
/// closure must not call into the object being updated (it would get `Busy`).
///
/// ```
/// use std::ops::ControlFlow;
/// let token = wharf::CancelToken::new();
/// let mut last = 0;
/// let progress = wharf::Progress::new(|done, _total| {
///     last = done;
///     ControlFlow::Continue(())
/// })
/// .cancel_token(&token);
/// # drop(progress);
/// ```
#[derive(Default)]
pub struct Progress<'a> {
    callback: Option<ProgressFn<'a>>,
    token: Option<CancelToken>,
}

impl fmt::Debug for Progress<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("callback", &self.callback.is_some())
            .field("token", &self.token)
            .finish()
    }
}

impl<'a> Progress<'a> {
    /// Reports progress to `callback`, which cancels the call by returning
    /// [`ControlFlow::Break`].
    pub fn new(callback: impl FnMut(u64, u64) -> ControlFlow<()> + 'a) -> Progress<'a> {
        Progress {
            callback: Some(Box::new(callback)),
            token: None,
        }
    }

    /// No callback: only a token (see [`cancel_token`](Self::cancel_token)).
    pub fn cancelled_by(token: &CancelToken) -> Progress<'a> {
        Progress::default().cancel_token(token)
    }

    /// Also cancels the call once `token` is cancelled (checked after the callback).
    pub fn cancel_token(mut self, token: &CancelToken) -> Progress<'a> {
        self.token = Some(token.clone());
        self
    }
}

impl Progress<'_> {
    /// Whether there is anything to call back for.
    pub(crate) fn is_active(&self) -> bool {
        self.callback.is_some() || self.token.is_some()
    }
}

type ProgressFn<'a> = Box<dyn FnMut(u64, u64) -> ControlFlow<()> + 'a>;

/// What the trampoline works with during one call.
struct ProgressState<'p, 'a> {
    progress: &'p mut Progress<'a>,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

unsafe extern "C" fn progress_trampoline(done: u64, total: u64, user: *mut c_void) -> i32 {
    // SAFETY: `user` is the `&mut ProgressState` that `with_progress` passed, alive and
    // accessed only here (on the calling thread, one call at a time) during the call.
    let state = unsafe { &mut *user.cast::<ProgressState<'_, '_>>() };
    if state.panic.is_some() {
        return 1;
    }
    if let Some(callback) = state.progress.callback.as_mut() {
        // A panic must not unwind through the library's frames: catch it, cancel, and
        // resume it once the library has returned.
        match catch_unwind(AssertUnwindSafe(|| callback(done, total))) {
            Ok(ControlFlow::Continue(())) => {}
            Ok(ControlFlow::Break(())) => return 1,
            Err(payload) => {
                state.panic = Some(payload);
                return 1;
            }
        }
    }
    match &state.progress.token {
        Some(token) if token.is_cancelled() => 1,
        _ => 0,
    }
}

/// Calls `call` with the C callback and user pointer to install for `progress`, then
/// resumes the closure's panic, if any, once the library has returned.
pub(crate) fn with_progress<R>(
    mut progress: Progress<'_>,
    call: impl FnOnce(sys::wharf_progress_fn, *mut c_void) -> R,
) -> R {
    if !progress.is_active() {
        return call(None, std::ptr::null_mut());
    }
    let mut state = ProgressState {
        progress: &mut progress,
        panic: None,
    };
    let user = (&mut state as *mut ProgressState<'_, '_>).cast::<c_void>();
    let result = call(Some(progress_trampoline), user);
    if let Some(payload) = state.panic {
        resume_unwind(payload);
    }
    result
}
