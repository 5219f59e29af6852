// SPDX-License-Identifier: Apache-2.0
//! Models and index access (the experimental tier; `--features experimental`). Without a
//! GPU: what loading refuses, options, index access. With one (a CUDA runtime can be
//! created), `tiny_decoder_follows_pytorch_on_the_gpu` runs the committed tiny decoder
//! through the safe API and compares its greedy tokens with PyTorch's; it says it skipped
//! otherwise.
#![cfg(feature = "experimental")]

use std::path::PathBuf;

use wharf::{
    Backend, Code, ConstantMap, Container, ContainerOptions, DType, Device, Model, ModelOptions,
    Runtime, RuntimeOptions, Session, SessionOptions, StateDecl, TensorView, UpdateOptions,
    WeightStore,
};

mod common;
use common::{expect_code, host};

/// The committed tiny decoder (`tests/data/models/tiny_decoder`), or `$WHARF_MODEL_DIR`.
fn model_dir() -> PathBuf {
    std::env::var_os("WHARF_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/models/tiny_decoder")
        })
}

#[test]
fn loading_on_the_host_backend_is_unsupported_and_names_cuda() -> wharf::Result<()> {
    let rt = host();
    let weights = ConstantMap::new()?;
    let so = model_dir().join("tiny_decoder.so");
    // SAFETY: the host backend refuses before opening the file.
    let err = expect_code(
        unsafe { Model::load(&rt, &so, &weights, &ModelOptions::new()) },
        Code::Unsupported,
        &["CUDA", "host backend"],
    );
    assert!(err.message().contains("tiny_decoder.so"), "{err}");
    // Every option reaches the library and changes nothing about that answer.
    let store = WeightStore::new(&rt)?;
    let options = ModelOptions::new()
        .name("tiny")
        .store(&store)
        .max_session_bytes(1 << 20)
        .shim_path("/nonexistent/libwharf_aoti_shim.so");
    // SAFETY: as above.
    expect_code(
        unsafe { Model::load(&rt, "/nonexistent/model.so", &weights, &options) },
        Code::Unsupported,
        &["CUDA"],
    );
    // Nothing was left behind: no constants, no containers in the store.
    assert_eq!(store.stats()?.num_unique_constants, 0);
    assert_eq!(
        rt.memory_stats()?.current_of(wharf::MemoryTag::Constants),
        0
    );
    Ok(())
}

#[test]
fn model_options_are_checked_before_the_library_is_called() -> wharf::Result<()> {
    let (rt, other) = (host(), host());
    let weights = ConstantMap::new()?;
    // SAFETY (each load): refused before any file is opened.
    expect_code(
        unsafe { Model::load(&rt, "m.so", &weights, &ModelOptions::new().name("a\0b")) },
        Code::InvalidArgument,
        &["NUL"],
    );
    expect_code(
        unsafe {
            Model::load(
                &rt,
                "m.so",
                &weights,
                &ModelOptions::new().shim_path("shim\0.so"),
            )
        },
        Code::InvalidArgument,
        &["NUL"],
    );
    expect_code(
        unsafe { Model::load(&rt, "m\0.so", &weights, &ModelOptions::new()) },
        Code::InvalidArgument,
        &["NUL"],
    );
    let store = WeightStore::new(&other)?;
    expect_code(
        unsafe { Model::load(&rt, "m.so", &weights, &ModelOptions::new().store(&store)) },
        Code::InvalidArgument,
        &["another runtime"],
    );
    // The options are plain values: clone and reuse them.
    let o = ModelOptions::new().name("x").max_session_bytes(7);
    let _copy = o.clone();
    Ok(())
}

