#!/usr/bin/env bash
# A Rust crate built outside the source tree against an installed prefix, as a user would:
#   rust/consumer_test.sh BUILD_DIR     (a fully built tree: `cmake --install` must work)
# The wharf crate is copied next to the app (vendored: no ../build beside it), the library
# is found through pkg-config only (no WHARF_LIB_DIR), and the app embeds the rpath from
# its own build.rs with DEP_WHARF_LIB_DIR, so its binary runs without LD_LIBRARY_PATH. The
# prefix is then moved and the app built and run again from the moved prefix.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: rust/consumer_test.sh BUILD_DIR}" && pwd)
CARGO=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null

mkdir -p "$WORK/vendor/wharf" "$WORK/app/src"
cp -r "$HERE/Cargo.toml" "$HERE/build.rs" "$HERE/README.md" "$HERE/src" "$WORK/vendor/wharf/"
cat >"$WORK/app/Cargo.toml" <<'EOF'
[package]
name = "wharf-consumer"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
wharf = { path = "../vendor/wharf" }
EOF
cat >"$WORK/app/build.rs" <<'EOF'
// The rpath a dependent of `wharf` embeds itself (the wharf crate's own rpath reaches only
// its own targets): DEP_WHARF_LIB_DIR comes from its build script (`links = "wharf"`).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_WHARF_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_WHARF_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    // The test's own check: the wharf crate found the library through pkg-config.
    assert_eq!(std::env::var("DEP_WHARF_FOUND_BY").as_deref(), Ok("pkg-config"));
}
EOF
cat >"$WORK/app/src/main.rs" <<'EOF'
use wharf::{Backend, ConstantMap, Container, Runtime, RuntimeOptions, UpdateOptions};

fn main() -> wharf::Result<()> {
    let path = std::env::temp_dir().join(format!("wharf-consumer-{}.safetensors", std::process::id()));
    let weights = [1.0f32, 2.0, 3.0, 4.0];
    let mut checkpoint = ConstantMap::new()?;
    checkpoint.set_slice("w", &[4], &weights)?;
    checkpoint.save_safetensors(&path)?;
    let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    // SAFETY: nothing modifies the file while it is mapped.
    let file = unsafe { ConstantMap::load_safetensors(&path)? };
    let model = Container::from_map(&rt, &file, "consumer")?;
    let fresh = [5.0f32; 4];
    let mut update = ConstantMap::new()?;
    update.set_slice("w", &[4], &fresh)?;
    model.update(&update, &UpdateOptions::new())?;
    model.swap()?;
    let run = model.begin_run()?;
    assert_eq!(run.tensor("w")?.as_slice::<f32>()?, &fresh);
    run.end()?;
    std::fs::remove_file(&path).ok();
    println!("wharf {} from {}: loaded, updated, swapped, ran", wharf::version(), env!("WHARF_FOUND"));
    Ok(())
}
EOF

build_and_run() { # prefix
  local pc
  pc=$(dirname "$(find "$1" -name wharf.pc | head -n1)")
  (
    cd "$WORK/app"
    export PKG_CONFIG_PATH="$pc" CARGO_TARGET_DIR="$WORK/target" WHARF_FOUND="$1"
    env -u WHARF_LIB_DIR -u LD_LIBRARY_PATH "$CARGO" build --offline --quiet
    # The binary itself, without cargo and without LD_LIBRARY_PATH: the rpath finds the library.
    env -u LD_LIBRARY_PATH "$WORK/target/debug/wharf-consumer"
    # The rpath is the app's own, to the installed prefix.
    readelf -d "$WORK/target/debug/wharf-consumer" | grep -E "R(UN)?PATH" | grep -q "$1" || {
      echo "rust/consumer_test.sh: no rpath to $1 in the app" >&2
      exit 1
    }
    # It loads the installed copy, not the build tree's.
    if ldd "$WORK/target/debug/wharf-consumer" | grep -q "libwharf.so.1 => $BUILD/"; then
      echo "rust/consumer_test.sh: the app loaded libwharf from the build tree" >&2
      exit 1
    fi
  )
}
build_and_run "$WORK/prefix"
mv "$WORK/prefix" "$WORK/moved"
rm -rf "$WORK/target"
build_and_run "$WORK/moved"
echo "rust consumer: built and ran against an installed prefix through pkg-config, and after moving it"
