// SPDX-License-Identifier: Apache-2.0
//! Routing the library's log lines to a Rust callback.

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, RwLock};

use crate::sys;
use crate::types::LogLevel;

type Callback = Arc<dyn Fn(LogLevel, &str) + Send + Sync + 'static>;

/// The installed callback. The C side always gets the same trampoline and a NULL user
/// pointer, so replacing the callback never leaves the library holding a dangling pointer
/// (a line in progress on another thread may still reach the old callback through its
/// own `Arc` clone).
static CALLBACK: RwLock<Option<Callback>> = RwLock::new(None);
/// Serializes installs so the Rust and C sides change together.
static INSTALL: Mutex<()> = Mutex::new(());

unsafe extern "C" fn trampoline(
    level: sys::wharf_log_level,
    message: *const c_char,
    _user: *mut c_void,
) {
    let cb = match CALLBACK.read() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let Some(cb) = cb else { return };
    if message.is_null() {
        return;
    }
    // SAFETY: the library passes a NUL-terminated line valid during this call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    // A panic must not unwind into the library (possibly one of its worker threads).
    let _ = catch_unwind(AssertUnwindSafe(|| cb(LogLevel::from_raw(level), &text)));
}

/// Routes the library's log lines at `min_level` and above to `callback`
/// (process-wide), replacing any earlier callback.
///
/// The crate depends on no logging framework; an application that uses one forwards the
/// lines itself. With the `log` crate:
///
/// ```ignore
/// wharf::set_log_callback(wharf::LogLevel::Info, |level, line| match level {
///     wharf::LogLevel::Error => log::error!(target: "wharf", "{line}"),
///     wharf::LogLevel::Warn => log::warn!(target: "wharf", "{line}"),
///     wharf::LogLevel::Info => log::info!(target: "wharf", "{line}"),
///     _ => log::debug!(target: "wharf", "{line}"),
/// });
/// ```
///
/// and with `tracing`, the same match on `tracing::error!(target: "wharf", "{line}")` and
/// its siblings. (The example is not compiled: this crate cannot depend on either.)
///
/// The callback may be called from any thread, including the library's worker threads,
/// and concurrently. It must return quickly and must not call into this crate (the
/// library may be logging while it holds its own locks). A panic in it is caught and the
/// line dropped.
pub fn set_log_callback<F>(min_level: LogLevel, callback: F)
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let _install = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    *CALLBACK.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(callback));
    // SAFETY: the trampoline is a valid callback for the life of the process and ignores
    // the user pointer.
    unsafe {
        sys::wharf_log_set_callback(Some(trampoline), min_level.to_raw(), std::ptr::null_mut())
    };
}

/// Restores the library's default logging: lines at WARN and above to stderr (the
/// environment variable `WHARF_LOG_LEVEL=debug|info|warn|error|off` changes the level).
pub fn reset_log_callback() {
    let _install = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: NULL restores the default.
    unsafe { sys::wharf_log_set_callback(None, sys::WHARF_LOG_WARN, std::ptr::null_mut()) };
    *CALLBACK.write().unwrap_or_else(|p| p.into_inner()) = None;
}
