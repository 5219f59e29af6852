//! Update options (library 0.3), and the promises the safe layer stands on, tried on the
//! host backend: an open run never observes a write to storage it pinned (so slices from
//! `TensorView::as_slice` stay unchanged whatever the update mode), and a fold callback
//! that calls back into the API gets an answer, never a hang.

use std::ffi::c_void;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wharf::{
    Backend, Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, Error, MemoryTag,
    Runtime, RuntimeOptions, UpdateOptions, UpdateTarget, WeightStore,
};

fn host() -> Runtime {
    Runtime::new(
        &RuntimeOptions::new()
            .backend(Backend::Host)
            .copy_threads(1)
            .staging_bytes(128 << 10),
    )
    .expect("host runtime")
}

#[track_caller]
fn expect_code<T: std::fmt::Debug>(
    result: wharf::Result<T>,
    code: Code,
    fragments: &[&str],
) -> Error {
    let err = result.expect_err("expected an error");
    assert_eq!(err.code(), code, "{err}");
    for f in fragments {
        assert!(
            err.message().contains(f),
            "message {:?} does not contain {f:?}",
            err.message()
        );
    }
    err
}

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

    // With no run open, the same update overwrites in place: one copy of the weights (the
    // old generation's storage, whose last run has ended, is reclaimed).
    c.update(&map(&[("w", &[3.0; 4])]), &options)?;
    assert_eq!(constants_bytes(&rt), before);
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
