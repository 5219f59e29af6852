// SPDX-License-Identifier: Apache-2.0
//! Progress and cancellation of long calls ([`Progress`], [`CancelToken`]): the library
//! calls back every 16 MiB, so these updates move 48 MiB (three 16 MiB tensors) through a
//! 1 MiB staging ring.
mod common;

use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::expect_code;
use wharf::{
    Backend, CancelToken, Code, ConstantMap, Container, ContainerOptions, Progress, Runtime,
    RuntimeOptions, UpdateOptions, WeightStore,
};

const FLOATS: usize = 4 << 20; // 16 MiB of F32 per tensor
const TOTAL: u64 = 3 * 4 * FLOATS as u64;
const NAMES: [&str; 3] = ["a", "b", "c"];

fn runtime() -> Runtime {
    Runtime::new(
        &RuntimeOptions::new()
            .backend(Backend::Host)
            .copy_threads(2)
            .staging_bytes(1 << 20),
    )
    .expect("host runtime")
}

fn weights(data: &[f32]) -> ConstantMap<'_> {
    let mut m = ConstantMap::new().unwrap();
    for name in NAMES {
        m.set_slice(name, &[FLOATS as i64], data).unwrap();
    }
    m
}

/// The first and last float of a, b and c, through a run.
fn ends(c: &Container) -> Vec<f32> {
    let run = c.begin_run().unwrap();
    let mut out = Vec::new();
    for name in NAMES {
        for offset in [0, 4 * (FLOATS as u64 - 1)] {
            let mut b = [0u8; 4];
            run.read(name, offset, &mut b).unwrap();
            out.push(f32::from_ne_bytes(b));
        }
    }
    out
}

/// Checks the calls' contract: total fixed, done never decreasing.
fn check_monotone(seen: &[(u64, u64)]) {
    for w in seen.windows(2) {
        assert!(w[1].0 >= w[0].0 && w[1].1 == w[0].1, "progress {seen:?}");
    }
}

#[test]
fn cancelling_mid_update_changes_nothing() {
    let rt = runtime();
    let ones = vec![1f32; FLOATS];
    let twos = vec![2f32; FLOATS];
    let c = Container::from_map(&rt, &weights(&ones), "m").unwrap();
    let generation = c.generation();
    let v2 = weights(&twos);

    // A token cancelled from the closure (as another thread would): the check after it
    // answers "cancel" at the first call, mid-copy.
    let token = CancelToken::new();
    let mut seen = Vec::new();
    let progress = Progress::new(|done, total| {
        seen.push((done, total));
        token.cancel();
        ControlFlow::Continue(())
    })
    .cancel_token(&token);
    let err = expect_code(
        c.update_with_progress(&v2, &UpdateOptions::new(), progress),
        Code::Cancelled,
        &["container 'm'"],
    );
    assert!(err.message().contains("nothing was changed"), "{err}");
    assert_eq!(seen.len(), 1);
    assert!(seen[0].0 < seen[0].1, "cancelled mid-copy: {seen:?}");
    assert_eq!(c.generation(), generation);
    expect_code(c.swap(), Code::FailedPrecondition, &[]);
    assert!(ends(&c).iter().all(|&v| v == 1.0));

    // The next update succeeds; its progress is monotone and ends at the total.
    let mut seen = Vec::new();
    c.update_with_progress(
        &v2,
        &UpdateOptions::new(),
        Progress::new(|done, total| {
            seen.push((done, total));
            ControlFlow::Continue(())
        }),
    )
    .unwrap();
    check_monotone(&seen);
    assert!(
        seen.len() >= 2,
        "a call mid-copy and the final one: {seen:?}"
    );
    assert_eq!(*seen.last().unwrap(), (TOTAL, TOTAL));
    c.swap().unwrap();
    assert!(ends(&c).iter().all(|&v| v == 2.0));
}

