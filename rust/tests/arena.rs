// SPDX-License-Identifier: Apache-2.0
//! State arenas and batched runs (experimental), on the host backend: arena state is host
//! memory there, written through `Run::state_mut` and read back with `Run::read_to_vec`.
#![cfg(feature = "experimental")]

use wharf::{
    sys, Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, Runtime, Session,
    SessionOptions, StateArenaStats, StateDecl, UpdateOptions, WeightStore,
};

mod common;
use common::{expect_code, host};

const KV: [i64; 2] = [2, 4];
const KV_ELEMS: usize = 8;
/// One slot of `arena_model`'s arena: kv (F32 [2, 4]) and pos (I32 [1]).
const SLOT_BYTES: u64 = KV_ELEMS as u64 * 4 + 4;

/// "prefill" makes an arena of `capacity` sessions (kv zeros, pos 7); "decode" joins it
/// (kv only). Weights swapped in.
fn arena_model(rt: &Runtime, store: &WeightStore, capacity: u32) -> (Container, Container) {
    let w = ConstantDecl::new("w", DType::F32, &[4]);
    let pos = [7i32];
    let prefill = Container::with_options(
        rt,
        &ContainerOptions::new()
            .name("prefill")
            .store(store)
            .constant(w.clone())
            .state(StateDecl::new("kv", DType::F32, &KV))
            .state(StateDecl::new("pos", DType::I32, &[1]).initial(&pos))
            .session_capacity(capacity),
    )
    .expect("prefill");
    let decode = Container::with_options(
        rt,
        &ContainerOptions::new()
            .name("decode")
            .store(store)
            .constant(w)
            .state(StateDecl::new("kv", DType::F32, &KV))
            .state_arena_of(&prefill),
    )
    .expect("decode");
    let data = [1f32, 2., 3., 4.];
    let mut m = ConstantMap::new().expect("map");
    m.set_slice("w", &[4], &data).expect("set");
    store.update(&m, &UpdateOptions::new()).expect("update");
    store.swap().expect("swap");
    (prefill, decode)
}

fn session(rt: &Runtime, containers: &[&Container]) -> wharf::Result<Session> {
    Session::new(rt, containers, &SessionOptions::new())
}

fn pattern(base: f32) -> Vec<f32> {
    (0..KV_ELEMS).map(|i| base + i as f32).collect()
}

/// A run of `c` in `s`: checks kv holds `want`, then writes `next` (if any).
fn step(c: &Container, s: &mut Session, want: &[f32], next: Option<&[f32]>) {
    let mut run = c.begin_run_with_session(s).expect("run");
    assert_eq!(run.read_to_vec::<f32>("kv").unwrap(), want);
    if let Some(next) = next {
        run.state_mut("kv")
            .unwrap()
            .copy_from_slice(next)
            .expect("write");
    }
    run.end().expect("end");
}

fn stats(used: u32, free: u32, slot_bytes: u64) -> StateArenaStats {
    StateArenaStats {
        num_slots: used + free,
        num_slots_used: used,
        num_slots_free: free,
        bytes: u64::from(used + free) * slot_bytes,
    }
}

