// SPDX-License-Identifier: Apache-2.0
//! Loads a safetensors file (w = [1, 2, 3, 4]), serves it, updates w, swaps and reads w back
//! through a run (tests/consumers/rust_consumer.sh).
use wharf::{Backend, ConstantMap, Container, Runtime, RuntimeOptions, UpdateOptions};

fn main() -> wharf::Result<()> {
    let path = std::env::args()
        .nth(1)
        .expect("usage: wharf-consumer FILE.safetensors");
    let rt = Runtime::new(&RuntimeOptions::new().backend(Backend::Host))?;
    // SAFETY: nothing modifies the file while it is mapped.
    let file = unsafe { ConstantMap::load_safetensors(&path)? };
    let model = Container::from_map(&rt, &file, "consumer")?;
    drop(file);
    let fresh = [5.0f32, 6.0, 7.0, 8.0];
    let mut update = ConstantMap::new()?;
    update.set_slice("w", &[4], &fresh)?;
    model.update(&update, &UpdateOptions::new())?;
    model.swap()?;
    let run = model.begin_run()?;
    let w = run.tensor("w")?.as_slice::<f32>()?.to_vec();
    let generation = run.generation();
    run.end()?;
    println!(
        "wharf {}, generation {generation}: w = {w:?}",
        wharf::version()
    );
    Ok(())
}
