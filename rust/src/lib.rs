// SPDX-License-Identifier: Apache-2.0
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
//! * [`WeightStore`]: one copy of each weight shared by the containers created with it
//!   ([`ContainerOptions::store`]), updated and swapped across all of them at once.
//! * [`Session`]: one conversation's mutable state (KV cache, recurrent state) declared by
//!   containers ([`ContainerOptions::state`]), with reset, fork and budgets.
//! * [`Run`]: a lease pinning one generation (and a session's state) while work reads it;
//!   it borrows its container, so the container cannot be dropped while a run is open, and
//!   mutably its session, so a session has one run at a time.
//!
//! * With the cargo feature `experimental` (off by default, like `WHARF_EXPERIMENTAL` in
//!   C): `Model`, a PyTorch AOTInductor-compiled model that Wharf executes over a
//!   container it creates (`Model::run`, outputs that borrow the run), and index
//!   access (`Container::find_constant`, `Run::tensor_at`, ...), and `ModelPackage`, an
//!   exported model package loaded in one call (its methods as `Model`s over one weight
//!   store, sessions over all of them). These bind functions of
//!   `wharf.h`'s experimental tier, which may change in any minor release.
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
//! Sessions and a weight store (library 0.2.0):
//!
//! ```
//! # fn main() -> wharf::Result<()> {
//! use wharf::{Backend, Container, ContainerOptions, ConstantMap, DType, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl, WeightStore};
//!
//! let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
//! let store = WeightStore::new(&rt)?;
//! let embed = [0.5f32; 8];
//! let mut map = ConstantMap::new()?;
//! map.set_slice("embed", &[8], &embed)?;
//! let kv = StateDecl::new("kv", DType::F32, &[4]);
//! let options = ContainerOptions::new().store(&store).state(kv);
//! let prefill = Container::from_map_with_options(&rt, &map, &options.clone().name("prefill"))?;
//! let decode = Container::from_map_with_options(&rt, &map, &options.name("decode"))?;
//! assert_eq!(store.stats()?.saved_bytes, 32); // one copy of "embed"
//!
//! let mut conversation = Session::new(&rt, &[&prefill, &decode], &SessionOptions::new())?;
//! let run = prefill.begin_run_with_session(&mut conversation)?;
//! assert_eq!(run.read_to_vec::<f32>("kv")?, [0.0; 4]); // this session's buffer
//! run.end()?;
//! # Ok(())
//! # }
//! ```

pub mod sys;

#[cfg(feature = "experimental")]
mod arena;
mod constant_map;
mod container;
mod container_options;
mod error;
#[cfg(feature = "experimental")]
mod graphs;
mod log;
#[cfg(feature = "experimental")]
mod model;
#[cfg(feature = "experimental")]
mod model_package;
#[cfg(feature = "experimental")]
mod offload;
mod progress;
#[cfg(feature = "experimental")]
mod replica;
mod runtime;
mod session;
mod store;
mod tensor;
mod types;

use std::ffi::CStr;

#[cfg(feature = "experimental")]
pub use arena::StateArenaStats;
pub use constant_map::{ConstantMap, Entries};
pub use container::{
    ConstantDecl, ConstantInfo, Container, FoldRun, Run, StateInfo, UpdateOptions,
};
pub use container_options::{ContainerOptions, StateDecl};
pub use error::{Code, Error, Result};
#[cfg(feature = "experimental")]
pub use graphs::{GraphBucket, GraphOptions, GraphStats};
pub use log::{reset_log_callback, set_log_callback};
#[cfg(feature = "experimental")]
pub use model::{Model, ModelOptions, OutputView};
#[cfg(feature = "experimental")]
pub use model_package::{Dim, ModelPackage, ModelPackageOptions, TensorSpec};
#[cfg(feature = "experimental")]
pub use offload::{
    H2dSource, OffloadLayer, OffloadRun, Offloader, OffloaderBudget, OffloaderOptions,
};
pub use progress::{CancelToken, Progress};
#[cfg(feature = "experimental")]
pub use replica::{RankOptions, ReplicaGroup, ReplicaGroupId, ReplicaGroupStats};
pub use runtime::{DeviceInfo, MemoryStats, Runtime, RuntimeOptions};
pub use session::{Session, SessionOptions};
pub use store::{WeightStore, WeightStoreStats};
pub use tensor::{FoldTensor, RawTensor, TensorView, TensorViewMut};
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
