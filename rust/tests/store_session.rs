// SPDX-License-Identifier: Apache-2.0
//! Weight store and sessions (library 0.2.0), on the host backend: session state is host
//! memory there, so tests write it through the pointer a run resolves and read it back
//! with `Run::read`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use wharf::{
    sys, Backend, Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, Device,
    MemoryTag, Placement, Run, Runtime, RuntimeOptions, Session, SessionOptions, StateDecl,
    UpdateOptions, UpdateTarget, WeightStore, WeightStoreStats,
};

mod common;
use common::{expect_code, host};

fn map<'a>(entries: &[(&str, &[i64], &'a [f32])]) -> ConstantMap<'a> {
    let mut m = ConstantMap::new().expect("map");
    for (name, shape, data) in entries {
        m.set_slice(name, shape, data).expect("set_slice");
    }
    m
}

fn constants_bytes(rt: &Runtime) -> u64 {
    rt.memory_stats().unwrap().current_of(MemoryTag::Constants)
}

fn state_memory(rt: &Runtime) -> u64 {
    rt.memory_stats().unwrap().current_of(MemoryTag::State)
}

fn ptr(run: &Run<'_>, fqn: &str) -> usize {
    run.tensor(fqn).expect("tensor").data_ptr() as usize
}

fn read(run: &Run<'_>, fqn: &str) -> Vec<f32> {
    run.read_to_vec::<f32>(fqn).expect("read_to_vec")
}

/// Writes `values` into state `fqn` through the run's safe mutable view (host memory on
/// the host backend).
fn write_state(run: &mut Run<'_>, fqn: &str, values: &[f32]) {
    let mut t = run.state_mut(fqn).expect("state_mut");
    assert_eq!(t.device(), Device::Cpu);
    assert_eq!(t.dtype(), DType::F32);
    t.copy_from_slice(values).expect("copy_from_slice");
}

// ---- weight store ----------------------------------------------------------------------

const EMBED: [i64; 1] = [4];
const NORM: [i64; 1] = [2];

/// Two containers over overlapping maps: "embed" [4] and "norm" [2] shared, plus a head
/// each ("prefill.head" [3], "decode.head" [2]). Decode's map has different data under the
/// shared names, which the store ignores (it keeps the first).
fn store_pair(rt: &Runtime, store: &WeightStore) -> (Container, Container) {
    let prefill = Container::from_map_with_options(
        rt,
        &map(&[
            ("embed", &EMBED, &[1.0; 4]),
            ("norm", &NORM, &[1.0; 2]),
            ("prefill.head", &[3], &[1.0; 3]),
        ]),
        &ContainerOptions::new().name("prefill").store(store),
    )
    .expect("prefill");
    let decode = Container::from_map_with_options(
        rt,
        &map(&[
            ("embed", &EMBED, &[2.0; 4]),
            ("norm", &NORM, &[2.0; 2]),
            ("decode.head", &[2], &[2.0; 2]),
        ]),
        &ContainerOptions::new().name("decode").store(store),
    )
    .expect("decode");
    (prefill, decode)
}

#[test]
fn thread_safety_markers_follow_the_c_docs() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<WeightStore>();
    send_sync::<Session>();
    send_sync::<WeightStoreStats>();
    send_sync::<ContainerOptions<'static>>();
}

#[test]
fn two_containers_of_a_store_share_storage() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    assert_eq!(store.stats()?, WeightStoreStats::default());
    let before = constants_bytes(&rt);
    let (prefill, decode) = store_pair(&rt, &store);
    // The union, not the sum: decode added only its head (2 floats).
    assert_eq!(constants_bytes(&rt) - before, (4 + 2 + 3 + 2) * 4);

    let p = prefill.begin_run()?;
    let d = decode.begin_run()?;
    for fqn in ["embed", "norm"] {
        assert_eq!(ptr(&p, fqn), ptr(&d, fqn), "{fqn} has one address");
        assert_eq!(
            d.tensor(fqn)?.to_vec::<f32>()?,
            p.tensor(fqn)?.to_vec::<f32>()?
        );
    }
    assert_eq!(
        read(&d, "embed"),
        [1.0; 4],
        "the store keeps the first weight"
    );
    assert_eq!(read(&d, "decode.head"), [2.0; 2]);
    assert_ne!(ptr(&p, "prefill.head"), ptr(&d, "decode.head"));
    p.end()?;
    d.end()?;

    let stats = store.stats()?;
    assert_eq!(stats.num_unique_constants, 4);
    assert_eq!(stats.unique_bytes, (4 + 2 + 3 + 2) * 4);
    assert_eq!(stats.num_references, 6, "2 shared x 2 containers + 2 heads");
    assert_eq!(stats.saved_bytes, (4 + 2) * 4);

    // A container declared with constants joins the same way: its first update takes the
    // store's storage for what the store holds (and does not read the map's data for it).
    let scorer = Container::with_options(
        &rt,
        &ContainerOptions::new()
            .name("scorer")
            .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
            .store(&store),
    )?;
    scorer.update(&map(&[("embed", &EMBED, &[9.0; 4])]), &UpdateOptions::new())?;
    scorer.swap()?;
    let (s, p) = (scorer.begin_run()?, prefill.begin_run()?);
    assert_eq!(ptr(&s, "embed"), ptr(&p, "embed"));
    assert_eq!(read(&s, "embed"), [1.0; 4]);
    s.end()?;
    p.end()?;
    assert_eq!(store.stats()?.saved_bytes, (2 * 4 + 2) * 4);
    Ok(())
}

