// SPDX-License-Identifier: Apache-2.0
//! Update options (library 0.3), and the promises the safe layer stands on, tried on the
//! host backend: an open run never observes a write to storage it pinned (so slices from
//! `TensorView::as_slice` stay unchanged whatever the update mode), and a fold callback
//! that calls back into the API gets an answer, never a hang.

use std::ffi::c_void;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wharf::{
    Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, MemoryTag, Runtime,
    UpdateOptions, UpdateTarget, WeightStore,
};

mod common;
use common::{expect_code, host};

fn map<'a>(entries: &[(&str, &'a [f32])]) -> ConstantMap<'a> {
    let mut m = ConstantMap::new().expect("map");
    for (name, data) in entries {
        m.set_slice(name, &[data.len() as i64], data)
            .expect("set_slice");
    }
    m
}

fn constants_bytes(rt: &Runtime) -> u64 {
    rt.memory_stats().unwrap().current_of(MemoryTag::Constants)
}

/// A loaded container of one constant "w" = `values`.
fn loaded(rt: &Runtime, values: &[f32]) -> Container {
    Container::from_map(rt, &map(&[("w", values)]), "m").expect("container")
}

fn now(c: &Container, fqn: &str) -> Vec<f32> {
    let run = c.begin_run().expect("begin_run");
    let v = run.tensor(fqn).unwrap().to_vec::<f32>().unwrap();
    run.end().unwrap();
    v
}

/// Runs `f` on another thread and fails the test if it has not finished within `limit`
/// (a hang shows as a failure naming `what`, not as a stuck test run).
#[track_caller]
fn finishes_within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not finish within {limit:?} (a hang)"),
    }
}

// ---- update options ---------------------------------------------------------------------

#[test]
fn in_place_max_wait_bounds_the_wait_and_the_open_run_keeps_its_data() -> wharf::Result<()> {
    let rt = host();
    let c = loaded(&rt, &[1.0; 4]);
    let generation = c.generation();
    let before = constants_bytes(&rt);

    // The open run is held on this very thread: the update cannot wait for it to end.
    let open = c.begin_run()?;
    let old = open.tensor("w")?.as_slice::<f32>()?;
    let fresh = [2.0f32; 4];
    let options = UpdateOptions::new()
        .target(UpdateTarget::ActiveInPlace)
        .in_place_max_wait(Duration::from_millis(50));
    let start = Instant::now();
    c.update(&map(&[("w", &fresh)]), &options)?;
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "an in-place update bounded at 50 ms took {took:?}"
    );
    assert!(
        took >= Duration::from_millis(45),
        "the update did not wait for the open run at all ({took:?})"
    );
    // The run's storage was still pinned after the wait: the constant got fresh storage,
    // the open run (and its slice) still read the old data, new runs the new data.
    assert_eq!(old, &[1.0; 4]);
    assert_eq!(open.read_to_vec::<f32>("w")?, [1.0; 4]);
    assert_eq!(
        constants_bytes(&rt),
        before + 16,
        "fresh storage for the pinned constant"
    );
    assert!(c.generation() > generation);
    assert_eq!(now(&c, "w"), fresh);
    assert_eq!(old, &[1.0; 4]);
    open.end()?;

    // With no run open, the same update overwrites the storage in place.
    let ptr = |c: &Container| {
        let run = c.begin_run().unwrap();
        let p = run.tensor("w").unwrap().data_ptr() as usize;
        run.end().unwrap();
        p
    };
    let storage = ptr(&c);
    c.update(&map(&[("w", &[3.0; 4])]), &options)?;
    assert_eq!(ptr(&c), storage);
    assert_eq!(now(&c, "w"), [3.0; 4]);

    // Duration::ZERO never waits.
    let open = c.begin_run()?;
    let start = Instant::now();
    c.update(
        &map(&[("w", &[4.0; 4])]),
        &options.in_place_max_wait(Duration::ZERO),
    )?;
    assert!(start.elapsed() < Duration::from_millis(45));
    assert_eq!(open.tensor("w")?.as_slice::<f32>()?, &[3.0; 4]);
    open.end()?;
    assert_eq!(now(&c, "w"), [4.0; 4]);
    Ok(())
}

