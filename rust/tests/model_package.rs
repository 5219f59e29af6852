// SPDX-License-Identifier: Apache-2.0
//! Model packages (the experimental tier; `--features experimental`) on the host backend:
//! a package crafted here (manifest, safetensors shards, a state file, placeholder method
//! files: what `tests/unit/model_package_test.cpp` writes) is checked whole before its
//! first method, which needs the CUDA backend; the refusals before that come back as
//! `wharf::Error`s with the library's codes and messages, and leave nothing behind.
#![cfg(feature = "experimental")]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use wharf::{
    Backend, CancelToken, Code, ConstantMap, Dim, MemoryTag, Model, ModelPackage,
    ModelPackageOptions, Progress, Runtime, RuntimeOptions, Session, SessionOptions, TensorView,
    UpdateOptions,
};

mod common;
use common::{expect_code, host};

/// The valid manifest every test starts from.
const MANIFEST: &str = r#"{
  "format": "wharf-model-package",
  "format_version": 1,
  "name": "tiny",
  "dtype": "float32",
  "max_seq_len": 64,
  "weights": {
    "files": ["weights/model-00001-of-00002.safetensors", "weights/model-00002-of-00002.safetensors"],
    "parameters": [
      {"fqn": "embed.weight", "dtype": "float32", "shape": [8, 4]},
      {"fqn": "norm.weight", "dtype": "bfloat16", "shape": [4]},
      {"fqn": "lm_head.weight", "dtype": "F32", "shape": [8, 4]}
    ]
  },
  "state": [
    {"fqn": "cache.key_0", "dtype": "float32", "shape": [1, 2, 64, 2], "initial": "zeros"},
    {"fqn": "cache.pos", "dtype": "int64", "shape": [1], "initial": {"tensor": "pos0"}}
  ],
  "state_file": "state.safetensors",
  "methods": [
    {"name": "prefill", "file": "methods/prefill.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                {"name": "cache_position", "dtype": "int64", "shape": ["T"]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}],
     "dims": {"T": {"min": 1, "max": 64}}},
    {"name": "decode", "file": "methods/decode.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 1]},
                {"name": "cache_position", "dtype": "int64", "shape": [1]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}]}
  ]
}"#;

/// A safetensors image as the reference lays it out: (name, dtype, shape, bytes), data
/// zero-filled.
fn safetensors(tensors: &[(&str, &str, &str, usize)]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut offset = 0;
    for (i, (name, dtype, shape, bytes)) in tensors.iter().enumerate() {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{offset},{}]}}"#,
            offset + bytes
        ));
        offset += bytes;
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len() + offset, 0);
    out
}

/// A package directory removed on drop.
struct Package {
    base: PathBuf,
    dir: PathBuf,
}