#[test]
fn a_different_declaration_under_a_shared_fqn_is_refused() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let (_prefill, _decode) = store_pair(&rt, &store);
    let before = store.stats()?;

    // Shape: from a map...
    let five = [0.0f32; 5];
    expect_code(
        Container::from_map_with_options(
            &rt,
            &map(&[("embed", &[5], &five)]),
            &ContainerOptions::new().name("wide").store(&store),
        ),
        Code::InvalidArgument,
        &["embed", "wide", "prefill"],
    );
    // ... or declared; dtype and placement count too.
    for decl in [
        ConstantDecl::new("embed", DType::F32, &[2, 2]),
        ConstantDecl::new("embed", DType::I32, &EMBED),
        ConstantDecl::new("norm", DType::F32, &NORM).placement(Placement::Host),
    ] {
        expect_code(
            Container::with_options(
                &rt,
                &ContainerOptions::new()
                    .name("other")
                    .constant(decl)
                    .store(&store),
            ),
            Code::InvalidArgument,
            &["other", "prefill"],
        );
    }
    // A refused container leaves no trace; the same declaration outside the store is fine.
    assert_eq!(store.stats()?, before);
    Container::from_map(&rt, &map(&[("embed", &[5], &five)]), "alone")?;
    Ok(())
}

#[test]
fn store_update_and_swap_are_visible_in_every_member() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let (prefill, decode) = store_pair(&rt, &store);
    let old_run = decode.begin_run()?;
    let old_embed = ptr(&old_run, "embed");

    store.update(
        &map(&[("embed", &EMBED, &[7.0; 4]), ("norm", &NORM, &[7.0; 2])]),
        &UpdateOptions::new(),
    )?;
    // Staged, not published.
    for c in [&prefill, &decode] {
        let run = c.begin_run()?;
        assert_eq!(read(&run, "embed"), [1.0; 4]);
        run.end()?;
    }
    store.swap()?;
    let (p, d) = (prefill.begin_run()?, decode.begin_run()?);
    for fqn in ["embed", "norm"] {
        assert_eq!(
            ptr(&p, fqn),
            ptr(&d, fqn),
            "{fqn} still shared after the swap"
        );
        assert!(read(&p, fqn).iter().all(|&x| x == 7.0));
        assert!(read(&d, fqn).iter().all(|&x| x == 7.0));
    }
    assert_ne!(ptr(&p, "embed"), old_embed, "written once into new storage");
    assert_eq!(
        read(&p, "prefill.head"),
        [1.0; 3],
        "unwritten constants kept"
    );
    assert_eq!(read(&d, "decode.head"), [2.0; 2]);
    p.end()?;
    d.end()?;
    // The run begun before the swap still sees its generation.
    assert_eq!(read(&old_run, "embed"), [1.0; 4]);
    assert_eq!(ptr(&old_run, "embed"), old_embed);
    old_run.end()?;
    assert_eq!(store.stats()?.saved_bytes, (4 + 2) * 4);

    // Nothing staged any more; failed updates stage nothing.
    expect_code(store.swap(), Code::FailedPrecondition, &[]);
    expect_code(
        store.update(
            &map(&[("embed", &EMBED, &[8.0; 4]), ("nope", &[1], &[0.0])]),
            &UpdateOptions::new(),
        ),
        Code::NotFound,
        &["nope"],
    );
    expect_code(
        store.update(
            &map(&[("embed", &[2, 2], &[8.0; 4])]),
            &UpdateOptions::new(),
        ),
        Code::InvalidArgument,
        &["embed"],
    );
    expect_code(
        store.update(
            &map(&[("embed", &EMBED, &[8.0; 4])]),
            &UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
        ),
        Code::Unsupported,
        &[],
    );
    expect_code(store.swap(), Code::FailedPrecondition, &[]);

    // A name only one member declares stages only that member.
    let gen = (prefill.generation(), decode.generation());
    store.update(
        &map(&[("decode.head", &[2], &[5.0; 2])]),
        &UpdateOptions::new(),
    )?;
    store.swap()?;
    assert_eq!(prefill.generation(), gen.0);
    assert_ne!(decode.generation(), gen.1);
    let d = decode.begin_run()?;
    assert_eq!(read(&d, "decode.head"), [5.0; 2]);
    assert!(read(&d, "embed").iter().all(|&x| x == 7.0));
    d.end()?;
    Ok(())
}