#[test]
fn sessions_take_distinct_slots_and_reuse_freed_ones() {
    let rt = host();
    let store = WeightStore::new(&rt).unwrap();
    let (prefill, decode) = arena_model(&rt, &store, 3);
    assert_eq!(
        prefill.state_arena_stats().unwrap(),
        stats(0, 3, SLOT_BYTES)
    );
    assert_eq!(decode.state_arena_stats().unwrap(), stats(0, 3, SLOT_BYTES));

    let mut sessions: Vec<Session> = (0..3)
        .map(|_| session(&rt, &[&prefill, &decode]).expect("session"))
        .collect();
    let mut slots: Vec<u32> = sessions.iter().map(|s| s.slot().expect("slot")).collect();
    slots.sort_unstable();
    assert_eq!(slots, [0, 1, 2]);
    assert_eq!(
        prefill.state_arena_stats().unwrap(),
        stats(3, 0, SLOT_BYTES)
    );

    // Full: a new session and a fork are refused, naming the capacity, and take nothing.
    expect_code(
        session(&rt, &[&prefill, &decode]),
        Code::ResourceExhausted,
        &["3"],
    );
    expect_code(sessions[0].fork(), Code::ResourceExhausted, &["3"]);
    assert_eq!(
        prefill.state_arena_stats().unwrap(),
        stats(3, 0, SLOT_BYTES)
    );

    // A dropped session's slot is the next one's.
    let freed = sessions.remove(1).slot().unwrap();
    assert_eq!(
        prefill.state_arena_stats().unwrap(),
        stats(2, 1, SLOT_BYTES)
    );
    let mut again = session(&rt, &[&prefill, &decode]).unwrap();
    assert_eq!(again.slot(), Some(freed));

    // Each session's state is its own slot.
    step(
        &prefill,
        &mut sessions[0],
        &[0.; KV_ELEMS],
        Some(&pattern(10.)),
    );
    step(&decode, &mut again, &[0.; KV_ELEMS], Some(&pattern(20.)));
    step(&decode, &mut sessions[0], &pattern(10.), None);
    step(&prefill, &mut again, &pattern(20.), None);
    sessions[0].reset().unwrap();
    step(&prefill, &mut sessions[0], &[0.; KV_ELEMS], None);

    // Without an arena: no slot, and no stats.
    let plain = Container::with_options(
        &rt,
        &ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &KV)),
    )
    .unwrap();
    assert_eq!(session(&rt, &[&plain]).unwrap().slot(), None);
    expect_code(plain.state_arena_stats(), Code::FailedPrecondition, &[]);
}

#[test]
fn arena_options_are_checked() {
    let rt = host();
    let store = WeightStore::new(&rt).unwrap();
    let (prefill, _decode) = arena_model(&rt, &store, 2);
    let kv = || StateDecl::new("kv", DType::F32, &KV);
    expect_code(
        Container::with_options(
            &rt,
            &ContainerOptions::new()
                .state(kv())
                .session_capacity(2)
                .state_arena_of(&prefill),
        ),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        Container::with_options(
            &rt,
            &ContainerOptions::new()
                .state(StateDecl::new("h", DType::F32, &[3]))
                .state_arena_of(&prefill),
        ),
        Code::InvalidArgument,
        &["h"],
    );
    // The arena outlives the container that made it while a joiner uses it.
    let maker = Container::with_options(
        &rt,
        &ContainerOptions::new().state(kv()).session_capacity(2),
    )
    .unwrap();
    let joiner = Container::with_options(
        &rt,
        &ContainerOptions::new().state(kv()).state_arena_of(&maker),
    )
    .unwrap();
    drop(maker);
    assert_eq!(
        joiner.state_arena_stats().unwrap(),
        stats(0, 2, KV_ELEMS as u64 * 4)
    );
}