#[test]
fn wait_stream_is_refused_on_the_host_backend() -> wharf::Result<()> {
    let rt = host();
    let c = loaded(&rt, &[1.0; 4]);
    let generation = c.generation();
    // SAFETY: the host backend refuses any non-NULL stream before using it; nothing
    // dereferences this value.
    let options = unsafe { UpdateOptions::new().wait_stream(0x10usize as *mut c_void) };
    let fresh = [2.0f32; 4];
    expect_code(
        c.update(&map(&[("w", &fresh)]), &options),
        Code::InvalidArgument,
        &["wait_stream", "host backend"],
    );
    expect_code(
        c.update(
            &map(&[("w", &fresh)]),
            &options.target(UpdateTarget::ActiveInPlace),
        ),
        Code::InvalidArgument,
        &["wait_stream"],
    );
    expect_code(c.swap(), Code::FailedPrecondition, &[]);
    assert_eq!((now(&c, "w"), c.generation()), (vec![1.0; 4], generation));

    let store = WeightStore::new(&rt)?;
    let member = Container::from_map_with_options(
        &rt,
        &map(&[("w", &[1.0; 4])]),
        &ContainerOptions::new().store(&store),
    )?;
    expect_code(
        store.update(&map(&[("w", &fresh)]), &options),
        Code::InvalidArgument,
        &["wait_stream"],
    );
    expect_code(store.swap(), Code::FailedPrecondition, &[]);
    assert_eq!(now(&member, "w"), [1.0; 4]);
    // NULL, set explicitly, is the default.
    // SAFETY: NULL is always allowed.
    let null = unsafe { UpdateOptions::new().wait_stream(std::ptr::null_mut()) };
    assert_eq!(null, UpdateOptions::new());
    c.update(&map(&[("w", &fresh)]), &null)?;
    c.swap()?;
    assert_eq!(now(&c, "w"), fresh);
    Ok(())
}

// ---- open slices never change -----------------------------------------------------------

/// A run's slices of its constants stay as they were while other threads update in place
/// (reusing storage once the run has ended, fresh storage while it is open), update the
/// inactive generation and swap, over and over: the test reads every element of the open
/// slices throughout. Afterwards, an in-place update that waited for the run to end reused
/// the very storage the slices pointed at, so the writes did reach that memory, only never
/// while a run had it pinned.
#[test]
fn an_open_slice_never_sees_in_place_updates_or_swaps() -> wharf::Result<()> {
    const N: usize = 4096;
    let rt = host();
    let c = Container::new(
        &rt,
        "m",
        &[
            ConstantDecl::new("w", DType::F32, &[N as i64]),
            ConstantDecl::new("h", DType::F32, &[N as i64]).placement(wharf::Placement::Host),
        ],
    )?;
    let ones = vec![1.0f32; N];
    c.update(&map(&[("w", &ones), ("h", &ones)]), &UpdateOptions::new())?;
    c.swap()?;

    for round in 0..20 {
        let run = c.begin_run()?;
        let base = run.tensor("w")?.as_slice::<f32>()?[0];
        let (w, h) = (
            run.tensor("w")?.as_slice::<f32>()?,
            run.tensor("h")?.as_slice::<f32>()?,
        );
        let stop = std::sync::atomic::AtomicBool::new(false);
        thread::scope(|s| {
            let writer = s.spawn(|| -> wharf::Result<()> {
                let mut k = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    k += 1;
                    let v = vec![base + 1000.0 + k as f32; N];
                    let m = map(&[("w", &v), ("h", &v)]);
                    let in_place = UpdateOptions::new()
                        .target(UpdateTarget::ActiveInPlace)
                        .in_place_max_wait(Duration::from_millis(k as u64 % 3));
                    match k % 3 {
                        0 => c.update(&m, &in_place)?,
                        1 => {
                            c.update(&m, &UpdateOptions::new())?;
                            c.swap()?;
                        }
                        _ => {
                            // A rollback swap publishes an older generation again.
                            c.swap()?;
                        }
                    }
                }
                Ok(())
            });
            let deadline = Instant::now() + Duration::from_millis(30);
            while Instant::now() < deadline {
                assert!(
                    w.iter().chain(h).all(|&x| x == base),
                    "round {round}: an open run observed a write to storage it pinned"
                );
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            writer.join().unwrap()
        })?;
        assert!(w.iter().chain(h).all(|&x| x == base));
        assert_eq!(run.read_to_vec::<f32>("w")?, vec![base; N]);
        run.end()?;
        // Back to one known value for the next round (and a rollback generation).
        let v = vec![round as f32 + 2.0; N];
        c.update(&map(&[("w", &v), ("h", &v)]), &UpdateOptions::new())?;
        c.swap()?;
    }

    // An in-place update waiting for an open run, on another thread: it writes the run's
    // storage only after the run (and every slice of it) has ended.
    c.free_inactive()?;
    let done = std::sync::atomic::AtomicBool::new(false);
    let w_ptr = thread::scope(|s| -> wharf::Result<usize> {
        let run = c.begin_run()?;
        let w = run.tensor("w")?.as_slice::<f32>()?;
        let (before, w_ptr) = (w[0], w.as_ptr() as usize);
        let updater = s.spawn(|| {
            let v = vec![-5.0f32; N];
            let r = c.update(
                &map(&[("w", &v)]),
                &UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
            );
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            r
        });
        let deadline = Instant::now() + Duration::from_millis(50);
        while Instant::now() < deadline {
            assert!(w.iter().all(|&x| x == before));
        }
        assert!(
            !done.load(std::sync::atomic::Ordering::SeqCst),
            "the in-place update did not wait for the open run"
        );
        run.end()?;
        updater.join().unwrap()?;
        Ok(w_ptr)
    })?;
    let after = c.begin_run()?;
    let t = after.tensor("w")?;
    assert_eq!(
        t.data_ptr() as usize,
        w_ptr,
        "the in-place update did not reuse the storage"
    );
    assert!(t.as_slice::<f32>()?.iter().all(|&x| x == -5.0));
    after.end()?;
    Ok(())
}