impl Drop for Package {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

impl Package {
    /// Writes a valid package whose manifest `edit` may change.
    fn new(test: &str, edit: impl FnOnce(String) -> String) -> Package {
        let base =
            std::env::temp_dir().join(format!("wharf-rust-pkg-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("tiny.wharf");
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("manifest.json", edit(MANIFEST.to_string()).into_bytes()),
            (
                "weights/model-00001-of-00002.safetensors",
                safetensors(&[
                    ("embed.weight", "F32", "[8,4]", 128),
                    ("norm.weight", "BF16", "[4]", 8),
                ]),
            ),
            (
                "weights/model-00002-of-00002.safetensors",
                safetensors(&[("lm_head.weight", "F32", "[8,4]", 128)]),
            ),
            (
                "state.safetensors",
                safetensors(&[("pos0", "I64", "[1]", 8)]),
            ),
            (
                "methods/prefill.so",
                b"placeholder: the host backend never opens it".to_vec(),
            ),
            ("methods/decode.so", b"placeholder".to_vec()),
        ];
        for (name, data) in files {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).expect("package directory");
            std::fs::write(&p, data).expect("package file");
        }
        Package { base, dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

/// Replaces `from`, which must occur once.
fn replace_once(s: String, from: &str, to: &str) -> String {
    assert_eq!(s.matches(from).count(), 1, "{from}");
    s.replacen(from, to, 1)
}

/// Loads `dir`, expects `code` with every fragment, and checks nothing was left behind.
#[track_caller]
fn refused(
    rt: &Runtime,
    dir: &Path,
    options: &ModelPackageOptions,
    code: Code,
    fragments: &[&str],
) -> wharf::Error {
    // SAFETY: the host backend refuses before any method's code is loaded.
    let err = expect_code(
        unsafe { ModelPackage::load(rt, dir, options) },
        code,
        fragments,
    );
    let stats = rt.memory_stats().expect("memory stats");
    for tag in [MemoryTag::Constants, MemoryTag::State, MemoryTag::Staging] {
        assert_eq!(stats.current_of(tag), 0, "{tag:?} left behind");
    }
    err
}

#[test]
fn a_valid_package_stops_at_its_first_method_on_the_host() {
    let rt = host();
    let package = Package::new("valid", |m| m);
    refused(
        &rt,
        &package.dir,
        &ModelPackageOptions::new(),
        Code::Unsupported,
        &["tiny.wharf", "method 'prefill'", "CUDA backend"],
    );
    // Every option reaches the library and changes nothing about that answer; the weights
    // are never reached, so progress is never reported.
    let options = ModelPackageOptions::new()
        .shim_path("/nonexistent/libwharf_aoti_shim.so")
        .max_session_bytes(1 << 20);
    let mut calls = 0;
    let token = CancelToken::new();
    // SAFETY: as in `refused`.
    let result = unsafe {
        ModelPackage::load_with_progress(
            &rt,
            &package.dir,
            &options,
            Progress::new(|_, _| {
                calls += 1;
                ControlFlow::Continue(())
            })
            .cancel_token(&token),
        )
    };
    expect_code(result, Code::Unsupported, &["tiny.wharf", "CUDA backend"]);
    assert_eq!(calls, 0);
}

#[test]
fn refusals_carry_the_code_and_name_the_fault() {
    let rt = host();
    let opts = ModelPackageOptions::new();

    // No manifest.json: NotFound naming the package.
    let package = Package::new("no-manifest", |m| m);
    std::fs::remove_file(package.path("manifest.json")).unwrap();
    refused(
        &rt,
        &package.dir,
        &opts,
        Code::NotFound,
        &["tiny.wharf", "no manifest.json"],
    );
    refused(
        &rt,
        &package.path("missing.wharf"),
        &opts,
        Code::NotFound,
        &["missing.wharf"],
    );

    // A newer format: Unsupported.
    let package = Package::new("newer", |m| {
        replace_once(m, r#""format_version": 1"#, r#""format_version": 2"#)
    });
    refused(
        &rt,
        &package.dir,
        &opts,
        Code::Unsupported,
        &["format_version 2 is newer than this loader reads (1)"],
    );

    // A listed parameter in no weight file: InvalidArgument naming it.
    let package = Package::new("missing-tensor", |m| m);
    std::fs::write(
        package.path("weights/model-00002-of-00002.safetensors"),
        safetensors(&[]),
    )
    .unwrap();
    refused(
        &rt,
        &package.dir,
        &opts,
        Code::InvalidArgument,
        &[
            "weights.parameters[2]",
            "parameter 'lm_head.weight' is in no weight file",
        ],
    );

    // A malformed field, named with its path in the manifest.
    let package = Package::new("bad-dtype", |m| {
        replace_once(
            m,
            r#"{"name": "input_ids", "dtype": "int64", "shape": [1, 1]}"#,
            r#"{"name": "input_ids", "dtype": "int65", "shape": [1, 1]}"#,
        )
    });
    refused(
        &rt,
        &package.dir,
        &opts,
        Code::InvalidArgument,
        &["manifest.json: methods[1].inputs[0].dtype: 'int65' is not a dtype"],
    );
}

#[test]
fn arguments_are_checked_before_the_library_is_called() {
    let rt = host();
    // SAFETY (each load): refused before any file is read.
    expect_code(
        unsafe { ModelPackage::load(&rt, "a\0b.wharf", &ModelPackageOptions::new()) },
        Code::InvalidArgument,
        &["NUL"],
    );
    expect_code(
        unsafe {
            ModelPackage::load(
                &rt,
                "tiny.wharf",
                &ModelPackageOptions::new().shim_path("shim\0.so"),
            )
        },
        Code::InvalidArgument,
        &["NUL"],
    );
}

/// The README's model package example is the `no_run` doc-test on `ModelPackage` (which
/// `cargo test` compiles): keep them the same.
#[test]
fn the_readme_shows_the_doc_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/model_package.rs")).unwrap();
    let start = source.find("/// ```no_run\n").expect("the doc-test") + "/// ```no_run\n".len();
    let end = start
        + source[start..]
            .find("/// ```\n")
            .expect("the doc-test's end");
    let doc: Vec<&str> = source[start..end]
        .lines()
        .map(|l| {
            l.strip_prefix("/// ")
                .unwrap_or(l.trim_start_matches("///"))
        })
        .collect();
    let doc = doc.join("\n");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("```rust\n{doc}\n```\n")),
        "no ```rust block of README.md is the doc-test on ModelPackage:\n{doc}"
    );
}

/// On a GPU, with `$WHARF_MODEL_PACKAGE` naming the tiny decoder's package
/// (`python3 tools/aoti/make_tiny_package.py tests/data/models/tiny_decoder DIR`): the
/// package's methods through the safe API give PyTorch's greedy tokens
/// (`tests/data/models/tiny_decoder/reference.safetensors`, or `$WHARF_MODEL_DIR`'s), and a
/// store update from the package's own weight file then a swap reaches both methods (a new
/// generation) without changing the next token. It says it skipped otherwise.
#[test]
fn the_tiny_package_follows_pytorch_on_the_gpu() -> wharf::Result<()> {
    let Some(dir) = std::env::var_os("WHARF_MODEL_PACKAGE").map(PathBuf::from) else {
        eprintln!("skipped: set WHARF_MODEL_PACKAGE to a package of the tiny decoder");
        return Ok(());
    };
    let rt = match Runtime::new(&RuntimeOptions::new().backend(Backend::Cuda)) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("skipped: no CUDA runtime ({e})");
            return Ok(());
        }
    };
    let mut last = (0, 0);
    // SAFETY: the tiny decoder's methods, given the reference prompt's ids and positions.
    let package = unsafe {
        ModelPackage::load_with_progress(
            &rt,
            &dir,
            &ModelPackageOptions::new(),
            Progress::new(|done, total| {
                last = (done, total);
                ControlFlow::Continue(())
            }),
        )?
    };
    assert!(last.0 > 0 && last.0 == last.1, "progress ended at {last:?}");
    assert_eq!(package.method_names(), ["prefill", "decode"]);
    let ids = &package.method_inputs("prefill")?[0];
    assert_eq!(ids.name, "input_ids");
    assert!(matches!(&ids.dims[1], Dim::Symbolic { name, .. } if name == "T"));
    assert_eq!(package.method_inputs("decode")?[0].shape(), [1, 1]);
    expect_code(
        package.method("generate"),
        Code::NotFound,
        &["prefill, decode"],
    );
    let prefill = package.method("prefill")?;
    let decode = package.method("decode")?;
    let mut chat = package.new_session(&SessionOptions::new())?;