#[test]
fn a_batched_run_pins_one_generation_over_its_sessions() {
    let rt = host();
    let store = WeightStore::new(&rt).unwrap();
    let (prefill, decode) = arena_model(&rt, &store, 4);
    let mut s: Vec<Session> = (0..4)
        .map(|_| session(&rt, &[&prefill, &decode]).unwrap())
        .collect();
    for (i, session) in s.iter_mut().enumerate() {
        step(
            &decode,
            session,
            &[0.; KV_ELEMS],
            Some(&pattern(100. * (i + 1) as f32)),
        );
    }
    let slots: Vec<u32> = s.iter().map(|x| x.slot().unwrap()).collect();
    let gen = decode.generation();
    let (s0, rest) = s.split_at_mut(1);
    let (s1, rest) = rest.split_at_mut(1);
    let (s2, s3) = rest.split_at_mut(1);
    let batch_slots = [slots[2], slots[0], slots[3]];
    {
        let mut batch = [&mut s2[0], &mut s0[0], &mut s3[0]];
        let mut run = decode.begin_batch(&mut batch).expect("batch");
        assert_eq!(run.num_sessions(), 3);
        let idx = run.slot_indices().unwrap();
        assert_eq!((idx.dtype(), idx.shape()), (DType::I64, &[3i64][..]));
        let got: Vec<i64> = idx.to_vec().unwrap();
        assert_eq!(got, batch_slots.map(i64::from));

        // The state is the whole arena; each slot holds what its session wrote.
        let mut all = run.read_to_vec::<f32>("kv").unwrap();
        assert_eq!(all.len(), 4 * KV_ELEMS);
        for (i, &slot) in slots.iter().enumerate() {
            let row = &all[slot as usize * KV_ELEMS..(slot as usize + 1) * KV_ELEMS];
            assert_eq!(row, pattern(100. * (i + 1) as f32), "slot {slot}");
        }
        {
            let mut kv = run.state_mut("kv").unwrap();
            assert_eq!(kv.shape(), &[4, 2, 4]);
            for &slot in &batch_slots {
                let row = &mut all[slot as usize * KV_ELEMS..(slot as usize + 1) * KV_ELEMS];
                row.fill(-(slot as f32));
            }
            kv.copy_from_slice(&all).unwrap();
        }

        // Pinned: an update swapped in meanwhile is not the batch's.
        let data = [5f32, 6., 7., 8.];
        let mut m = ConstantMap::new().unwrap();
        m.set_slice("w", &[4], &data).unwrap();
        store.update(&m, &UpdateOptions::new()).unwrap();
        store.swap().unwrap();
        assert_eq!(run.generation(), gen);
        assert_ne!(decode.generation(), gen);
        assert_eq!(run.read_to_vec::<f32>("w").unwrap(), [1., 2., 3., 4.]);

        // A session outside the batch runs meanwhile.
        step(&prefill, &mut s1[0], &pattern(200.), None);
        run.end().unwrap();
    }
    for &slot in &batch_slots {
        let i = slots.iter().position(|&x| x == slot).unwrap();
        step(&prefill, &mut s[i], &[-(slot as f32); KV_ELEMS], None);
    }
    step(&prefill, &mut s[1], &pattern(200.), None);

    // A run of one arena session: its one slot.
    let run = prefill.begin_run_with_session(&mut s[3]).unwrap();
    assert_eq!(run.num_sessions(), 1);
    assert_eq!(
        run.slot_indices().unwrap().to_vec::<i64>().unwrap(),
        [i64::from(slots[3])]
    );
    run.end().unwrap();
}

#[test]
fn a_busy_session_refuses_the_batch_and_nothing_is_claimed() {
    let rt = host();
    let store = WeightStore::new(&rt).unwrap();
    let (prefill, decode) = arena_model(&rt, &store, 3);
    let mut a = session(&rt, &[&prefill, &decode]).unwrap();
    let mut b = session(&rt, &[&prefill, &decode]).unwrap();
    // b busy through its raw handle (safe Rust cannot: a run borrows its session).
    let mut raw_run = std::ptr::null_mut();
    // SAFETY: live container and session; the run is ended below, before either drops.
    unsafe {
        assert!(sys::wharf_run_begin(
            decode.as_raw(),
            b.as_raw(),
            std::ptr::null_mut(),
            &mut raw_run
        )
        .is_null())
    };
    expect_code(
        decode.begin_batch(&mut [&mut a, &mut b]),
        Code::Busy,
        &["1"],
    );
    // a was not claimed.
    step(&decode, &mut a, &[0.; KV_ELEMS], None);
    // SAFETY: the run begun above, ended once.
    unsafe { assert!(sys::wharf_run_end(raw_run).is_null()) };
    decode
        .begin_batch(&mut [&mut a, &mut b])
        .expect("batch")
        .end()
        .unwrap();

    // Argument errors.
    expect_code(
        decode.begin_batch(&mut []),
        Code::InvalidArgument,
        &["at least one"],
    );
    let mut only_prefill = session(&rt, &[&prefill]).unwrap();
    expect_code(
        decode.begin_batch(&mut [&mut a, &mut only_prefill]),
        Code::InvalidArgument,
        &[],
    );
    let plain = Container::with_options(
        &rt,
        &ContainerOptions::new().state(StateDecl::new("kv", DType::F32, &KV)),
    )
    .unwrap();
    let mut p = session(&rt, &[&plain]).unwrap();
    expect_code(
        plain.begin_batch(&mut [&mut p]),
        Code::FailedPrecondition,
        &[],
    );
}
