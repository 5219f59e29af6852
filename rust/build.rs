//! Links libwharf: from `WHARF_LIB_DIR` if set, else `../build` (the repository's default
//! build directory). An rpath to that directory is embedded in test and binary targets so
//! they run without `LD_LIBRARY_PATH`.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=WHARF_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = match env::var_os("WHARF_LIB_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => manifest.join("..").join("build"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("libwharf.so").exists() && !dir.join("libwharf.dylib").exists() {
        println!(
            "cargo:warning=libwharf not found in {} (set WHARF_LIB_DIR to the library's build directory)",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=wharf");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    // For crates that depend on this one (`links = "wharf"`): DEP_WHARF_LIB_DIR.
    println!("cargo:lib_dir={}", dir.display());
}
