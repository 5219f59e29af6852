// SPDX-License-Identifier: Apache-2.0
//! Replica groups across processes (the experimental tier; `--features experimental`) on the
//! host backend: two ranks in one process, each with its own runtime and container on its
//! own thread, meeting over the host transport's Unix socket as two processes would.
#![cfg(feature = "experimental")]

use std::time::Duration;

use wharf::{
    Code, ConstantMap, Container, RankOptions, ReplicaGroup, ReplicaGroupId, UpdateOptions,
};

mod common;
use common::{expect_code, host};

/// A map with "w" (F32 [4]) = v (borrowed).
fn map(v: &[f32; 4]) -> ConstantMap<'_> {
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("w", &[4], v).unwrap();
    m
}

fn served(c: &Container) -> Vec<f32> {
    let run = c.begin_run().unwrap();
    let v = run.read_to_vec::<f32>("w").unwrap();
    run.end().unwrap();
    v
}

#[test]
fn a_replica_group_id_round_trips_through_bytes() {
    let rt = host();
    let id = ReplicaGroupId::new(&rt).unwrap();
    let bytes: Vec<u8> = id.as_bytes().to_vec();
    assert_eq!(bytes.len(), ReplicaGroupId::SIZE);
    assert!(bytes.iter().any(|&b| b != 0));
    assert_eq!(ReplicaGroupId::from_bytes(&bytes).unwrap(), id);
    assert_eq!(ReplicaGroupId::try_from(&bytes[..]).unwrap(), id);
    assert_ne!(ReplicaGroupId::new(&rt).unwrap(), id);
    for n in [0usize, 255, 257] {
        expect_code(
            ReplicaGroupId::from_bytes(&vec![1u8; n]),
            Code::InvalidArgument,
            &["256 bytes", &format!("got {n}")],
        );
    }
}

#[test]
fn rank_argument_errors_carry_the_c_code() {
    let rt = host();
    let c = Container::from_map(&rt, &map(&[1.0; 4]), "solo").unwrap();
    let id = ReplicaGroupId::new(&rt).unwrap();
    let o = RankOptions::new();
    expect_code(
        ReplicaGroup::create_rank(&c, &id, 0, 0, &o),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        ReplicaGroup::create_rank(&c, &id, 2, 2, &o),
        Code::InvalidArgument,
        &[],
    );
    let zero = ReplicaGroupId::from_bytes(&[0u8; 256]).unwrap();
    expect_code(
        ReplicaGroup::create_rank(&c, &zero, 0, 1, &o),
        Code::InvalidArgument,
        &[],
    );
    let huge = RankOptions::new().timeout(Duration::from_secs(u64::from(u32::MAX)));
    expect_code(
        ReplicaGroup::create_rank(&c, &id, 0, 1, &huge),
        Code::InvalidArgument,
        &["timeout"],
    );
    // Rank 0 of two with nobody joining: IoError within the timeout, naming the missing rank.
    let lone = ReplicaGroupId::new(&rt).unwrap();
    let quick = RankOptions::new().timeout(Duration::from_millis(300));
    expect_code(
        ReplicaGroup::create_rank(&c, &lone, 0, 2, &quick),
        Code::IoError,
        &["rank(s) 1 of 2"],
    );
    // Nothing joined: the container updates on its own.
    c.update(&map(&[1.0; 4]), &UpdateOptions::new()).unwrap();
    c.swap().unwrap();

    // A group of one rank: update/swap refuse, update_ranks wants a map on rank 0.
    let g = ReplicaGroup::create_rank(&c, &id, 0, 1, &o).unwrap();
    assert_eq!(g.num_replicas(), 1);
    expect_code(
        g.update(&map(&[2.0; 4]), &UpdateOptions::new()),
        Code::FailedPrecondition,
        &[],
    );
    expect_code(g.swap(), Code::FailedPrecondition, &[]);
    expect_code(
        g.update_ranks(None, &UpdateOptions::new()),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        ReplicaGroup::create_rank(&c, &id, 0, 1, &o),
        Code::FailedPrecondition,
        &[],
    );
    g.update_ranks(Some(&map(&[2.0; 4])), &UpdateOptions::new())
        .unwrap();
    assert_eq!(served(&c), vec![2.0; 4]);
    drop(g);
    // A group made by ReplicaGroup::new refuses update_ranks.
    let inproc = ReplicaGroup::new(&[&c]).unwrap();
    expect_code(
        inproc.update_ranks(Some(&map(&[3.0; 4])), &UpdateOptions::new()),
        Code::FailedPrecondition,
        &[],
    );
}

#[test]
fn two_ranks_on_threads_update_together() {
    let (rt0, rt1) = (host(), host());
    let c0 = Container::from_map(&rt0, &map(&[1.0; 4]), "rank0").unwrap();
    let c1 = Container::from_map(&rt1, &map(&[1.0; 4]), "rank1").unwrap();
    let id = ReplicaGroupId::new(&rt0).unwrap();
    let wire: Vec<u8> = id.as_bytes().to_vec(); // as through a control plane
    let o = RankOptions::new().timeout(Duration::from_secs(20));
    std::thread::scope(|s| {
        let rank1 = s.spawn(|| {
            let id1 = ReplicaGroupId::from_bytes(&wire).unwrap();
            let g = ReplicaGroup::create_rank(&c1, &id1, 1, 2, &o).unwrap();
            assert_eq!(g.num_replicas(), 2);
            g.update_ranks(None, &UpdateOptions::new()).unwrap();
            g
        });
        let g0 = ReplicaGroup::create_rank(&c0, &id, 0, 2, &o).unwrap();
        g0.update_ranks(
            Some(&map(&[2.0; 4])),
            &UpdateOptions::new().require_full(true),
        )
        .unwrap();
        let g1 = rank1.join().unwrap();
        assert_eq!(served(&c0), vec![2.0; 4]);
        assert_eq!(served(&c1), vec![2.0; 4]);
        let (s0, s1) = (g0.stats().unwrap(), g1.stats().unwrap());
        assert_eq!((s0.num_replicas, s0.source_bytes), (2, 16));
        assert!(s0.broadcast_bytes > 0);
        assert_eq!(s1.broadcast_bytes, s0.broadcast_bytes);
    });
}
