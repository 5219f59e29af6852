// SPDX-License-Identifier: Apache-2.0
// The rpath a dependent of `wharf` embeds itself (the wharf crate's own rpath reaches only
// its own targets): DEP_WHARF_LIB_DIR comes from its build script (`links = "wharf"`).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_WHARF_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_WHARF_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    // The test's own check: the wharf crate found the library through pkg-config.
    assert_eq!(
        std::env::var("DEP_WHARF_FOUND_BY").as_deref(),
        Ok("pkg-config")
    );
}
