//! The README's example, run as a test: write a safetensors file, serve it from a
//! container, and hot-swap new weights from host memory while a run of the old generation
//! is still open.

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