    let reference_dir = std::env::var_os("WHARF_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/models/tiny_decoder")
        });
    // SAFETY: nothing modifies the file while it is mapped.
    let reference =
        unsafe { ConstantMap::load_safetensors(reference_dir.join("reference.safetensors"))? };
    let prompt = reference.find("prompt")?.to_vec::<i64>()?;
    let want = reference.find("tokens")?.to_vec::<i64>()?;

    let step = |model: &Model, chat: &mut Session, tokens: &[i64], pos: i64| {
        let positions: Vec<i64> = (pos..pos + tokens.len() as i64).collect();
        let inputs = [
            TensorView::from_slice(tokens, &[1, tokens.len() as i64])?,
            TensorView::from_slice(&positions, &[positions.len() as i64])?,
        ];
        let run = model.container().begin_run_with_session(chat)?;
        let outputs = model.run(&run, &inputs)?;
        let vocab = *outputs[0].shape().last().unwrap() as usize;
        let logits = outputs[0].read_to_vec::<f32>()?;
        drop(outputs);
        run.end()?;
        let last = &logits[logits.len() - vocab..];
        wharf::Result::Ok(
            (0..vocab)
                .max_by(|&a, &b| last[a].total_cmp(&last[b]))
                .unwrap() as i64,
        )
    };
    let mut got = vec![step(&prefill, &mut chat, &prompt, 0)?];
    while got.len() < want.len() - 1 {
        let pos = (prompt.len() + got.len() - 1) as i64;
        got.push(step(&decode, &mut chat, &got[got.len() - 1..], pos)?);
    }
    assert_eq!(got, want[..got.len()], "not PyTorch's tokens");

    // The same weights again, through the store: both methods get a new generation, and the
    // conversation goes on to PyTorch's last token.
    let before = (
        prefill.container().generation(),
        decode.container().generation(),
    );
    package
        .store()
        .update_from_file(dir.join("weights/model.safetensors"), &UpdateOptions::new())?;
    package.store().swap()?;
    assert!(prefill.container().generation() > before.0);
    assert!(decode.container().generation() > before.1);
    let pos = (prompt.len() + got.len() - 1) as i64;
    let next = step(&decode, &mut chat, &got[got.len() - 1..], pos)?;
    assert_eq!(next, want[got.len()]);
    // The models and the session outlive the package.
    drop(package);
    chat.reset()?;
    assert_eq!(step(&prefill, &mut chat, &prompt, 0)?, want[0]);
    Ok(())
}
