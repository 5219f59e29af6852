// SPDX-License-Identifier: Apache-2.0
//! The README's examples, run as tests: write a safetensors file, serve it from a
//! container, and hot-swap new weights from host memory while a run of the old generation
//! is still open; then share weights between two containers through a weight store and
//! keep per-conversation state in sessions.

use wharf::{Backend, ConstantMap, Container, DType, Runtime, RuntimeOptions, UpdateOptions};

#[test]
fn readme_example() -> wharf::Result<()> {
    let dir = std::env::temp_dir().join(format!("wharf-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("model.safetensors");

    // 1. Write a checkpoint. The map borrows `weights`, so it must outlive the map.
    let weights = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut checkpoint = ConstantMap::new()?;
    checkpoint.set_slice("layers.0.weight", &[2, 3], &weights)?;
    checkpoint.save_safetensors(&path)?;

    // 2. Serve it: a runtime (host backend here; Backend::Auto picks a GPU when there is
    //    one) and a container created from the memory-mapped file.
    let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    // SAFETY: nothing modifies the file while it is mapped.
    let file = unsafe { ConstantMap::load_safetensors(&path)? };
    let model = Container::from_map(&rt, &file, "demo")?;
    drop(file); // the container holds its own copy of the weights

    // 3. A run pins the active generation and resolves constants to storage.
    let before = model.begin_run()?;
    let w = before.tensor("layers.0.weight")?;
    assert_eq!((w.dtype(), w.shape()), (DType::F32, &[2i64, 3][..]));
    assert_eq!(w.as_slice::<f32>()?, &weights);
    let first = before.generation();

    // 4. Hot update from host memory into the inactive generation, then swap.
    let fresh = [10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0];
    let mut update = ConstantMap::new()?;
    update.set_slice("layers.0.weight", &[2, 3], &fresh)?;
    model.update(&update, &UpdateOptions::new())?;
    model.swap()?;

    // 5. New runs see the new weights; the open run still sees the old ones.
    let after = model.begin_run()?;
    assert!(after.generation() > first);
    assert_eq!(after.tensor("layers.0.weight")?.as_slice::<f32>()?, &fresh);
    assert_eq!(w.as_slice::<f32>()?, &weights);
    after.end()?;
    before.end()?;

    std::fs::remove_dir_all(&dir).expect("cleanup");
    Ok(())
}

/// The README's weight store and sessions example.
#[test]
fn readme_store_and_sessions() -> wharf::Result<()> {
    use wharf::{ContainerOptions, Session, SessionOptions, StateDecl, WeightStore};

    let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;

    // 1. Two methods of one model share weights through a store ("embed" is held once)
    //    and declare a per-conversation state, "kv".
    let store = WeightStore::new(&rt)?;
    let (embed, p_head, d_head) = ([0.5f32; 8], [1.0f32; 2], [2.0f32; 2]);
    let mut prefill_map = ConstantMap::new()?;
    prefill_map.set_slice("embed", &[8], &embed)?;
    prefill_map.set_slice("prefill.head", &[2], &p_head)?;
    let mut decode_map = ConstantMap::new()?;
    decode_map.set_slice("embed", &[8], &embed)?;
    decode_map.set_slice("decode.head", &[2], &d_head)?;
    let options = ContainerOptions::new()
        .store(&store)
        .state(StateDecl::new("kv", DType::F32, &[4]))
        .max_session_bytes(1 << 20); // for all sessions over a container
    let prefill =
        Container::from_map_with_options(&rt, &prefill_map, &options.clone().name("prefill"))?;
    let decode = Container::from_map_with_options(&rt, &decode_map, &options.name("decode"))?;
    assert_eq!(store.stats()?.saved_bytes, 32); // 8 floats not stored twice

    // 2. A session is one conversation: one "kv" buffer for both containers, allocated at
    //    its first run. A run borrows its session mutably: one run at a time.
    let mut chat = Session::new(&rt, &[&prefill, &decode], &SessionOptions::new())?;
    let mut run = prefill.begin_run_with_session(&mut chat)?;
    // The state starts from zeros (or its initial value).
    assert_eq!(run.tensor("kv")?.as_slice::<f32>()?, &[0.0; 4]);
    // Write it through a mutable view borrowed from the run (host memory on the host
    // backend; on a GPU, hand `data_ptr_mut()` to your kernels on `run.stream()`).
    run.state_mut("kv")?.as_mut_slice::<f32>()?[0] = 7.0;
    run.end()?;
    let run = decode.begin_run_with_session(&mut chat)?;
    assert_eq!(run.read_to_vec::<f32>("kv")?, [7.0, 0.0, 0.0, 0.0]);
    run.end()?;

    // 3. Fork a conversation (a copy of its state), reset one to the initial values.
    let mut branch = chat.fork()?;
    chat.reset()?;
    let run = decode.begin_run_with_session(&mut branch)?;
    assert_eq!(run.read_to_vec::<f32>("kv")?, [7.0, 0.0, 0.0, 0.0]);
    run.end()?;

    // 4. Update a shared weight once for both containers; publish it in both at once.
    let fresh = [0.25f32; 8];
    let mut update = ConstantMap::new()?;
    update.set_slice("embed", &[8], &fresh)?;
    store.update(&update, &UpdateOptions::new())?;
    store.swap()?;
    let run = decode.begin_run_with_session(&mut chat)?;
    assert_eq!(run.tensor("embed")?.as_slice::<f32>()?, &fresh);
    assert_eq!(run.read_to_vec::<f32>("kv")?, [0.0; 4]); // chat was reset
    run.end()?;
    Ok(())
}

/// The README's progress and cancellation example.
#[test]
fn readme_cancellation() -> wharf::Result<()> {
    use std::ops::ControlFlow;
    use wharf::{CancelToken, Code, Progress};

    let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    let weights = [1.0f32, 2.0, 3.0, 4.0];
    let mut map = ConstantMap::new()?;
    map.set_slice("w", &[4], &weights)?;
    let model = Container::from_map(&rt, &map, "demo")?;

    // The closure is told the bytes copied (every 16 MiB, and once at the end, before
    // anything is staged); Break, a panic or a cancelled token stops the update.
    let token = CancelToken::new(); // clone it into whatever decides to stop
    let progress = Progress::new(|done, total| {
        println!("copied {done} of {total} bytes");
        token.cancel(); // as a deadline or a client going away would
        ControlFlow::Continue(())
    })
    .cancel_token(&token);
    let err = model
        .update_with_progress(&map, &UpdateOptions::new(), progress)
        .unwrap_err();
    assert_eq!(err.code(), Code::Cancelled);
    assert!(model.swap().is_err()); // a cancelled update changes nothing
    Ok(())
}