// ---- state_mut ----------------------------------------------------------------------------

#[test]
fn state_mut_writes_session_state_safely() -> wharf::Result<()> {
    use wharf::{Session, SessionOptions, StateDecl};
    let rt = host();
    let w = [1.0f32; 2];
    let c = Container::from_map_with_options(
        &rt,
        &map(&[("w", &w)]),
        &ContainerOptions::new()
            .name("m")
            .state(StateDecl::new("kv", DType::F32, &[4]))
            .state(StateDecl::new("pos", DType::I64, &[]).initial(&[3i64])),
    )?;
    let mut s = Session::new(&rt, &[&c], &SessionOptions::new())?;
    let mut run = c.begin_run_with_session(&mut s)?;
    {
        let mut kv = run.state_mut("kv")?;
        assert_eq!(
            (kv.dtype(), kv.shape(), kv.num_bytes()),
            (DType::F32, &[4i64][..], 16)
        );
        assert_eq!(kv.as_slice::<f32>()?, &[0.0; 4]);
        kv.as_mut_slice::<f32>()?[1] = 2.5;
        expect_code(
            kv.as_mut_slice::<i32>(),
            Code::InvalidArgument,
            &["dtype F32"],
        );
        expect_code(
            kv.copy_from_slice(&[1.0f32; 3]),
            Code::InvalidArgument,
            &["4 elements"],
        );
    }
    let pos = run.state_mut("pos")?.into_mut_slice::<i64>()?;
    assert_eq!(pos, &[3]);
    pos[0] += 1;
    run.state_mut("kv")?
        .copy_from_slice(&[9.0f32, 8.0, 7.0, 6.0])?;
    assert_eq!(run.read_to_vec::<f32>("kv")?, [9.0, 8.0, 7.0, 6.0]);
    assert_eq!(run.tensor("pos")?.as_slice::<i64>()?, &[4]);
    expect_code(
        run.state_mut("w"),
        Code::InvalidArgument,
        &["'w' is a constant", "read-only"],
    );
    expect_code(
        run.state_mut("nope"),
        Code::NotFound,
        &["container 'm'", "no state 'nope'"],
    );
    run.end()?;
    // The writes are the session's: the next run sees them.
    let run = c.begin_run_with_session(&mut s)?;
    assert_eq!(run.tensor("kv")?.to_vec::<f32>()?, [9.0, 8.0, 7.0, 6.0]);
    run.end()?;
    // A run without a session has no state to write.
    let plain = Container::from_map(&rt, &map(&[("w", &w)]), "plain")?;
    let mut run = plain.begin_run()?;
    expect_code(run.state_mut("kv"), Code::NotFound, &["no state 'kv'"]);
    run.end()?;
    Ok(())
}

