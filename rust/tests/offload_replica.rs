// SPDX-License-Identifier: Apache-2.0
//! Offloaders and replica groups (the experimental tier; `--features experimental`), on the
//! host backend: an offloader's slots are host memory there, and a replica group spans
//! several host runtimes.
#![cfg(feature = "experimental")]

use std::ops::ControlFlow;

use wharf::{
    CancelToken, Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, H2dSource,
    Offloader, OffloaderOptions, Placement, Progress, ReplicaGroup, Runtime, UpdateOptions,
    UpdateTarget,
};

mod common;
use common::{expect_code, host};

const ELEMS: usize = 64;

/// A container of `layers` layers (`layers.{i}.w`: F32 [64], host-placed) and a
/// device-placed `embed`, with w = stamp * 1000 + layer published.
fn layered(rt: &Runtime, layers: usize, stamp: u32) -> Container {
    let mut options = ContainerOptions::new()
        .name("toy")
        .constant(ConstantDecl::new("embed", DType::F32, &[4]));
    for i in 0..layers {
        options = options.constant(
            ConstantDecl::new(format!("layers.{i}.w"), DType::F32, &[ELEMS as i64])
                .placement(Placement::Host),
        );
    }
    let c = Container::with_options(rt, &options).unwrap();
    publish(&c, layers, stamp);
    c
}

fn publish(c: &Container, layers: usize, stamp: u32) {
    let embed = [0f32; 4];
    let data: Vec<Vec<f32>> = (0..layers)
        .map(|i| vec![(stamp * 1000 + i as u32) as f32; ELEMS])
        .collect();
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("embed", &[4], &embed).unwrap();
    for (i, d) in data.iter().enumerate() {
        m.set_slice(&format!("layers.{i}.w"), &[ELEMS as i64], d)
            .unwrap();
    }
    c.update(&m, &UpdateOptions::new()).unwrap();
    c.swap().unwrap();
}

/// One run through every layer; the first value each layer's slot held.
fn pass(c: &Container, off: &Offloader) -> Vec<f32> {
    let run = c.begin_run().unwrap();
    let mut seen = Vec::new();
    let mut offload = run.begin_offload(off).unwrap();
    for layer in 0..off.num_layers() {
        let slots = offload.wait(layer).unwrap();
        assert_eq!(slots.tensors().len(), 1);
        assert_eq!(slots.tensors()[0].dtype(), DType::F32);
        assert_eq!(slots.tensors()[0].shape(), &[ELEMS as i64]);
        let values = slots.tensors()[0].as_slice::<f32>().unwrap();
        assert!(values.iter().all(|&v| v == values[0]), "a torn slot");
        seen.push(values[0]);
        slots.issue().unwrap();
    }
    offload.end().unwrap();
    run.end().unwrap();
    seen
}

#[test]
fn an_offloader_prefetches_every_layer_of_the_runs_generation() {
    let rt = host();
    let c = layered(&rt, 4, 1);
    let off = Offloader::new(
        &c,
        &OffloaderOptions::new().prefetch_step(2).slot_capacity(4),
    )
    .unwrap();
    assert_eq!(off.num_layers(), 4);
    assert_eq!(off.layer_constants(2), vec!["layers.2.w".to_string()]);
    assert!(off.layer_constants(9).is_empty());
    let b = off.budget().unwrap();
    assert_eq!(b.num_offloaded_layers, 4);
    assert_eq!(b.bytes_per_step, 4 * 4 * ELEMS as u64);
    assert_eq!(b.h2d_source, H2dSource::Assumed);
    assert_eq!(b.compute_us, 0.0);
    assert_eq!(pass(&c, &off), vec![1000.0, 1001.0, 1002.0, 1003.0]);
    publish(&c, 4, 2);
    assert_eq!(pass(&c, &off), vec![2000.0, 2001.0, 2002.0, 2003.0]);
}