#[test]
fn index_access_and_has_staged() -> wharf::Result<()> {
    let rt = host();
    let (a, b) = ([1.0f32; 2], [2.0f32; 3]);
    let mut map = ConstantMap::new()?;
    map.set_slice("a", &[2], &a)?;
    map.set_slice("b", &[3], &b)?;
    let c = Container::from_map_with_options(
        &rt,
        &map,
        &ContainerOptions::new()
            .name("m")
            .state(StateDecl::new("kv", DType::F32, &[4]))
            .state(StateDecl::new("pos", DType::I64, &[1])),
    )?;
    assert_eq!(
        (c.find_constant("a"), c.find_constant("b")),
        (Some(0), Some(1))
    );
    assert_eq!(c.find_constant("kv"), None);
    assert_eq!(c.find_constant("a\0"), None);
    assert_eq!(
        (c.find_state("kv"), c.find_state("pos")),
        (Some(0), Some(1))
    );
    assert_eq!(c.find_state("a"), None);
    assert!(!c.has_staged());
    let fresh = [5.0f32; 2];
    let mut update = ConstantMap::new()?;
    update.set_slice("a", &[2], &fresh)?;
    c.update(&update, &UpdateOptions::new())?;
    assert!(c.has_staged());
    c.swap()?;
    assert!(!c.has_staged());

    let mut s = Session::new(&rt, &[&c], &SessionOptions::new())?;
    let mut run = c.begin_run_with_session(&mut s)?;
    let b_at = c.find_constant("b").unwrap();
    assert_eq!(run.tensor_at(b_at)?.as_slice::<f32>()?, &b);
    assert_eq!(run.tensor_at(0)?.as_slice::<f32>()?, &fresh);
    expect_code(run.tensor_at(2), Code::InvalidArgument, &[]);
    let pos = c.find_state("pos").unwrap();
    run.state_mut_at(pos)?.copy_from_slice(&[42i64])?;
    assert_eq!(run.state_at(pos)?.as_slice::<i64>()?, &[42]);
    assert_eq!(run.state_at(0)?.as_slice::<f32>()?, &[0.0; 4]);
    expect_code(run.state_at(2), Code::InvalidArgument, &[]);
    expect_code(run.state_mut_at(2), Code::InvalidArgument, &[]);
    run.end()?;

    // A container without states has none to index.
    let plain = Container::from_map(&rt, &map, "plain")?;
    let mut run = plain.begin_run()?;
    expect_code(run.state_at(0), Code::InvalidArgument, &["0 states"]);
    expect_code(run.state_mut_at(0), Code::InvalidArgument, &["0 states"]);
    run.end()?;
    Ok(())
}

#[test]
fn thread_safety_markers() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
    send_sync::<ModelOptions<'_>>();
    send_sync::<wharf::OutputView<'_>>();
}

/// The C sequence of `tests/gpu/model_api_gpu_test.cpp` through the safe API: weights
/// from the safetensors file plus the KV caches' shapes and zero initial values, the
/// model, a session, prefill and greedy decode steps with host inputs (copied to the
/// device by Wharf), outputs read back with `read_to_vec`; the tokens equal PyTorch's.
/// Then a hot update from host memory and a swap: the model serves the new generation.
#[test]
fn tiny_decoder_follows_pytorch_on_the_gpu() -> wharf::Result<()> {
    let rt = match Runtime::new(&RuntimeOptions::new().backend(Backend::Cuda)) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("skipped: no CUDA runtime ({e})");
            return Ok(());
        }
    };
    let dir = model_dir();
    const CACHE: [i64; 4] = [1, 4, 64, 16];
    let zeros = vec![0.0f32; 4 * 64 * 16];
    // SAFETY: nothing modifies the files while they are mapped.
    let mut weights =
        unsafe { ConstantMap::load_safetensors(dir.join("tiny_decoder.safetensors"))? };
    for name in [
        "layers.0.k_cache",
        "layers.0.v_cache",
        "layers.1.k_cache",
        "layers.1.v_cache",
    ] {
        weights.set_slice(name, &CACHE, &zeros)?;
    }
    // SAFETY: the committed AOTInductor model; its inputs below are the prompt's token ids
    // and positions within the compiled ranges.
    let loaded = unsafe {
        Model::load(
            &rt,
            dir.join("tiny_decoder.so"),
            &weights,
            &ModelOptions::new().name("tiny"),
        )
    };
    let model = match loaded {
        Err(e) if e.message().contains("GLIBC") => {
            eprintln!("skipped: the compiled model needs a newer C library: {e}");
            return Ok(());
        }
        other => other?,
    };
    assert_eq!((model.num_inputs(), model.num_outputs()), (2, 1));
    assert_eq!(model.name(), "tiny");
    assert_eq!(model.input_names().len(), 2);
    assert_eq!(model.container().states()?.len(), 4);

    // SAFETY: as above.
    let reference = unsafe { ConstantMap::load_safetensors(dir.join("reference.safetensors"))? };
    let prompt = reference.find("prompt")?.to_vec::<i64>()?;
    let want = reference.find("tokens")?.to_vec::<i64>()?;
    let plen = prompt.len() as i64;

    let mut chat = Session::new(&rt, &[model.container()], &SessionOptions::new())?;
    let mut got = Vec::new();
    let mut next = -1i64;
    for k in 0..want.len() as i64 {
        let (tokens, positions): (Vec<i64>, Vec<i64>) = if k == 0 {
            (prompt.clone(), (0..plen).collect())
        } else {
            (vec![next], vec![plen + k - 1])
        };
        let inputs = [
            TensorView::from_slice(&tokens, &[1, tokens.len() as i64])?,
            TensorView::from_slice(&positions, &[positions.len() as i64])?,
        ];
        let run = model.container().begin_run_with_session(&mut chat)?;
        let outputs = model.run(&run, &inputs)?;
        assert_eq!(outputs.len(), 1);
        let logits = &outputs[0];
        assert!(matches!(logits.device(), Device::Cuda(_)));
        assert_eq!(logits.dtype(), DType::F32);
        assert_eq!(logits.shape(), &[1, tokens.len() as i64, 256]);
        // Device memory: as_slice refuses it; read_to_vec copies it out.
        assert!(logits.as_slice::<f32>().is_err());
        let all = logits.read_to_vec::<f32>()?;
        let last = &all[all.len() - 256..];
        let mut row = vec![0u8; 256 * 4];
        logits.read((all.len() as u64 - 256) * 4, &mut row)?;
        assert_eq!(row[..4], last[0].to_ne_bytes());
        let total = logits.num_bytes() as u64;
        expect_code(
            logits.read(total - 4, &mut row),
            Code::InvalidArgument,
            &["past"],
        );
        logits.read(total, &mut [])?;
        next = (0..256)
            .max_by(|&a, &b| last[a].total_cmp(&last[b]).then(b.cmp(&a)))
            .unwrap() as i64;
        got.push(next);
        run.end()?;
    }
    assert_eq!(got, want, "greedy tokens differ from PyTorch's");

    // A hot update from host memory and a swap: the model serves the new generation.
    let generation = model.container().generation();
    let norm = vec![1.5f32; 64];
    let mut update = ConstantMap::new()?;
    update.set_slice("norm.weight", &[64], &norm)?;
    model.container().update(&update, &UpdateOptions::new())?;
    model.container().swap()?;
    assert!(model.container().generation() > generation);
    let run = model.container().begin_run_with_session(&mut chat)?;
    assert_eq!(run.read_to_vec::<f32>("norm.weight")?, norm);
    run.end()?;
    // The session outlives the model (it keeps what it uses alive in the library).
    drop(model);
    drop(chat);
    Ok(())
}