// ---- fold callbacks that call back into the API -------------------------------------------

type FoldResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// "s" [4] and "d" [4], derived: d = 10 * s, computed by `times_ten`.
fn derived(rt: &Runtime, store: Option<&WeightStore>) -> Container {
    let mut o = ContainerOptions::new()
        .name("m")
        .constant(ConstantDecl::new("s", DType::F32, &[4]))
        .constant(ConstantDecl::new("d", DType::F32, &[4]).derived(true));
    if let Some(store) = store {
        o = o.store(store);
    }
    Container::with_options(rt, &o).expect("derived container")
}

fn times_ten(run: &wharf::FoldRun<'_>) -> FoldResult {
    let mut s = [0u8; 16];
    run.read("s", 0, &mut s)?;
    let d: Vec<f32> = s
        .chunks(4)
        .map(|b| 10.0 * f32::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    let t = run.tensor("d")?;
    // SAFETY: host memory (host backend) of 4 f32s of the generation being written, which
    // only this fold touches.
    unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), t.data_ptr_mut()?.cast::<f32>(), 4) };
    Ok(())
}

fn code_of<T>(r: wharf::Result<T>) -> Option<Code> {
    r.err().map(|e| e.code())
}

/// Every call a fold closure can make back into the API on the container, store or
/// runtime it is updating answers (an error, or success where the call is harmless), and
/// the update finishes: no hang, no deadlock, on the Rust side or in the library.
#[test]
fn fold_callbacks_that_call_back_into_the_api_get_an_answer_not_a_hang() {
    let limit = Duration::from_secs(10);

    // A container update whose fold updates, swaps, frees and reads the same container.
    let codes = finishes_within(limit, "container update with a re-entrant fold", || {
        let rt = host();
        let c = derived(&rt, None);
        c.update_with_fold(&map(&[("s", &[1.0; 4])]), &UpdateOptions::new(), times_ten)
            .unwrap();
        c.swap().unwrap();
        let mut seen = Vec::new();
        let result = c.update_with_fold(
            &map(&[("s", &[2.0; 4])]),
            &UpdateOptions::new(),
            |run: &wharf::FoldRun<'_>| -> FoldResult {
                let v = [7.0f32; 4];
                seen.push(code_of(c.update(&map(&[("s", &v)]), &UpdateOptions::new())));
                seen.push(code_of(c.update_with_fold(
                    &map(&[("s", &v)]),
                    &UpdateOptions::new(),
                    times_ten,
                )));
                let r = c.begin_run()?;
                seen.push(if r.read_to_vec::<f32>("d")? == [10.0; 4] {
                    None
                } else {
                    Some(Code::Internal)
                });
                r.end()?;
                rt.synchronize()?;
                times_ten(run)
            },
        );
        c.swap().unwrap();
        let now = {
            let r = c.begin_run().unwrap();
            let v = r.read_to_vec::<f32>("d").unwrap();
            r.end().unwrap();
            v
        };
        (seen, code_of(result), now)
    });
    assert_eq!(
        codes.0,
        [Some(Code::InvalidArgument), Some(Code::Busy), None],
        "update without a fold (refused first: the container needs one), update_with_fold (the container is being updated), a run from inside the fold"
    );
    assert_eq!(codes.1, None, "the outer update");
    assert_eq!(codes.2, [20.0; 4]);

    // A fold that swaps its own container under the update: the update answers (here it
    // cannot carry derived constants over a swap: Busy), and nothing hangs.
    let (swap, update) = finishes_within(limit, "an update whose fold swaps", || {
        let rt = host();
        let c = derived(&rt, None);
        c.update_with_fold(&map(&[("s", &[1.0; 4])]), &UpdateOptions::new(), times_ten)
            .unwrap();
        c.swap().unwrap();
        c.update_with_fold(&map(&[("s", &[2.0; 4])]), &UpdateOptions::new(), times_ten)
            .unwrap();
        let mut swap = None;
        let update = c.update_with_fold(
            &map(&[("s", &[3.0; 4])]),
            &UpdateOptions::new(),
            |run: &wharf::FoldRun<'_>| -> FoldResult {
                swap = Some(code_of(c.swap()));
                times_ten(run)
            },
        );
        (swap, code_of(update))
    });
    assert_eq!(swap, Some(None), "the swap itself is allowed");
    assert_eq!(
        update,
        Some(Code::Busy),
        "the update cannot rebase its fold"
    );

    // An in-place update whose fold begins a run (it sees the weights before the update),
    // swaps and frees the inactive generation (Busy while an in-place update runs).
    let (seen, result, now) =
        finishes_within(limit, "in-place update with a re-entrant fold", || {
            let rt = host();
            let c = derived(&rt, None);
            c.update_with_fold(&map(&[("s", &[1.0; 4])]), &UpdateOptions::new(), times_ten)
                .unwrap();
            c.swap().unwrap();
            let mut seen = Vec::new();
            let result = c.update_with_fold(
                &map(&[("s", &[3.0; 4])]),
                &UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
                |run: &wharf::FoldRun<'_>| -> FoldResult {
                    let r = c.begin_run()?;
                    seen.push(format!("{:?}", r.read_to_vec::<f32>("s")?));
                    r.end()?;
                    seen.push(format!("{:?}", code_of(c.swap())));
                    seen.push(format!("{:?}", code_of(c.free_inactive())));
                    times_ten(run)
                },
            );
            let r = c.begin_run().unwrap();
            let now = (
                r.read_to_vec::<f32>("s").unwrap(),
                r.read_to_vec::<f32>("d").unwrap(),
            );
            r.end().unwrap();
            (seen, code_of(result), now)
        });
    assert_eq!(seen, ["[1.0, 1.0, 1.0, 1.0]", "Some(Busy)", "Some(Busy)"]);
    assert_eq!(result, None);
    assert_eq!(now, (vec![3.0; 4], vec![30.0; 4]));

    // A store update whose fold updates and swaps the store: FailedPrecondition for both.
    let (seen, result, now) = finishes_within(limit, "store update with a re-entrant fold", || {
        let rt = host();
        let store = WeightStore::new(&rt).unwrap();
        let c = derived(&rt, Some(&store));
        c.update_with_fold(&map(&[("s", &[1.0; 4])]), &UpdateOptions::new(), times_ten)
            .unwrap();
        c.swap().unwrap();
        let mut seen = Vec::new();
        let result = store.update_with_fold(
            &map(&[("s", &[2.0; 4])]),
            &UpdateOptions::new(),
            |run: &wharf::FoldRun<'_>| -> FoldResult {
                seen.push(code_of(store.swap()));
                seen.push(code_of(
                    store.update(&map(&[("s", &[7.0; 4])]), &UpdateOptions::new()),
                ));
                seen.push(code_of(store.update_with_fold(
                    &map(&[("s", &[7.0; 4])]),
                    &UpdateOptions::new(),
                    times_ten,
                )));
                seen.push(code_of(c.update_with_fold(
                    &map(&[("s", &[7.0; 4])]),
                    &UpdateOptions::new(),
                    times_ten,
                )));
                times_ten(run)
            },
        );
        store.swap().unwrap();
        let r = c.begin_run().unwrap();
        let now = r.read_to_vec::<f32>("d").unwrap();
        r.end().unwrap();
        (seen, code_of(result), now)
    });
    assert_eq!(
        seen,
        [
            Some(Code::FailedPrecondition),
            Some(Code::FailedPrecondition),
            Some(Code::FailedPrecondition),
            Some(Code::Busy)
        ],
        "store swap, store update, store update_with_fold, the member's own update (busy: the store update holds it)"
    );
    assert_eq!(result, None);
    assert_eq!(now, [20.0; 4]);
}