#[test]
fn offloader_errors_name_what_is_wrong() {
    let rt = host();
    let c = layered(&rt, 3, 1);
    expect_code(
        Offloader::new(
            &c,
            &OffloaderOptions::new().layer_pattern("blocks.{layer}."),
        ),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        Offloader::new(
            &c,
            &OffloaderOptions::new().fqns(["layers.0.w", "layers.9.w"]),
        ),
        Code::NotFound,
        &["layers.9.w"],
    );
    expect_code(
        Offloader::new(
            &c,
            &OffloaderOptions::new()
                .step_compute(std::time::Duration::from_micros(1))
                .h2d_bytes_per_second(1)
                .refuse_if_exposed(true),
        ),
        Code::ResourceExhausted,
        &[],
    );
    let device = Container::new(
        &rt,
        "dev",
        &[ConstantDecl::new("layers.0.w", DType::F32, &[4])],
    )
    .unwrap();
    expect_code(
        Offloader::new(&device, &OffloaderOptions::new()),
        Code::FailedPrecondition,
        &["layers.0.w"],
    );

    let off = Offloader::new(
        &c,
        &OffloaderOptions::new()
            .fqns(["layers.1.w"])
            .prefetch_step(0),
    )
    .unwrap();
    let run = c.begin_run().unwrap();
    let mut offload = run.begin_offload(&off).unwrap();
    let other = c.begin_run().unwrap();
    expect_code(other.begin_offload(&off), Code::Busy, &[]); // one run at a time
    other.end().unwrap();
    assert!(offload.wait(0).unwrap().tensors().is_empty()); // not offloaded
    expect_code(offload.wait(7), Code::InvalidArgument, &[]);
    let slots = offload.wait(1).unwrap();
    assert_eq!(slots.tensors()[0].as_slice::<f32>().unwrap().len(), ELEMS);
    drop(slots); // issues layer 1
    drop(offload); // ends offloading
    let mut twice = run.begin_offload(&off).unwrap();
    expect_code(
        run.begin_offload(&off).map(drop),
        Code::FailedPrecondition,
        &[],
    ); // begun already
    twice.wait(1).unwrap().issue().unwrap();
    twice.end().unwrap();
    run.end().unwrap();

    let c2 = layered(&rt, 3, 1);
    let off2 = Offloader::new(&c2, &OffloaderOptions::new()).unwrap();
    let run = c.begin_run().unwrap();
    expect_code(run.begin_offload(&off2), Code::InvalidArgument, &[]);
    run.end().unwrap();
}

/// A map with "w" (F32 [4]) = v.
fn group_map(v: &[f32; 4]) -> ConstantMap<'_> {
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("w", &[4], v).unwrap();
    m
}

fn first(c: &Container) -> f32 {
    let run = c.begin_run().unwrap();
    let v = run.read_to_vec::<f32>("w").unwrap()[0];
    run.end().unwrap();
    v
}

#[test]
fn a_replica_group_updates_and_swaps_every_replica() {
    let runtimes: Vec<Runtime> = (0..3).map(|_| host()).collect();
    let ones = [1f32; 4];
    let replicas: Vec<Container> = runtimes
        .iter()
        .enumerate()
        .map(|(i, rt)| Container::from_map(rt, &group_map(&ones), &format!("r{i}")).unwrap())
        .collect();
    let refs: Vec<&Container> = replicas.iter().collect();
    expect_code(ReplicaGroup::new(&[]), Code::InvalidArgument, &[]);
    expect_code(
        ReplicaGroup::new(&[refs[0], refs[0]]),
        Code::InvalidArgument,
        &[],
    );
    let group = ReplicaGroup::new(&refs).unwrap();
    assert_eq!(group.num_replicas(), 3);
    let fives = [5f32; 4];
    expect_code(
        replicas[1].update(&group_map(&fives), &UpdateOptions::new()),
        Code::FailedPrecondition,
        &[],
    );
    let twos = [2f32; 4];
    group
        .update(&group_map(&twos), &UpdateOptions::new().require_full(true))
        .unwrap();
    assert!(replicas.iter().all(|c| first(c) == 1.0));
    group.swap().unwrap();
    assert!(replicas.iter().all(|c| first(c) == 2.0));
    let stats = group.stats().unwrap();
    assert_eq!(
        (
            stats.num_replicas,
            stats.num_updates,
            stats.num_swaps,
            stats.source_bytes
        ),
        (3, 1, 1, 16)
    );
    expect_code(
        group.update(
            &group_map(&fives),
            &UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
        ),
        Code::Unsupported,
        &[],
    );

    // Cancelled: nothing staged anywhere.
    let token = CancelToken::new();
    token.cancel();
    expect_code(
        group.update_with_progress(
            &group_map(&fives),
            &UpdateOptions::new(),
            Progress::cancelled_by(&token),
        ),
        Code::Cancelled,
        &[],
    );
    assert_eq!(group.stats().unwrap().num_updates, 1);
    let mut last = (0, 0);
    group
        .update_with_progress(
            &group_map(&fives),
            &UpdateOptions::new(),
            Progress::new(|done, total| {
                last = (done, total);
                ControlFlow::Continue(())
            }),
        )
        .unwrap();
    assert_eq!(last, (16, 16)); // each source byte once
    group.swap().unwrap();
    assert!(replicas.iter().all(|c| first(c) == 5.0));
    group.swap().unwrap(); // a rollback
    assert!(replicas.iter().all(|c| first(c) == 2.0));
    group.free_inactive().unwrap();
    expect_code(group.swap(), Code::FailedPrecondition, &[]);

    // Dropping the group hands the containers back.
    drop(group);
    replicas[1]
        .update(&group_map(&fives), &UpdateOptions::new())
        .unwrap();
}

