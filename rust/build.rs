// SPDX-License-Identifier: Apache-2.0
//! Finds and links libwharf (`libwharf.so.1`), in this order:
//!
//! 1. `WHARF_LIB_DIR`: a directory holding `libwharf.so` (a build directory, or
//!    `<prefix>/lib`). It overrides everything else.
//! 2. `pkg-config` (the command, `$PKG_CONFIG` if set; no crates): `wharf.pc` from an
//!    installed prefix, found through `PKG_CONFIG_PATH` or the system's search path.
//! 3. Inside the repository (`../include/wharf/wharf.h` beside this crate): `../build`, its
//!    default build directory. From a packaged crate (crates.io, `cargo package`): the
//!    dynamic linker's own search path (`-lwharf` with no directory), with a warning.
//!
//! Linking: `-L <dir> -lwharf`, which Cargo also applies when linking the crates that
//! depend on this one. Loading at run time: an rpath to `<dir>` is embedded in this
//! crate's own tests, examples and binaries only (Cargo offers no way to add one to a
//! dependent's binaries). A dependent crate therefore either relies on a system install
//! (a directory in the dynamic loader's search path) or embeds the rpath itself, from its
//! own `build.rs`, with the directory this script exports (`links = "wharf"`) as
//! `DEP_WHARF_LIB_DIR`:
//!
//! ```ignore
//! // build.rs of a crate that depends on `wharf`
//! fn main() {
//!     if let Ok(dir) = std::env::var("DEP_WHARF_LIB_DIR") {
//!         println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
//!     }
//! }
//! ```
//!
//! `DEP_WHARF_INCLUDE_DIR` names the directory of `wharf/wharf.h` when it is known, and
//! `DEP_WHARF_FOUND_BY` says which way found the library (`WHARF_LIB_DIR`, `pkg-config`,
//! `../build` or `system`; no `DEP_WHARF_LIB_DIR` for `system`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest library this binding can use (it declares 0.3 functions).
const MIN_VERSION: (u32, u32) = (0, 3);

fn main() {
    for var in [
        "WHARF_LIB_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));

    let in_repository = manifest.join("../include/wharf/wharf.h").exists();
    let (lib_dir, include_dir, found_by) = match env::var_os("WHARF_LIB_DIR") {
        Some(d) if !d.is_empty() => {
            let dir = PathBuf::from(d);
            // A build directory of the repository, or <prefix>/lib.
            let include = [dir.join("../include"), manifest.join("../include")]
                .into_iter()
                .find(|i| i.join("wharf/wharf.h").exists());
            (dir, include, "WHARF_LIB_DIR")
        }
        _ => match pkg_config() {
            Some((lib, include)) => (lib, include, "pkg-config"),
            None if in_repository => (
                manifest.join("..").join("build"),
                Some(manifest.join("..").join("include")),
                "../build",
            ),
            None => {
                // A packaged crate has no build tree beside it: a system install (a folder
                // of the dynamic linker's search path, e.g. /usr/local/lib after ldconfig).
                println!(
                    "cargo:warning=libwharf not found by WHARF_LIB_DIR or pkg-config (no wharf.pc on PKG_CONFIG_PATH): linking -lwharf from the system's library path"
                );
                println!("cargo:rustc-link-lib=dylib=wharf");
                println!("cargo:found_by=system");
                return;
            }
        },
    };
    let lib_dir = lib_dir.canonicalize().unwrap_or(lib_dir);
    if !lib_dir.join("libwharf.so").exists() && !lib_dir.join("libwharf.dylib").exists() {
        println!(
            "cargo:warning=libwharf not found in {} (found by {found_by}): set WHARF_LIB_DIR to the library's directory, or PKG_CONFIG_PATH to the directory of an installed wharf.pc",
            lib_dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=wharf");
    // This crate's own tests, examples and binaries run without LD_LIBRARY_PATH.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    // For crates that depend on this one (`links = "wharf"`): DEP_WHARF_LIB_DIR,
    // DEP_WHARF_INCLUDE_DIR, DEP_WHARF_FOUND_BY.
    println!("cargo:lib_dir={}", lib_dir.display());
    if let Some(include) = include_dir {
        let include = include.canonicalize().unwrap_or(include);
        println!("cargo:include_dir={}", include.display());
    }
    println!("cargo:found_by={found_by}");
}

/// Asks `pkg-config` for wharf's library and include directories. `None` when the command
/// is missing or does not know wharf (then the next way is tried, silently); a library
/// older than [`MIN_VERSION`] is still used, with a warning (`Runtime::new` checks the ABI).
fn pkg_config() -> Option<(PathBuf, Option<PathBuf>)> {
    let cmd = env::var_os("PKG_CONFIG").unwrap_or_else(|| "pkg-config".into());
    let query = |args: &[&str]| -> Option<String> {
        let out = Command::new(&cmd).args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!text.is_empty()).then_some(text)
    };
    let version = query(&["--modversion", "wharf"])?;
    let lib = PathBuf::from(query(&["--variable=libdir", "wharf"])?);
    let include = query(&["--variable=includedir", "wharf"])
        .map(PathBuf::from)
        .filter(|i| Path::new(i).join("wharf/wharf.h").exists());
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if found < MIN_VERSION {
        println!(
            "cargo:warning=pkg-config found wharf {version} in {}, older than the {}.{} this binding needs",
            lib.display(),
            MIN_VERSION.0,
            MIN_VERSION.1
        );
    }
    Some((lib, include))
}
