//! Safe Rust binding of Wharf, a runtime that keeps an inference model's weights
//! (constants) on a device and lets a serving process change them while it serves.
//!
//! It wraps the C API of `libwharf.so.1` (`include/wharf/wharf.h`, declared by hand in
//! [`sys`]):
//!
//! * [`Runtime`]: one device (a CUDA GPU or the host backend), with memory accounting.
//! * [`ConstantMap`]: names mapped to tensors in memory the map *borrows* (the lifetime
//!   `'a` ties the borrowed slices to the map), or a memory-mapped safetensors file.
//! * [`Container`]: one model's constants in copy-on-write generations: updates write the
//!   inactive generation (or, opt-in, the active one in place), [`Container::swap`]
//!   publishes it in O(1).
//! * [`Run`]: a lease pinning one generation while work reads it; it borrows its
//!   container, so the container cannot be dropped while a run is open.
//!
//! Every fallible call returns [`Result<T, wharf::Error>`](Error), carrying the library's
//! [`Code`] and message.
//!
//! ```
//! # fn main() -> wharf::Result<()> {
//! use wharf::{Backend, Container, ConstantDecl, ConstantMap, DType, Runtime, RuntimeOptions, UpdateOptions};
//!
//! let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
//! let model = Container::new(&rt, "demo", &[ConstantDecl::new("w", DType::F32, &[2])])?;
//! let weights = [1.0f32, 2.0];
//! let mut map = ConstantMap::new()?;
//! map.set_slice("w", &[2], &weights)?;
//! model.update(&map, &UpdateOptions::new())?;
//! model.swap()?;
//! let run = model.begin_run()?;
//! assert_eq!(run.tensor("w")?.as_slice::<f32>()?, &[1.0, 2.0]);
//! run.end()?;
//! # Ok(())
//! # }
//! ```
//!
//! Sessions do not exist in the C API yet; runs are begun without one.

pub mod sys;

mod constant_map;
mod container;
mod error;
mod log;
mod runtime;
mod tensor;
mod types;

use std::ffi::CStr;

pub use constant_map::{ConstantMap, Entries};
pub use container::{ConstantDecl, ConstantInfo, Container, FoldRun, Run, UpdateOptions};
pub use error::{Code, Error, Result};
pub use log::{reset_log_callback, set_log_callback};
pub use runtime::{DeviceInfo, MemoryStats, Runtime, RuntimeOptions};
pub use tensor::{FoldTensor, RawTensor, TensorView};
pub use types::{Backend, DType, Device, Element, LogLevel, MemoryTag, Placement, UpdateTarget};

/// The ABI major version this binding was written for. [`check_version`] (called by
/// [`Runtime::new`]) refuses a library whose `wharf_abi_version()` differs.
pub const ABI_VERSION: u32 = sys::WHARF_ABI_VERSION;

/// The maximum number of dimensions of a tensor.
pub const MAX_DIMS: usize = sys::WHARF_MAX_DIMS;

/// The loaded library's version, `"MAJOR.MINOR.PATCH"`.
pub fn version() -> &'static str {
    // SAFETY: wharf_version returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::wharf_version()) }
        .to_str()
        .unwrap_or("?")
}

/// The loaded library's ABI major version.
pub fn library_abi_version() -> u32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { sys::wharf_abi_version() }
}

/// Checks that the loaded library speaks this binding's ABI ([`ABI_VERSION`]).
/// [`Runtime::new`] calls it; call it yourself to fail early. Errors:
/// [`Code::FailedPrecondition`] naming both versions.
pub fn check_version() -> Result<()> {
    check_abi(library_abi_version())
}

fn check_abi(library: u32) -> Result<()> {
    if library == ABI_VERSION {
        Ok(())
    } else {
        Err(Error::new(
            Code::FailedPrecondition,
            format!("libwharf ABI version {library} does not match the Rust binding's ABI version {ABI_VERSION}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_check_names_both_versions() {
        assert!(check_version().is_ok());
        assert_eq!(library_abi_version(), ABI_VERSION);
        let err = check_abi(ABI_VERSION + 1).unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition);
        assert!(err.message().contains("ABI version 2"), "{err}");
        assert!(err.message().contains("ABI version 1"), "{err}");
        let parts: Vec<u32> = version().split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], sys::WHARF_VERSION_MAJOR);
    }
}