/// Derived constants in a group: the fold runs on every replica, a failing fold changes no
/// replica, and group calls from inside the fold answer `FailedPrecondition`, not a hang.
#[test]
fn replica_group_folds_on_every_replica() {
    type FoldResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;
    fn twice(run: &wharf::FoldRun<'_>) -> FoldResult {
        let mut s = [0u8; 8];
        run.read("s", 0, &mut s)?;
        let d: Vec<f32> = s
            .chunks(4)
            .map(|b| 2.0 * f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        let t = run.tensor("d")?;
        // SAFETY: host memory (host backend) of 2 f32s of the generation being written,
        // which only this fold touches.
        unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), t.data_ptr_mut()?.cast::<f32>(), 2) };
        Ok(())
    }
    let rts = [host(), host()];
    let cs: Vec<Container> = rts
        .iter()
        .map(|rt| {
            let o = ContainerOptions::new()
                .name("folded")
                .constant(ConstantDecl::new("s", DType::F32, &[2]))
                .constant(ConstantDecl::new("d", DType::F32, &[2]).derived(true));
            Container::with_options(rt, &o).unwrap()
        })
        .collect();
    let g = ReplicaGroup::new(&cs.iter().collect::<Vec<_>>()).unwrap();
    fn map_of(d: &[f32]) -> ConstantMap<'_> {
        let mut m = ConstantMap::new().unwrap();
        m.set_slice("s", &[2], d).unwrap();
        m
    }
    let (d1, d5, d7) = ([1.0f32, 2.0], [5.0f32, 6.0], [7.0f32, 8.0]);
    let map = |v: f32| match v as i32 {
        1 => map_of(&d1),
        5 => map_of(&d5),
        _ => map_of(&d7),
    };
    expect_code(
        g.update(&map(1.0), &UpdateOptions::new()),
        Code::InvalidArgument,
        &["fold callback"],
    );
    let mut calls = 0;
    g.update_with_fold(
        &map(1.0),
        &UpdateOptions::new(),
        |r: &wharf::FoldRun<'_>| {
            calls += 1;
            twice(r)
        },
    )
    .unwrap();
    g.swap().unwrap();
    assert_eq!(calls, 2, "one fold per replica");
    for c in &cs {
        let run = c.begin_run().unwrap();
        assert_eq!(run.read_to_vec::<f32>("d").unwrap(), [2.0, 4.0]);
        run.end().unwrap();
    }
    // The second replica's fold fails: nothing changes on either.
    let mut calls = 0;
    let failed = g.update_with_fold(
        &map(5.0),
        &UpdateOptions::new(),
        |r: &wharf::FoldRun<'_>| {
            calls += 1;
            if calls == 2 {
                return Err("the second replica's fold fails".into());
            }
            twice(r)
        },
    );
    assert!(failed.is_err());
    // Group calls from the fold: refused, the update itself goes through.
    let mut nested = Vec::new();
    g.update_with_fold(
        &map(7.0),
        &UpdateOptions::new(),
        |r: &wharf::FoldRun<'_>| {
            nested.push(g.swap().err().map(|e| e.code()));
            nested.push(g.free_inactive().err().map(|e| e.code()));
            twice(r)
        },
    )
    .unwrap();
    assert_eq!(nested, vec![Some(Code::FailedPrecondition); 4]);
    g.swap().unwrap();
    for c in &cs {
        let run = c.begin_run().unwrap();
        assert_eq!(run.read_to_vec::<f32>("d").unwrap(), [14.0, 16.0]);
        run.end().unwrap();
    }
}