#[test]
fn break_and_an_already_cancelled_token_cancel() {
    let rt = runtime();
    let ones = vec![1f32; FLOATS];
    let twos = vec![2f32; FLOATS];
    let c = Container::from_map(&rt, &weights(&ones), "m").unwrap();
    let v2 = weights(&twos);
    let mut calls = 0;
    expect_code(
        c.update_with_progress(
            &v2,
            &UpdateOptions::new(),
            Progress::new(|_, _| {
                calls += 1;
                if calls == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }),
        ),
        Code::Cancelled,
        &[],
    );
    assert_eq!(calls, 2);
    let token = CancelToken::new();
    token.cancel();
    expect_code(
        c.update_with_progress(&v2, &UpdateOptions::new(), Progress::cancelled_by(&token)),
        Code::Cancelled,
        &[],
    );
    expect_code(c.swap(), Code::FailedPrecondition, &[]);
    assert!(ends(&c).iter().all(|&v| v == 1.0));
}

#[test]
fn a_panic_in_the_closure_cancels_and_is_resumed_after_the_call() {
    let rt = runtime();
    let ones = vec![1f32; FLOATS];
    let twos = vec![2f32; FLOATS];
    let c = Container::from_map(&rt, &weights(&ones), "m").unwrap();
    let v2 = weights(&twos);
    let payload = catch_unwind(AssertUnwindSafe(|| {
        let _ = c.update_with_progress(
            &v2,
            &UpdateOptions::new(),
            Progress::new(|_, _| panic!("boom")),
        );
    }))
    .expect_err("the closure's panic is resumed");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    expect_code(c.swap(), Code::FailedPrecondition, &[]);
    assert!(ends(&c).iter().all(|&v| v == 1.0));
    c.update(&v2, &UpdateOptions::new()).unwrap();
}

#[test]
fn create_file_and_store_updates_cancel() {
    let rt = runtime();
    let ones = vec![1f32; FLOATS];
    let twos = vec![2f32; FLOATS];
    let v1 = weights(&ones);

    let token = CancelToken::new();
    token.cancel();
    expect_code(
        Container::from_map_with_progress(
            &rt,
            &v1,
            &ContainerOptions::new().name("m"),
            Progress::cancelled_by(&token),
        ),
        Code::Cancelled,
        &[],
    );
    let mut seen = Vec::new();
    let c = Container::from_map_with_progress(
        &rt,
        &v1,
        &ContainerOptions::new().name("m"),
        Progress::new(|done, total| {
            seen.push((done, total));
            ControlFlow::Continue(())
        }),
    )
    .unwrap();
    check_monotone(&seen);
    assert_eq!(*seen.last().unwrap(), (TOTAL, TOTAL));

    let dir = std::env::temp_dir().join(format!("wharf-rust-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("v2.safetensors");
    weights(&twos).save_safetensors(&path).unwrap();
    expect_code(
        c.update_from_file_with_progress(
            &path,
            &UpdateOptions::new(),
            Progress::cancelled_by(&token),
        ),
        Code::Cancelled,
        &[],
    );
    expect_code(c.swap(), Code::FailedPrecondition, &[]);

    let store = WeightStore::new(&rt).unwrap();
    let member = Container::from_map_with_options(
        &rt,
        &v1,
        &ContainerOptions::new().name("member").store(&store),
    )
    .unwrap();
    expect_code(
        store.update_with_progress(
            &weights(&twos),
            &UpdateOptions::new(),
            Progress::cancelled_by(&token),
        ),
        Code::Cancelled,
        &[],
    );
    expect_code(
        store.update_from_file_with_progress(
            &path,
            &UpdateOptions::new(),
            Progress::cancelled_by(&token),
        ),
        Code::Cancelled,
        &[],
    );
    expect_code(store.swap(), Code::FailedPrecondition, &[]);
    let mut last = (0, 0);
    store
        .update_from_file_with_progress(
            &path,
            &UpdateOptions::new(),
            Progress::new(|done, total| {
                last = (done, total);
                ControlFlow::Continue(())
            }),
        )
        .unwrap();
    assert_eq!(last, (TOTAL, TOTAL));
    store.swap().unwrap();
    assert!(ends(&member).iter().all(|&v| v == 2.0));
    std::fs::remove_dir_all(&dir).unwrap();
}