#[test]
fn a_container_update_detaches_only_that_container() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let (prefill, decode) = store_pair(&rt, &store);
    prefill.update(&map(&[("embed", &EMBED, &[3.0; 4])]), &UpdateOptions::new())?;
    prefill.swap()?;
    let (p, d) = (prefill.begin_run()?, decode.begin_run()?);
    assert_ne!(ptr(&p, "embed"), ptr(&d, "embed"));
    assert_eq!(ptr(&p, "norm"), ptr(&d, "norm"));
    assert_eq!(read(&p, "embed"), [3.0; 4]);
    assert_eq!(read(&d, "embed"), [1.0; 4]);
    p.end()?;
    d.end()?;
    assert_eq!(
        store.stats()?.saved_bytes,
        2 * 4,
        "only norm is still shared"
    );
    Ok(())
}

#[test]
fn store_update_with_fold_recomputes_derived_constants() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    // "scaled" = 2 * "embed", computed by the fold; only prefill declares it.
    let prefill = Container::with_options(
        &rt,
        &ContainerOptions::new()
            .name("prefill")
            .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
            .constant(ConstantDecl::new("scaled", DType::F32, &EMBED).derived(true))
            .store(&store),
    )?;
    let decode = Container::with_options(
        &rt,
        &ContainerOptions::new()
            .name("decode")
            .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
            .store(&store),
    )?;
    let with_scaled = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let fold = {
        let (with_scaled, calls) = (with_scaled.clone(), calls.clone());
        move |run: &wharf::FoldRun<'_>| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            calls.fetch_add(1, Ordering::SeqCst);
            // A callback written for the containers that declare "scaled".
            let Ok(scaled) = run.tensor("scaled") else {
                return Ok(());
            };
            with_scaled.fetch_add(1, Ordering::SeqCst);
            let mut embed = [0u8; 16];
            run.read("embed", 0, &mut embed)?;
            let values: Vec<f32> = embed
                .chunks(4)
                .map(|b| 2.0 * f32::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            // SAFETY: host memory of 4 f32s that only this fold writes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    values.as_ptr(),
                    scaled.data_ptr_mut()?.cast::<f32>(),
                    4,
                )
            };
            Ok(())
        }
    };
    prefill.update_with_fold(
        &map(&[("embed", &EMBED, &[1.0, 2.0, 3.0, 4.0])]),
        &UpdateOptions::new(),
        fold.clone(),
    )?;
    prefill.swap()?;
    decode.update(&map(&[("embed", &EMBED, &[0.0; 4])]), &UpdateOptions::new())?;
    decode.swap()?;

    // Prefill declares derived constants: a store update needs a fold.
    let fresh = [5.0f32, 6.0, 7.0, 8.0];
    expect_code(
        store.update(&map(&[("embed", &EMBED, &fresh)]), &UpdateOptions::new()),
        Code::InvalidArgument,
        &["prefill", "fold"],
    );
    calls.store(0, Ordering::SeqCst);
    with_scaled.store(0, Ordering::SeqCst);
    store.update_with_fold(
        &map(&[("embed", &EMBED, &fresh)]),
        &UpdateOptions::new(),
        fold,
    )?;
    store.swap()?;
    assert_eq!(with_scaled.load(Ordering::SeqCst), 1, "folded prefill once");
    // decode declares no derived constant, so the fold is not called for it.
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let (p, d) = (prefill.begin_run()?, decode.begin_run()?);
    assert_eq!(read(&p, "scaled"), [10.0, 12.0, 14.0, 16.0]);
    assert_eq!(read(&d, "embed"), fresh);
    assert_eq!(ptr(&p, "embed"), ptr(&d, "embed"));
    p.end()?;
    d.end()?;

    // A fold's error aborts the store update: nothing is staged anywhere.
    let err = store
        .update_with_fold(
            &map(&[("embed", &EMBED, &[0.5; 4])]),
            &UpdateOptions::new(),
            |_run: &wharf::FoldRun<'_>| Err("no".into()),
        )
        .expect_err("aborted");
    assert_eq!(err.code(), Code::Callback, "{err}");
    expect_code(store.swap(), Code::FailedPrecondition, &[]);
    Ok(())
}

#[test]
fn a_store_of_another_runtime_is_refused() -> wharf::Result<()> {
    let (rt, other) = (host(), host());
    let store = WeightStore::new(&rt)?;
    let weights = map(&[("embed", &EMBED, &[1.0; 4])]);
    Container::from_map_with_options(&rt, &weights, &ContainerOptions::new().store(&store))?;
    expect_code(
        Container::from_map_with_options(
            &other,
            &weights,
            &ContainerOptions::new().name("elsewhere").store(&store),
        ),
        Code::InvalidArgument,
        &["elsewhere", "runtime"],
    );
    expect_code(
        Container::with_options(
            &other,
            &ContainerOptions::new()
                .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
                .store(&store),
        ),
        Code::InvalidArgument,
        &["model", "runtime"],
    );
    // A clone of the runtime is the same runtime.
    Container::from_map_with_options(
        &rt.clone(),
        &weights,
        &ContainerOptions::new().store(&store),
    )?;
    Ok(())
}

