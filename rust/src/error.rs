// SPDX-License-Identifier: Apache-2.0
//! Errors: [`Error`] and its [`Code`].

use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// The kind of a failure: the library's `wharf_code`, plus [`Code::Callback`] for a
/// failure of a Rust callback the binding ran for the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// An argument is malformed (NULL, wrong shape, bad dtype).
    InvalidArgument,
    /// A named thing does not exist (FQN, file).
    NotFound,
    /// A name is taken (duplicate FQN in a map).
    AlreadyExists,
    /// A device or host allocation failed, or the device memory limit was hit.
    OutOfMemory,
    /// A budget other than memory was exceeded.
    ResourceExhausted,
    /// The object is not in a state that allows the call.
    FailedPrecondition,
    /// The object is in use by another caller; try later.
    Busy,
    /// Not available in this build or on this backend.
    Unsupported,
    /// The CUDA driver or runtime reported an error.
    DeviceError,
    /// Reading or writing a file failed.
    IoError,
    /// A file's contents are malformed.
    DataCorrupt,
    /// A bug in Wharf.
    Internal,
    /// The caller's progress callback cancelled the call; nothing changed.
    Cancelled,
    /// Not a library code: a fold callback passed to
    /// [`Container::update_with_fold`](crate::Container::update_with_fold) returned an
    /// error (available from [`std::error::Error::source`]).
    Callback,
    /// A code this binding does not know (from a newer library).
    Unknown(u32),
}

impl Code {
    /// Converts a raw `wharf_code`; `None` for `WHARF_OK`.
    pub fn from_raw(raw: sys::wharf_code) -> Option<Code> {
        Some(match raw {
            sys::WHARF_OK => return None,
            sys::WHARF_INVALID_ARGUMENT => Code::InvalidArgument,
            sys::WHARF_NOT_FOUND => Code::NotFound,
            sys::WHARF_ALREADY_EXISTS => Code::AlreadyExists,
            sys::WHARF_OUT_OF_MEMORY => Code::OutOfMemory,
            sys::WHARF_RESOURCE_EXHAUSTED => Code::ResourceExhausted,
            sys::WHARF_FAILED_PRECONDITION => Code::FailedPrecondition,
            sys::WHARF_BUSY => Code::Busy,
            sys::WHARF_UNSUPPORTED => Code::Unsupported,
            sys::WHARF_DEVICE_ERROR => Code::DeviceError,
            sys::WHARF_IO_ERROR => Code::IoError,
            sys::WHARF_DATA_CORRUPT => Code::DataCorrupt,
            sys::WHARF_INTERNAL => Code::Internal,
            sys::WHARF_CANCELLED => Code::Cancelled,
            other => Code::Unknown(other),
        })
    }

    /// The raw `wharf_code` that carries this code through the C API (a fold callback's
    /// status): [`Code::Callback`] crosses as `WHARF_FAILED_PRECONDITION`.
    pub(crate) fn to_raw(self) -> sys::wharf_code {
        match self {
            Code::InvalidArgument => sys::WHARF_INVALID_ARGUMENT,
            Code::NotFound => sys::WHARF_NOT_FOUND,
            Code::AlreadyExists => sys::WHARF_ALREADY_EXISTS,
            Code::OutOfMemory => sys::WHARF_OUT_OF_MEMORY,
            Code::ResourceExhausted => sys::WHARF_RESOURCE_EXHAUSTED,
            Code::FailedPrecondition | Code::Callback => sys::WHARF_FAILED_PRECONDITION,
            Code::Busy => sys::WHARF_BUSY,
            Code::Unsupported => sys::WHARF_UNSUPPORTED,
            Code::DeviceError => sys::WHARF_DEVICE_ERROR,
            Code::IoError => sys::WHARF_IO_ERROR,
            Code::DataCorrupt => sys::WHARF_DATA_CORRUPT,
            Code::Internal => sys::WHARF_INTERNAL,
            Code::Cancelled => sys::WHARF_CANCELLED,
            Code::Unknown(raw) => raw,
        }
    }

    /// The name the library uses for the code (`"INVALID_ARGUMENT"`); `"CALLBACK"` for
    /// [`Code::Callback`] and `"UNKNOWN"` for codes the library does not know either.
    pub fn name(self) -> &'static str {
        let raw = match self {
            Code::InvalidArgument => sys::WHARF_INVALID_ARGUMENT,
            Code::NotFound => sys::WHARF_NOT_FOUND,
            Code::AlreadyExists => sys::WHARF_ALREADY_EXISTS,
            Code::OutOfMemory => sys::WHARF_OUT_OF_MEMORY,
            Code::ResourceExhausted => sys::WHARF_RESOURCE_EXHAUSTED,
            Code::FailedPrecondition => sys::WHARF_FAILED_PRECONDITION,
            Code::Busy => sys::WHARF_BUSY,
            Code::Unsupported => sys::WHARF_UNSUPPORTED,
            Code::DeviceError => sys::WHARF_DEVICE_ERROR,
            Code::IoError => sys::WHARF_IO_ERROR,
            Code::DataCorrupt => sys::WHARF_DATA_CORRUPT,
            Code::Internal => sys::WHARF_INTERNAL,
            Code::Cancelled => sys::WHARF_CANCELLED,
            Code::Callback => return "CALLBACK",
            Code::Unknown(raw) => raw,
        };
        // SAFETY: wharf_code_name returns a static NUL-terminated string for any value.
        let name = unsafe { CStr::from_ptr(sys::wharf_code_name(raw)) };
        name.to_str().unwrap_or("UNKNOWN")
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error reported by the library, by the binding's own argument checks (which use the
/// library's codes), or by a callback.
pub struct Error {
    code: Code,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// An error with a code, for a fold callback to return
    /// ([`Container::update_with_fold`](crate::Container::update_with_fold)): the binding
    /// hands the library a status with this code and message (`wharf_status_create`), and
    /// the update fails with that code and the message after the library's context
    /// (`"container 'm': fold callback: "`).
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Code::InvalidArgument, message)
    }

    pub(crate) fn with_source(
        mut self,
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    ) -> Error {
        self.source = Some(source);
        self
    }

    /// What kind of failure this is.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The message, naming the object and the value at fault.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Converts a `wharf_status*`, taking ownership: the message is copied and the status
    /// freed. NULL is success.
    ///
    /// # Safety
    ///
    /// `status` must be NULL or a status returned by the library and not yet freed.
    pub(crate) unsafe fn check(status: *mut sys::wharf_status) -> Result<(), Error> {
        if status.is_null() {
            return Ok(());
        }
        // SAFETY: the caller passes a live status; its message lives until it is freed,
        // which happens after the copy.
        let err = unsafe {
            let code = Code::from_raw(sys::wharf_status_code(status)).unwrap_or(Code::Internal);
            let message = CStr::from_ptr(sys::wharf_status_message(status))
                .to_string_lossy()
                .into_owned();
            sys::wharf_status_free(status);
            Error::new(code, message)
        };
        Err(err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("code", &self.code).field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `Result<T, wharf::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