/// `Model::load_with_progress` on a GPU (skipped without one): a load its token cancels
/// leaves nothing behind; the next load reports progress up to the total and has no
/// offloader.
#[test]
fn load_with_progress_cancels_on_the_gpu() -> wharf::Result<()> {
    use std::ops::ControlFlow;
    use wharf::{CancelToken, MemoryTag, Progress};

    let rt = match Runtime::new(&RuntimeOptions::new().backend(Backend::Cuda)) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("skipped: no CUDA runtime ({e})");
            return Ok(());
        }
    };
    let dir = model_dir();
    let zeros = vec![0.0f32; 4 * 64 * 16];
    // SAFETY: nothing modifies the file while it is mapped.
    let mut weights =
        unsafe { ConstantMap::load_safetensors(dir.join("tiny_decoder.safetensors"))? };
    for name in [
        "layers.0.k_cache",
        "layers.0.v_cache",
        "layers.1.k_cache",
        "layers.1.v_cache",
    ] {
        weights.set_slice(name, &[1, 4, 64, 16], &zeros)?;
    }
    let before = rt.memory_stats()?.current_of(MemoryTag::Constants);
    let token = CancelToken::new();
    token.cancel();
    // SAFETY: the committed AOTInductor model.
    let cancelled = unsafe {
        Model::load_with_progress(
            &rt,
            dir.join("tiny_decoder.so"),
            &weights,
            &ModelOptions::new(),
            Progress::cancelled_by(&token),
        )
    };
    match cancelled {
        Err(e) if e.message().contains("GLIBC") => {
            eprintln!("skipped: the compiled model needs a newer C library: {e}");
            return Ok(());
        }
        Err(e) => assert_eq!(e.code(), Code::Cancelled, "{e}"),
        Ok(_) => panic!("a cancelled load returned a model"),
    }
    assert_eq!(rt.memory_stats()?.current_of(MemoryTag::Constants), before);
    let mut last = (0, 0);
    // SAFETY: as above.
    let model = unsafe {
        Model::load_with_progress(
            &rt,
            dir.join("tiny_decoder.so"),
            &weights,
            &ModelOptions::new(),
            Progress::new(|done, total| {
                last = (done, total);
                ControlFlow::Continue(())
            }),
        )?
    };
    assert!(last.0 > 0 && last.0 == last.1, "{last:?}");
    assert!(model.offloader()?.is_none());
    Ok(())
}