/// The binding refuses a store of another runtime itself (above), and so does the C library
/// (early 0.2.0 builds accepted it and handed out the other runtime's storage).
#[test]
fn the_c_library_refuses_a_store_of_another_runtime() {
    let (rt, other) = (host(), host());
    let store = WeightStore::new(&rt).unwrap();
    let weights = map(&[("embed", &EMBED, &[1.0; 4])]);
    let _first =
        Container::from_map_with_options(&rt, &weights, &ContainerOptions::new().store(&store))
            .unwrap();
    // SAFETY: zeroed options filled by *_init; live runtime, store and map; the container,
    // if created, is freed below.
    unsafe {
        let mut o = std::mem::zeroed::<sys::wharf_container_options>();
        sys::wharf_container_options_init_sized(
            &mut o,
            std::mem::size_of::<sys::wharf_container_options>(),
        );
        o.store = store.as_raw();
        let mut m = std::ptr::null_mut();
        assert!(sys::wharf_constant_map_create(&mut m).is_null());
        let data = [1.0f32; 4];
        let view = sys::wharf_tensor_view {
            struct_size: std::mem::size_of::<sys::wharf_tensor_view>() as u32,
            flags: 0,
            data: data.as_ptr() as *mut _,
            dtype: sys::WHARF_DTYPE_F32,
            device_type: sys::WHARF_DEVICE_CPU,
            device_index: 0,
            ndim: 1,
            shape: EMBED.as_ptr(),
            strides: std::ptr::null(),
            byte_offset: 0,
        };
        assert!(sys::wharf_constant_map_set(m, c"embed".as_ptr(), &view).is_null());
        let mut out = std::ptr::null_mut();
        let st = sys::wharf_container_create_from_map(other.as_raw(), m, &o, &mut out);
        let code = sys::wharf_status_code(st);
        sys::wharf_status_free(st);
        sys::wharf_container_free(out);
        sys::wharf_constant_map_free(m);
        assert_eq!(code, sys::WHARF_INVALID_ARGUMENT);
    }
    drop(weights);
}

/// wharf.h: a store update's fold "runs for each such container that declares derived
/// constants", so a fold that needs its derived constant never sees a member without one
/// (early 0.2.0 builds called it for every staged member and aborted the update).
#[test]
fn store_fold_runs_only_for_members_with_derived_constants() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let with_derived = ContainerOptions::new()
        .name("prefill")
        .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
        .constant(ConstantDecl::new("scaled", DType::F32, &EMBED).derived(true))
        .store(&store);
    let prefill = Container::with_options(&rt, &with_derived)?;
    let decode = Container::with_options(
        &rt,
        &ContainerOptions::new()
            .name("decode")
            .constant(ConstantDecl::new("embed", DType::F32, &EMBED))
            .store(&store),
    )?;
    // Written for the containers that declare "scaled" (it only resolves it).
    let fold = |run: &wharf::FoldRun<'_>| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        run.tensor("scaled")?;
        Ok(())
    };
    let weights = map(&[("embed", &EMBED, &[1.0; 4])]);
    prefill.update_with_fold(&weights, &UpdateOptions::new(), fold)?;
    prefill.swap()?;
    decode.update(&weights, &UpdateOptions::new())?;
    decode.swap()?;
    store.update_with_fold(&weights, &UpdateOptions::new(), fold)?; // NotFound 'scaled' (decode)
    store.swap()
}

// ---- sessions --------------------------------------------------------------------------

const KV: [i64; 1] = [4];

/// A container named `name` with constant "w" F32 [2] (already swapped in) and `states`.
fn model(rt: &Runtime, name: &str, states: Vec<StateDecl<'_>>, budget: u64) -> Container {
    let c = Container::with_options(
        rt,
        &ContainerOptions::new()
            .name(name)
            .constant(ConstantDecl::new("w", DType::F32, &[2]))
            .states(states)
            .max_session_bytes(budget),
    )
    .expect("container");
    c.update(&map(&[("w", &[2], &[1.0, 2.0])]), &UpdateOptions::new())
        .expect("update");
    c.swap().expect("swap");
    c
}

fn session(rt: &Runtime, containers: &[&Container]) -> Session {
    Session::new(rt, containers, &SessionOptions::new()).expect("session")
}

#[test]
fn sessions_are_isolated() -> wharf::Result<()> {
    let rt = host();
    let c = model(
        &rt,
        "prefill",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    );
    let (mut a, mut b) = (session(&rt, &[&c]), session(&rt, &[&c]));
    assert_eq!((a.state_bytes(), b.state_bytes()), (16, 16));
    // The container's own declarations (wharf_container_name, _num_states, _state_info).
    assert_eq!(c.name(), "prefill");
    assert_eq!(
        c.states()?,
        vec![wharf::StateInfo {
            fqn: "kv".into(),
            dtype: DType::F32,
            shape: KV.to_vec(),
            nbytes: 16
        }]
    );

    let mut run = c.begin_run_with_session(&mut a)?;
    let t = run.tensor("kv")?;
    assert_eq!((t.dtype(), t.shape()), (DType::F32, &KV[..]));
    assert_eq!(
        t.as_slice::<f32>()?,
        [0.0; 4],
        "a new session starts from zeros"
    );
    assert_eq!(read(&run, "w"), [1.0, 2.0], "constants resolve first");
    let pa = ptr(&run, "kv");
    write_state(&mut run, "kv", &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(read(&run, "kv"), [1.0, 2.0, 3.0, 4.0]);
    run.end()?;

    let mut run = c.begin_run_with_session(&mut b)?;
    assert_ne!(ptr(&run, "kv"), pa);
    assert_eq!(read(&run, "kv"), [0.0; 4], "untouched by the other session");
    write_state(&mut run, "kv", &[-1.0; 4]);
    run.end()?;

    let run = c.begin_run_with_session(&mut a)?;
    assert_eq!(
        ptr(&run, "kv"),
        pa,
        "a session keeps its buffer between runs"
    );
    assert_eq!(read(&run, "kv"), [1.0, 2.0, 3.0, 4.0]);
    let mut second = [0u8; 4];
    run.read("kv", 4, &mut second)?;
    assert_eq!(f32::from_ne_bytes(second), 2.0);
    expect_code(
        run.read("kv", 8, &mut [0u8; 12]),
        Code::InvalidArgument,
        &["kv"],
    );
    expect_code(run.tensor("nope"), Code::NotFound, &["nope"]);
    run.end()?;
    Ok(())
}

#[test]
fn sessions_on_many_threads_are_independent() {
    let rt = host();
    let c = Arc::new(model(
        &rt,
        "m",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    ));
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let (rt, c) = (rt.clone(), c.clone());
            thread::spawn(move || {
                let mut s = session(&rt, &[&c]);
                for i in 0..20 {
                    let mut run = c.begin_run_with_session(&mut s).expect("run");
                    let want = if i == 0 {
                        0.0
                    } else {
                        (t * 100 + i - 1) as f32
                    };
                    assert_eq!(read(&run, "kv"), [want; 4]);
                    write_state(&mut run, "kv", &[(t * 100 + i) as f32; 4]);
                    run.end().expect("end");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
}

#[test]
fn a_state_shared_by_two_containers_is_one_buffer() -> wharf::Result<()> {
    let rt = host();
    let h0 = [0.5f32, 0.25];
    let prefill = model(
        &rt,
        "prefill",
        vec![
            StateDecl::new("kv", DType::F32, &KV),
            StateDecl::new("h", DType::F32, &[2]).initial(&h0),
        ],
        0,
    );
    let decode = model(
        &rt,
        "decode",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    );
    let mut s = session(&rt, &[&prefill, &decode]);
    assert_eq!(s.state_bytes(), 16 + 8, "kv counted once");

    let mut run = prefill.begin_run_with_session(&mut s)?;
    let p = ptr(&run, "kv");
    write_state(&mut run, "kv", &[1.0, 2.0, 3.0, 4.0]);
    run.end()?;
    let run = decode.begin_run_with_session(&mut s)?;
    assert_eq!(ptr(&run, "kv"), p, "one buffer for both containers");
    assert_eq!(read(&run, "kv"), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(read(&run, "h"), h0, "every state of the session resolves");
    run.end()?;

    // Declarations under one FQN must agree.
    let wide = model(&rt, "wide", vec![StateDecl::new("kv", DType::F32, &[5])], 0);
    expect_code(
        Session::new(&rt, &[&prefill, &wide], &SessionOptions::new()),
        Code::InvalidArgument,
        &["kv", "prefill", "wide"],
    );
    // A session runs only the containers it was created over.
    let mut only_prefill = session(&rt, &[&prefill]);
    expect_code(
        decode.begin_run_with_session(&mut only_prefill),
        Code::InvalidArgument,
        &["decode"],
    );
    Ok(())
}

#[test]
fn fork_copies_then_diverges() -> wharf::Result<()> {
    let rt = host();
    let mut initial = vec![1.0f32, 2.0, 3.0, 4.0];
    let init = [1.0f32, 2.0, 3.0, 4.0];
    let c = model(
        &rt,
        "m",
        vec![StateDecl::new("kv", DType::F32, &KV).initial(&initial)],
        0,
    );
    initial.fill(-1.0); // captured at creation: later changes do not matter
    let mut s = session(&rt, &[&c]);
    let mut run = c.begin_run_with_session(&mut s)?;
    assert_eq!(read(&run, "kv"), init, "starts from the initial value");
    write_state(&mut run, "kv", &[5.0, 6.0, 7.0, 8.0]);
    let ps = ptr(&run, "kv");
    run.end()?;

    let mut f = s.fork()?;
    assert_eq!(f.state_bytes(), 16);
    let mut run = c.begin_run_with_session(&mut f)?;
    assert_ne!(ptr(&run, "kv"), ps, "a fork has its own buffer");
    assert_eq!(
        read(&run, "kv"),
        [5.0, 6.0, 7.0, 8.0],
        "a copy of the source"
    );
    write_state(&mut run, "kv", &[9.0, 10.0, 11.0, 12.0]);
    run.end()?;

    let mut run = c.begin_run_with_session(&mut s)?;
    assert_eq!(
        read(&run, "kv"),
        [5.0, 6.0, 7.0, 8.0],
        "the source is untouched"
    );
    write_state(&mut run, "kv", &[0.0; 4]);
    run.end()?;
    let run = c.begin_run_with_session(&mut f)?;
    assert_eq!(read(&run, "kv"), [9.0, 10.0, 11.0, 12.0]);
    run.end()?;

    // A fork of a session that never ran starts from the initial value too.
    let mut g = session(&rt, &[&c]).fork()?;
    let run = c.begin_run_with_session(&mut g)?;
    assert_eq!(read(&run, "kv"), init);
    run.end()?;
    Ok(())
}

#[test]
fn reset_restores_initial_values_and_state_survives_swaps() -> wharf::Result<()> {
    let rt = host();
    let init = [1.0f32, 2.0, 3.0, 4.0];
    let c = model(
        &rt,
        "m",
        vec![
            StateDecl::new("kv", DType::F32, &KV).initial(&init),
            StateDecl::new("z", DType::F32, &[2]),
        ],
        0,
    );
    let mut s = session(&rt, &[&c]);
    s.reset()?; // before the first run: nothing to do
    let mut run = c.begin_run_with_session(&mut s)?;
    write_state(&mut run, "kv", &[7.0; 4]);
    write_state(&mut run, "z", &[3.0; 2]);
    run.end()?;

    // A weight swap leaves the state alone.
    c.update(&map(&[("w", &[2], &[8.0, 9.0])]), &UpdateOptions::new())?;
    c.swap()?;
    let run = c.begin_run_with_session(&mut s)?;
    assert_eq!(read(&run, "w"), [8.0, 9.0]);
    assert_eq!(read(&run, "kv"), [7.0; 4]);
    run.end()?;

    s.reset()?;
    let mut f = s.fork()?; // ordered after the reset on the device
    let mut run = c.begin_run_with_session(&mut s)?;
    assert_eq!(read(&run, "kv"), init);
    assert_eq!(read(&run, "z"), [0.0; 2]);
    write_state(&mut run, "kv", &[6.0; 4]);
    run.end()?;
    let run = c.begin_run_with_session(&mut f)?;
    assert_eq!(read(&run, "kv"), init, "the fork copied the reset state");
    run.end()?;
    Ok(())
}

#[test]
fn a_container_with_states_refuses_a_run_without_a_session() -> wharf::Result<()> {
    let rt = host();
    let c = model(
        &rt,
        "stateful",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    );
    expect_code(c.begin_run(), Code::FailedPrecondition, &["stateful"]);

    // A container without states runs with or without a session that covers it.
    let plain = model(&rt, "plain", vec![], 0);
    plain.begin_run()?.end()?;
    let mut s = session(&rt, &[&c, &plain]);
    plain.begin_run_with_session(&mut s)?.end()?;
    c.begin_run_with_session(&mut s)?.end()?;

    expect_code(
        Session::new(&rt, &[], &SessionOptions::new()),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        Session::new(&rt, &[&c, &c], &SessionOptions::new()),
        Code::InvalidArgument,
        &["stateful"],
    );
    let other = host();
    expect_code(
        Session::new(&other, &[&c], &SessionOptions::new()),
        Code::InvalidArgument,
        &["stateful"],
    );
    // Before the first swap a session run fails like any run.
    let fresh = Container::with_options(
        &rt,
        &ContainerOptions::new()
            .name("fresh")
            .constant(ConstantDecl::new("w", DType::F32, &[2]))
            .state(StateDecl::new("kv", DType::F32, &KV)),
    )?;
    let mut s = session(&rt, &[&fresh]);
    expect_code(
        fresh.begin_run_with_session(&mut s),
        Code::FailedPrecondition,
        &[],
    );
    Ok(())
}

#[test]
fn budgets_give_resource_exhausted() -> wharf::Result<()> {
    let rt = host();
    // 16 bytes of state per session; the container allows 32 for all of them.
    let c = model(&rt, "m", vec![StateDecl::new("kv", DType::F32, &KV)], 32);
    expect_code(
        Session::new(&rt, &[&c], &SessionOptions::new().max_state_bytes(8)),
        Code::ResourceExhausted,
        &["16"],
    );
    let exact = Session::new(&rt, &[&c], &SessionOptions::new().max_state_bytes(16))?;
    let second = session(&rt, &[&c]);
    expect_code(
        Session::new(&rt, &[&c], &SessionOptions::new()),
        Code::ResourceExhausted,
        &[],
    );
    expect_code(second.fork(), Code::ResourceExhausted, &[]);
    drop(exact);
    let third = second.fork()?;
    drop((second, third));

    // A session refused by one container's budget leaves no reservation in the others.
    let a = model(&rt, "a", vec![StateDecl::new("kv", DType::F32, &KV)], 32);
    let b = model(&rt, "b", vec![StateDecl::new("kv", DType::F32, &KV)], 16);
    let _ab = session(&rt, &[&a, &b]);
    expect_code(
        Session::new(&rt, &[&a, &b], &SessionOptions::new()),
        Code::ResourceExhausted,
        &["b"],
    );
    let _a = session(&rt, &[&a]); // a: 16 + 16 of 32
    expect_code(
        Session::new(&rt, &[&a], &SessionOptions::new()),
        Code::ResourceExhausted,
        &["a"],
    );
    Ok(())
}

#[test]
fn out_of_memory_at_the_first_run_or_eagerly() -> wharf::Result<()> {
    let rt = Runtime::new(
        &RuntimeOptions::new()
            .backend(Backend::Host)
            .device_memory_limit(1 << 20),
    )?;
    let big = [512 << 10]; // 2 MiB of F32
    let c = model(&rt, "big", vec![StateDecl::new("kv", DType::F32, &big)], 0);
    let base = state_memory(&rt);
    expect_code(
        Session::new(&rt, &[&c], &SessionOptions::new().allocate_eagerly(true)),
        Code::OutOfMemory,
        &[],
    );
    let mut lazy = session(&rt, &[&c]);
    assert_eq!(lazy.state_bytes(), 2 << 20);
    expect_code(
        c.begin_run_with_session(&mut lazy),
        Code::OutOfMemory,
        &["kv"],
    );
    assert_eq!(state_memory(&rt), base);
    // The failed run left the session usable (not busy).
    lazy.reset()?;
    lazy.fork()?;
    Ok(())
}

#[test]
fn state_is_allocated_at_the_first_run_or_eagerly() -> wharf::Result<()> {
    let rt = host();
    let c = model(&rt, "m", vec![StateDecl::new("kv", DType::F32, &KV)], 0);
    let base = state_memory(&rt);
    let mut lazy = session(&rt, &[&c]);
    assert_eq!(lazy.state_bytes(), 16);
    assert_eq!(state_memory(&rt), base, "nothing before the first run");
    c.begin_run_with_session(&mut lazy)?.end()?;
    assert_eq!(state_memory(&rt), base + 16);
    let eager = Session::new(&rt, &[&c], &SessionOptions::new().allocate_eagerly(true))?;
    assert_eq!(state_memory(&rt), base + 32);
    drop(lazy);
    assert_eq!(state_memory(&rt), base + 16, "freed with the session");
    drop(eager);
    assert_eq!(state_memory(&rt), base);
    Ok(())
}

#[test]
fn state_declaration_errors() -> wharf::Result<()> {
    let rt = host();
    let create = |name: &str, states: Vec<StateDecl<'_>>| {
        Container::with_options(
            &rt,
            &ContainerOptions::new()
                .name(name)
                .constant(ConstantDecl::new("w", DType::F32, &[2]))
                .states(states),
        )
    };
    let ints = [1i32, 2, 3, 4];
    expect_code(
        create(
            "dtype",
            vec![StateDecl::new("kv", DType::F32, &KV).initial(&ints)],
        ),
        Code::InvalidArgument,
        &["kv"],
    );
    expect_code(
        create(
            "length",
            vec![StateDecl::new("kv", DType::F32, &KV).initial(&[1.0f32; 3])],
        ),
        Code::InvalidArgument,
        &["kv", "16 bytes"],
    );
    expect_code(
        create("clash", vec![StateDecl::new("w", DType::F32, &[2])]),
        Code::InvalidArgument,
        &["w"],
    );
    expect_code(
        create(
            "twice",
            vec![
                StateDecl::new("kv", DType::F32, &KV),
                StateDecl::new("kv", DType::F32, &KV),
            ],
        ),
        Code::InvalidArgument,
        &["kv"],
    );
    expect_code(
        create("negative", vec![StateDecl::new("kv", DType::F32, &[-1])]),
        Code::InvalidArgument,
        &["kv"],
    );
    expect_code(
        Container::from_map_with_options(
            &rt,
            &map(&[("w", &[2], &[1.0, 2.0])]),
            &ContainerOptions::new().constant(ConstantDecl::new("v", DType::F32, &[1])),
        ),
        Code::InvalidArgument,
        &["constants"],
    );

    // Raw bytes for dtypes without a Rust element type; states next to a map's constants.
    let half_ones = [0x00u8, 0x3c, 0x00, 0x3c]; // two F16 1.0s, little-endian
    let c = Container::from_map_with_options(
        &rt,
        &map(&[("w", &[2], &[1.0, 2.0])]),
        &ContainerOptions::new()
            .name("half")
            .state(StateDecl::new("h", DType::F16, &[2]).initial_bytes(&half_ones)),
    )?;
    let mut s = session(&rt, &[&c]);
    let run = c.begin_run_with_session(&mut s)?;
    let mut got = [0u8; 4];
    run.read("h", 0, &mut got)?;
    if cfg!(target_endian = "little") {
        assert_eq!(got, half_ones);
    }
    assert_eq!(run.tensor("h")?.dtype(), DType::F16);
    run.end()?;
    Ok(())
}

/// The C library's one-run-at-a-time rule, which safe Rust enforces at compile time (see
/// the `compile_fail` examples on `Session`), checked through the raw handles.
#[test]
fn the_c_library_refuses_a_second_run_reset_or_fork_while_a_run_is_open() -> wharf::Result<()> {
    fn code(status: *mut sys::wharf_status) -> sys::wharf_code {
        // SAFETY: NULL or a status the library returned, freed once here.
        unsafe {
            let c = sys::wharf_status_code(status);
            sys::wharf_status_free(status);
            c
        }
    }
    let rt = host();
    let prefill = model(
        &rt,
        "prefill",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    );
    let decode = model(
        &rt,
        "decode",
        vec![StateDecl::new("kv", DType::F32, &KV)],
        0,
    );
    let mut s = session(&rt, &[&prefill, &decode]);
    let mut open = std::ptr::null_mut();
    // SAFETY: live handles; NULL stream on the host backend; the run is ended below.
    let st = unsafe {
        sys::wharf_run_begin(
            prefill.as_raw(),
            s.as_raw(),
            std::ptr::null_mut(),
            &mut open,
        )
    };
    assert_eq!(code(st), sys::WHARF_OK);
    let mut second = std::ptr::null_mut();
    // SAFETY: as above.
    let st = unsafe {
        sys::wharf_run_begin(
            decode.as_raw(),
            s.as_raw(),
            std::ptr::null_mut(),
            &mut second,
        )
    };
    assert_eq!(code(st), sys::WHARF_BUSY);
    assert!(second.is_null());
    expect_code(
        decode.begin_run_with_session(&mut s),
        Code::Busy,
        &["session"],
    );
    expect_code(s.reset(), Code::Busy, &[]);
    expect_code(s.fork(), Code::Busy, &[]);
    // SAFETY: the run begun above, ended once.
    assert_eq!(code(unsafe { sys::wharf_run_end(open) }), sys::WHARF_OK);
    decode.begin_run_with_session(&mut s)?.end()?;
    s.reset()?;
    s.fork()?;
    Ok(())
}

// ---- drop order ------------------------------------------------------------------------

#[test]
fn store_dropped_before_its_containers_and_their_runs() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let (prefill, decode) = store_pair(&rt, &store);
    let run = decode.begin_run()?;
    drop(store);
    assert_eq!(read(&run, "embed"), [1.0; 4]);
    drop(prefill);
    assert_eq!(
        read(&run, "embed"),
        [1.0; 4],
        "shared storage lives while a user does"
    );
    run.end()?;
    let run = decode.begin_run()?;
    assert_eq!(read(&run, "norm"), [1.0; 2]);
    run.end()?;
    Ok(())
}

#[test]
fn store_storage_goes_with_its_last_container() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let base = constants_bytes(&rt);
    let (prefill, decode) = store_pair(&rt, &store);
    drop(decode);
    assert_eq!(store.stats()?.saved_bytes, 0);
    drop(prefill);
    rt.synchronize()?;
    assert_eq!(store.stats()?.num_unique_constants, 0);
    assert_eq!(constants_bytes(&rt), base);
    Ok(())
}

#[test]
fn session_dropped_before_its_containers() -> wharf::Result<()> {
    let rt = host();
    let c = model(&rt, "m", vec![StateDecl::new("kv", DType::F32, &KV)], 0);
    let base = state_memory(&rt);
    let mut s = session(&rt, &[&c]);
    let mut run = c.begin_run_with_session(&mut s)?;
    write_state(&mut run, "kv", &[1.0; 4]);
    run.end()?;
    drop(s);
    assert_eq!(state_memory(&rt), base);
    let mut s = session(&rt, &[&c]);
    let run = c.begin_run_with_session(&mut s)?;
    assert_eq!(read(&run, "kv"), [0.0; 4]);
    run.end()?;
    Ok(())
}

#[test]
fn containers_store_and_runtime_dropped_before_the_session() -> wharf::Result<()> {
    let rt = host();
    let store = WeightStore::new(&rt)?;
    let c = Container::from_map_with_options(
        &rt,
        &map(&[("w", &[2], &[1.0, 2.0])]),
        &ContainerOptions::new()
            .store(&store)
            .state(StateDecl::new("kv", DType::F32, &KV)),
    )?;
    let mut s = session(&rt, &[&c]);
    let mut run = c.begin_run_with_session(&mut s)?;
    write_state(&mut run, "kv", &[4.0; 4]);
    run.end()?;
    drop(store);
    drop(c);
    drop(rt);
    // The session keeps its containers (and their runtime) alive.
    assert_eq!(s.state_bytes(), 16);
    s.reset()?;
    let f = s.fork()?;
    assert_eq!(f.state_bytes(), 16);
    s.runtime().synchronize()?;
    drop(s);
    drop(f);
    Ok(())
}
