// SPDX-License-Identifier: Apache-2.0
//! Integration tests of the safe layer, on the host backend (no GPU needed).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use wharf::{
    Backend, Code, ConstantDecl, ConstantMap, Container, DType, Device, Error, LogLevel, MemoryTag,
    Placement, RawTensor, Run, Runtime, RuntimeOptions, TensorView, UpdateOptions, UpdateTarget,
};

mod common;
use common::{expect_code, host};

/// "a": F32 [2,3]; "b": I32 [4], host-placed.
fn two_constants(rt: &Runtime) -> Container {
    Container::new(
        rt,
        "two",
        &[
            ConstantDecl::new("a", DType::F32, &[2, 3]),
            ConstantDecl::new("b", DType::I32, &[4]).placement(Placement::Host),
        ],
    )
    .expect("container")
}

fn update_one<T: wharf::Element>(
    c: &Container,
    name: &str,
    shape: &[i64],
    data: &[T],
    opts: UpdateOptions,
) -> wharf::Result<()> {
    let mut m = ConstantMap::new()?;
    m.set_slice(name, shape, data)?;
    c.update(&m, &opts)
}

fn read<T: wharf::Element>(c: &Container, name: &str) -> (Vec<T>, u64) {
    let run = c.begin_run().expect("begin_run");
    let v = run
        .tensor(name)
        .expect("tensor")
        .to_vec::<T>()
        .expect("to_vec");
    let g = run.generation();
    run.end().expect("end");
    (v, g)
}

fn safetensors_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wharf-rust-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- traits ----------------------------------------------------------------------------

#[test]
fn thread_safety_markers_follow_the_c_docs() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
    send_sync::<Container>();
    send_sync::<ConstantMap<'static>>();
    send_sync::<Run<'static>>();
    send_sync::<TensorView<'static>>();
    send_sync::<Error>();
}

// ---- codes, errors, dtypes -------------------------------------------------------------

#[test]
fn codes_and_errors() {
    let names = [
        (Code::InvalidArgument, "INVALID_ARGUMENT"),
        (Code::NotFound, "NOT_FOUND"),
        (Code::AlreadyExists, "ALREADY_EXISTS"),
        (Code::OutOfMemory, "OUT_OF_MEMORY"),
        (Code::ResourceExhausted, "RESOURCE_EXHAUSTED"),
        (Code::FailedPrecondition, "FAILED_PRECONDITION"),
        (Code::Busy, "BUSY"),
        (Code::Unsupported, "UNSUPPORTED"),
        (Code::DeviceError, "DEVICE_ERROR"),
        (Code::IoError, "IO_ERROR"),
        (Code::DataCorrupt, "DATA_CORRUPT"),
        (Code::Internal, "INTERNAL"),
        (Code::Callback, "CALLBACK"),
        (Code::Unknown(99), "UNKNOWN"),
    ];
    for (code, name) in names {
        assert_eq!(code.name(), name);
        assert_eq!(code.to_string(), name);
    }
    for raw in 1..=12 {
        assert_eq!(
            Code::from_raw(raw).unwrap().name(),
            names[raw as usize - 1].1
        );
    }
    assert_eq!(Code::from_raw(0), None);
    assert_eq!(Code::from_raw(40), Some(Code::Unknown(40)));

    let err = expect_code(DType::from_name("F33"), Code::NotFound, &["F33"]);
    assert_eq!(err.to_string(), format!("NOT_FOUND: {}", err.message()));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    assert!(boxed.source().is_none());
    expect_code(DType::from_name("F\0"), Code::InvalidArgument, &["NUL"]);
}

#[test]
fn dtypes() {
    let expected = [
        (DType::F32, "F32", 4),
        (DType::F16, "F16", 2),
        (DType::BF16, "BF16", 2),
        (DType::F64, "F64", 8),
        (DType::F8E4M3, "F8_E4M3", 1),
        (DType::F8E5M2, "F8_E5M2", 1),
        (DType::I8, "I8", 1),
        (DType::U8, "U8", 1),
        (DType::I16, "I16", 2),
        (DType::I32, "I32", 4),
        (DType::I64, "I64", 8),
        (DType::Bool, "BOOL", 1),
    ];
    // The first twelve (0.1); tests/since_0_3.rs checks the ten added in 0.3.
    assert_eq!(DType::all().count(), expected.len() + 10);
    for ((d, name, size), listed) in expected.into_iter().zip(DType::all()) {
        assert_eq!(d, listed);
        assert_eq!(d.name(), name);
        assert_eq!(d.size(), size);
        assert_eq!(DType::from_name(name).unwrap(), d);
        assert_eq!(name.parse::<DType>().unwrap(), d);
        assert_eq!(DType::from_raw(d.to_raw()), Some(d));
    }
    assert_eq!(DType::from_raw(77), None);
    assert_eq!(<f32 as wharf::Element>::DTYPE, DType::F32);
    assert_eq!(<u8 as wharf::Element>::DTYPE, DType::U8);
    assert_eq!(<i64 as wharf::Element>::DTYPE, DType::I64);
}

// ---- runtime ---------------------------------------------------------------------------

#[test]
fn runtime() {
    let rt = host();
    assert_eq!(rt.backend(), Backend::Host);
    let info = rt.device_info().unwrap();
    assert_eq!(info.backend, Backend::Host);
    assert_eq!(info.name, "host");
    assert!(info.total_memory > 0);
    assert_eq!(info.compute_major, 0);
    rt.synchronize().unwrap();
    let st = rt.memory_stats().unwrap();
    assert!(st.device_current <= st.device_peak);
    rt.reset_peak();
    let clone = rt.clone();
    drop(rt);
    assert_eq!(clone.backend(), Backend::Host); // clones share the runtime
}

#[test]
fn runtime_option_errors() {
    let base = RuntimeOptions::new().backend(Backend::Host);
    expect_code(
        Runtime::new(&base.staging_bytes(1)),
        Code::InvalidArgument,
        &["staging_bytes"],
    );
    expect_code(
        Runtime::new(&base.device_index(-1)),
        Code::InvalidArgument,
        &["device_index"],
    );
    expect_code(
        Runtime::new(&base.copy_threads(100_000)),
        Code::InvalidArgument,
        &["copy_threads"],
    );
}

#[test]
fn memory_stats_and_limit() {
    let rt = Runtime::new(
        &RuntimeOptions::new()
            .backend(Backend::Host)
            .device_memory_limit(64 << 10),
    )
    .unwrap();
    let c = Container::new(
        &rt,
        "",
        &[
            ConstantDecl::new("small", DType::F32, &[256]),
            ConstantDecl::new("big", DType::F32, &[32 << 10]),
        ],
    )
    .unwrap();
    update_one(&c, "small", &[256], &[0f32; 256], UpdateOptions::new()).unwrap();
    let st = rt.memory_stats().unwrap();
    assert!(st.current_of(MemoryTag::Constants) >= 1024, "{st:?}");
    assert!(st.peak_of(MemoryTag::Constants) >= st.current_of(MemoryTag::Constants));
    let big = vec![0f32; 32 << 10];
    expect_code(
        update_one(&c, "big", &[32 << 10], &big, UpdateOptions::new()),
        Code::OutOfMemory,
        &[],
    );
    let after = rt.memory_stats().unwrap();
    assert_eq!(
        after.current_of(MemoryTag::Constants),
        st.current_of(MemoryTag::Constants),
        "a failed update kept memory"
    );
}

// ---- constant maps ---------------------------------------------------------------------

#[test]
fn constant_map_basics_and_errors() {
    let a = [0f32, 1., 2., 3., 4., 5.];
    let b = [7i32, 8, 9, 10];
    let half = [0u8, 0x3c, 0, 0x40]; // F16 1.0, 2.0
    let mut m = ConstantMap::new().unwrap();
    assert!(m.is_empty());
    m.set_slice("a", &[2, 3], &a).unwrap();
    m.set_slice("b", &[4], &b).unwrap();
    m.set_bytes("h", DType::F16, &[2], &half).unwrap();
    assert_eq!(m.len(), 3);

    let fb = m.find("b").unwrap();
    assert_eq!(fb.dtype(), DType::I32);
    assert_eq!(fb.device(), Device::Cpu);
    assert_eq!(fb.shape(), &[4]);
    assert_eq!(fb.strides(), None);
    assert_eq!(
        fb.data_ptr(),
        b.as_ptr().cast::<c_void>(),
        "the map copied the data"
    );
    assert_eq!(fb.as_slice::<i32>().unwrap(), &b);
    expect_code(fb.as_slice::<f32>(), Code::InvalidArgument, &["I32"]);
    assert_eq!(m.find("h").unwrap().as_bytes().unwrap(), &half);

    let names: Vec<String> = m.entries().map(|e| e.unwrap().0.to_owned()).collect();
    assert_eq!(names, ["a", "b", "h"]);
    assert_eq!(m.entries().len(), 3);
    let (name, e) = m.entry(0).unwrap();
    assert_eq!(
        (name, e.shape(), e.num_bytes(), e.num_elements()),
        ("a", &[2i64, 3][..], 24, 6)
    );
    assert!(m.metadata().unwrap().is_empty());
    assert!(format!("{m:?}").contains("\"b\""));

    expect_code(m.set_slice("a", &[2, 3], &a), Code::AlreadyExists, &["a"]);
    expect_code(m.set_slice("", &[1], &a[..1]), Code::InvalidArgument, &[]);
    expect_code(
        m.set_slice("x\0y", &[1], &a[..1]),
        Code::InvalidArgument,
        &["NUL"],
    );
    expect_code(
        m.set_slice("short", &[2, 3], &a[..5]),
        Code::InvalidArgument,
        &["6 elements", "5"],
    );
    expect_code(
        m.set_slice("neg", &[-1], &a[..0]),
        Code::InvalidArgument,
        &["negative"],
    );
    expect_code(
        m.set_slice("dims", &[1; 9], &a[..1]),
        Code::InvalidArgument,
        &["dimensions"],
    );
    expect_code(
        m.set_slice("big", &[1 << 62, 1 << 62], &a),
        Code::InvalidArgument,
        &["overflows"],
    );
    expect_code(
        m.set_bytes("hb", DType::F16, &[3], &half),
        Code::InvalidArgument,
        &["6 bytes"],
    );
    expect_code(m.find("zzz"), Code::NotFound, &["zzz"]);
    expect_code(m.entry(3), Code::InvalidArgument, &["out of range"]);
    assert_eq!(m.len(), 3, "a failed set changed the map");
}

#[test]
fn strided_tensors_are_bounds_checked_and_saved_contiguous() {
    let dir = temp_dir("strided");
    let path = dir.join("w.safetensors");
    // A 2x3 matrix stored transposed.
    let storage = [0f32, 3., 1., 4., 2., 5.];
    let ids = [-1i64, 1 << 40, 3];
    let mut m = ConstantMap::new().unwrap();
    expect_code(
        m.set_strided("w", &[2, 3], &[1, 3], &storage),
        Code::InvalidArgument,
        &["reaches element 7"],
    );
    expect_code(
        m.set_strided("w", &[2, 3], &[1], &storage),
        Code::InvalidArgument,
        &["strides"],
    );
    expect_code(
        m.set_strided("w", &[2, 3], &[-1, 2], &storage),
        Code::InvalidArgument,
        &["negative"],
    );
    m.set_strided("w", &[2, 3], &[1, 2], &storage).unwrap();
    m.set_slice("ids", &[3], &ids).unwrap();
    let w = m.find("w").unwrap();
    assert!(!w.is_contiguous());
    assert_eq!(w.strides(), Some(&[1i64, 2][..]));
    assert!(w.as_bytes().is_none());
    expect_code(w.to_vec::<f32>(), Code::InvalidArgument, &["contiguous"]);
    m.save_safetensors(&path).unwrap();
    drop(m);

    // SAFETY: the file is private to this test and not modified while mapped.
    let loaded = unsafe { ConstantMap::load_safetensors(&path) }.unwrap();
    assert_eq!(loaded.len(), 2);
    assert_eq!(
        loaded.find("w").unwrap().to_vec::<f32>().unwrap(),
        [0., 1., 2., 3., 4., 5.]
    );
    assert_eq!(loaded.find("ids").unwrap().to_vec::<i64>().unwrap(), ids);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn safetensors_metadata_and_errors() {
    let dir = temp_dir("meta");
    let header = r#"{"__metadata__":{"format":"pt","step":"7"},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#;
    let good = dir.join("meta.safetensors");
    std::fs::write(&good, safetensors_bytes(header, &[5, 6])).unwrap();
    // SAFETY: private file, not modified while mapped.
    let m = unsafe { ConstantMap::load_safetensors(&good) }.unwrap();
    let mut md = m.metadata().unwrap();
    md.sort();
    assert_eq!(md, [("format", "pt"), ("step", "7")]);
    assert_eq!(m.find("x").unwrap().as_slice::<u8>().unwrap(), &[5, 6]);

    // SAFETY: as above (the files do not exist or are private).
    let missing =
        unsafe { ConstantMap::load_safetensors(dir.join("missing.safetensors")) }.unwrap_err();
    assert!(
        matches!(missing.code(), Code::NotFound | Code::IoError),
        "{missing}"
    );
    let corrupt = dir.join("corrupt.safetensors");
    std::fs::write(&corrupt, safetensors_bytes(header, &[5])).unwrap();
    expect_code(
        unsafe { ConstantMap::load_safetensors(&corrupt) },
        Code::DataCorrupt,
        &["x"],
    );

    // Save refuses CUDA tensors (validated before anything is read) and reports I/O errors.
    let host = [1f32];
    let mut cm = ConstantMap::new().unwrap();
    let raw = RawTensor {
        data: host.as_ptr().cast(),
        dtype: DType::F32,
        device: Device::Cuda(0),
        shape: &[1],
        strides: None,
    };
    // SAFETY: the pointer is valid; it is labelled CUDA memory only to provoke the error,
    // and nothing dereferences it as device memory (the save fails validation first).
    unsafe { cm.set_raw("gpu", &raw) }.unwrap();
    expect_code(
        cm.save_safetensors(dir.join("gpu.safetensors")),
        Code::InvalidArgument,
        &["gpu"],
    );
    let mut ok = ConstantMap::new().unwrap();
    ok.set_slice("x", &[1], &host).unwrap();
    expect_code(
        ok.save_safetensors(dir.join("no-such-dir").join("x.safetensors")),
        Code::IoError,
        &[],
    );
    let bad_strides = RawTensor {
        data: host.as_ptr().cast(),
        dtype: DType::F32,
        device: Device::Cpu,
        shape: &[1],
        strides: Some(&[1, 1]),
    };
    // SAFETY: rejected by the binding before the library sees it.
    expect_code(
        unsafe { ok.set_raw("s", &bad_strides) },
        Code::InvalidArgument,
        &["strides"],
    );
    std::fs::remove_dir_all(dir).unwrap();
}

// ---- containers, updates, runs ---------------------------------------------------------

#[test]
fn container_lifecycle() {
    let rt = host();
    let c = two_constants(&rt);
    assert_eq!(c.num_constants(), 2);
    assert_eq!(c.generation(), 0);
    assert_eq!(c.runtime().backend(), Backend::Host);
    let info = c.constant_info(1).unwrap();
    assert_eq!(
        (
            info.fqn.as_str(),
            info.dtype,
            info.shape.as_slice(),
            info.placement,
            info.derived,
            info.nbytes
        ),
        ("b", DType::I32, &[4i64][..], Placement::Host, false, 16)
    );
    let all = c.constants().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].nbytes, 24);
    expect_code(c.constant_info(2), Code::InvalidArgument, &["out of range"]);
    expect_code(c.begin_run(), Code::FailedPrecondition, &[]);
    expect_code(c.swap(), Code::FailedPrecondition, &[]);

    let a = [1f32, 2., 3., 4., 5., 6.];
    let b = [1i32, 2, 3, 4];
    update_one(&c, "a", &[2, 3], &a, UpdateOptions::new()).unwrap();
    expect_code(c.swap(), Code::FailedPrecondition, &["b"]); // "b" was never written
    let mut full = ConstantMap::new().unwrap();
    full.set_slice("a", &[2, 3], &a).unwrap();
    full.set_slice("b", &[4], &b).unwrap();
    c.update(&full, &UpdateOptions::new().require_full(true))
        .unwrap();
    c.swap().unwrap();
    let g1 = c.generation();
    assert_ne!(g1, 0);
    let (va, g) = read::<f32>(&c, "a");
    assert_eq!((va.as_slice(), g), (&a[..], g1));

    // A partial update copies on write; swapping twice rolls back.
    update_one(&c, "b", &[4], &[9i32; 4], UpdateOptions::new()).unwrap();
    c.swap().unwrap();
    assert_ne!(c.generation(), g1);
    assert_eq!(read::<i32>(&c, "b").0, [9; 4]);
    assert_eq!(read::<f32>(&c, "a").0, a);
    c.swap().unwrap();
    assert_eq!(read::<i32>(&c, "b").0, b);
    c.free_inactive().unwrap();
    expect_code(c.swap(), Code::FailedPrecondition, &[]);
}

#[test]
fn container_errors() {
    let rt = host();
    let dup = [
        ConstantDecl::new("x", DType::F32, &[1]),
        ConstantDecl::new("x", DType::F32, &[1]),
    ];
    expect_code(
        Container::new(&rt, "m", &dup),
        Code::InvalidArgument,
        &["x"],
    );
    expect_code(
        Container::new(&rt, "m", &[ConstantDecl::new("", DType::F32, &[1])]),
        Code::InvalidArgument,
        &[],
    );
    expect_code(
        Container::new(&rt, "m", &[ConstantDecl::new("n", DType::F32, &[-2])]),
        Code::InvalidArgument,
        &["negative"],
    );
    expect_code(
        Container::new(&rt, "m\0", &[]),
        Code::InvalidArgument,
        &["NUL"],
    );

    let c = two_constants(&rt);
    let a = [0f32; 6];
    expect_code(
        update_one(&c, "nope", &[6], &a, UpdateOptions::new()),
        Code::NotFound,
        &["nope"],
    );
    expect_code(
        update_one(&c, "a", &[6], &a, UpdateOptions::new()),
        Code::InvalidArgument,
        &["a"],
    );
    expect_code(
        update_one(&c, "a", &[2, 3], &[0i32; 6], UpdateOptions::new()),
        Code::InvalidArgument,
        &["a"],
    );
    expect_code(
        update_one(
            &c,
            "a",
            &[2, 3],
            &a,
            UpdateOptions::new().require_full(true),
        ),
        Code::InvalidArgument,
        &["b"],
    );
    expect_code(
        update_one(
            &c,
            "a",
            &[2, 3],
            &a,
            UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
        ),
        Code::FailedPrecondition,
        &["in place"],
    );
    let mut strided = ConstantMap::new().unwrap();
    strided.set_strided("a", &[2, 3], &[1, 2], &a).unwrap();
    expect_code(
        c.update(&strided, &UpdateOptions::new()),
        Code::InvalidArgument,
        &["a"],
    );
    expect_code(c.swap(), Code::FailedPrecondition, &[]); // no failed update staged anything

    let empty = ConstantMap::new().unwrap();
    let ec = Container::from_map(&rt, &empty, "empty").unwrap();
    assert_eq!(ec.num_constants(), 0);
}

#[test]
fn from_map() {
    let rt = host();
    let w = [0.5f64, 1.5, 2.5];
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("layers.0.w", &[3], &w).unwrap();
    let c = Container::from_map(&rt, &m, "from-map").unwrap();
    drop(m); // the container holds its own copy
    assert_ne!(c.generation(), 0);
    let info = c.constant_info(0).unwrap();
    assert_eq!(
        (info.fqn.as_str(), info.placement, info.dtype),
        ("layers.0.w", Placement::Device, DType::F64)
    );
    assert_eq!(read::<f64>(&c, "layers.0.w").0, w);
}

#[test]
fn in_place_update_waits_for_open_runs() {
    let rt = host();
    let c = two_constants(&rt);
    let (ones, bones) = ([1f32; 6], [1i32; 4]);
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("a", &[2, 3], &ones).unwrap();
    m.set_slice("b", &[4], &bones).unwrap();
    c.update(&m, &UpdateOptions::new()).unwrap();
    c.swap().unwrap();
    let generation = c.generation();
    let before = rt.memory_stats().unwrap().current_of(MemoryTag::Constants);

    let open = c.begin_run().unwrap();
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        let updater = s.spawn(|| {
            let r = update_one(
                &c,
                "a",
                &[2, 3],
                &[8f32; 6],
                UpdateOptions::new().target(UpdateTarget::ActiveInPlace),
            );
            done.store(true, Ordering::SeqCst);
            r
        });
        thread::sleep(Duration::from_millis(50));
        assert!(
            !done.load(Ordering::SeqCst),
            "the in-place update did not wait for the open run"
        );
        assert_eq!(open.tensor("a").unwrap().as_slice::<f32>().unwrap()[0], 1.0);
        open.end().unwrap();
        updater.join().unwrap().unwrap();
    });
    assert_eq!(
        rt.memory_stats().unwrap().current_of(MemoryTag::Constants),
        before,
        "in place allocated"
    );
    // An in-place update publishes a new generation id (0.3): runs begun afterwards report it.
    let (v, g) = read::<f32>(&c, "a");
    assert_eq!(v[0], 8.0);
    assert!(
        g > generation,
        "in place kept generation {generation} (now {g})"
    );
    assert_eq!(c.generation(), g);
}

#[test]
fn runs() {
    let rt = host();
    let c = two_constants(&rt);
    let (a, b) = ([1f32, 2., 3., 4., 5., 6.], [1i32, 2, 3, 4]);
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("a", &[2, 3], &a).unwrap();
    m.set_slice("b", &[4], &b).unwrap();
    c.update(&m, &UpdateOptions::new()).unwrap();
    c.swap().unwrap();

    let run = c.begin_run().unwrap();
    assert_eq!(run.generation(), c.generation());
    assert!(run.stream().is_null());
    let t = run.tensor("a").unwrap();
    assert_eq!(
        (t.device(), t.dtype(), t.shape()),
        (Device::Cpu, DType::F32, &[2i64, 3][..])
    );
    assert_eq!(t.as_slice::<f32>().unwrap(), &a);
    assert_ne!(
        t.data_ptr(),
        a.as_ptr().cast(),
        "the container should hold a copy"
    );
    expect_code(run.tensor("zz"), Code::NotFound, &["zz"]);
    // Reads copy through the run's stream.
    let mut two = [0u8; 8];
    run.read("b", 4, &mut two).unwrap();
    let halves = [&two[..4], &two[4..]].map(|h| i32::from_ne_bytes(h.try_into().unwrap()));
    assert_eq!(halves, [2, 3]);
    assert_eq!(run.read_to_vec::<f32>("a").unwrap(), a);
    run.read("b", 16, &mut []).unwrap(); // an empty read at the end is fine
    expect_code(run.read("b", 12, &mut two), Code::InvalidArgument, &["b"]);
    expect_code(run.read("zz", 0, &mut two), Code::NotFound, &["zz"]);
    expect_code(run.read_to_vec::<i64>("a"), Code::InvalidArgument, &["F32"]);
    // Tensor lookups from several threads on one run, and runs begun on several threads.
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(run.tensor("b").unwrap().to_vec::<i32>().unwrap(), b));
            s.spawn(|| assert_eq!(read::<i32>(&c, "b").0, b));
        }
    });
    drop(run); // dropping ends the run
               // Ending through a run moved to another thread.
    let moved = c.begin_run().unwrap();
    thread::scope(|s| {
        s.spawn(move || moved.end().unwrap());
    });
}

#[test]
fn runs_see_one_generation_during_swaps() {
    let rt = host();
    let c = Container::new(
        &rt,
        "gens",
        &[
            ConstantDecl::new("x", DType::I64, &[256]),
            ConstantDecl::new("y", DType::I64, &[256]),
        ],
    )
    .unwrap();
    let update = |v: i64| {
        let data = vec![v; 256];
        let mut m = ConstantMap::new()?;
        m.set_slice("x", &[256], &data)?;
        m.set_slice("y", &[256], &data)?;
        c.update(&m, &UpdateOptions::new())
    };
    update(1).unwrap();
    c.swap().unwrap();
    let stop = AtomicBool::new(false);
    let checked = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let run = c.begin_run().unwrap();
                    let x = run.tensor("x").unwrap().to_vec::<i64>().unwrap();
                    let y = run.tensor("y").unwrap().to_vec::<i64>().unwrap();
                    assert!(
                        x.iter().chain(&y).all(|&v| v == x[0]),
                        "a run saw two generations"
                    );
                    run.end().unwrap();
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // At least 38 swaps, and on until the readers have checked some runs (a loaded
        // machine may not schedule them before 38 host-backend swaps are done).
        let mut v = 2;
        while v < 40 || checked.load(Ordering::Relaxed) < 16 {
            if let Err(e) = update(v) {
                assert_eq!(e.code(), Code::Busy, "{e}");
            }
            c.swap().unwrap();
            v += 1;
            if v >= 40 {
                thread::yield_now();
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(checked.load(Ordering::Relaxed) > 0);
}

// ---- fold callbacks --------------------------------------------------------------------

fn fold_container(rt: &Runtime) -> Container {
    Container::new(
        rt,
        "fold",
        &[
            ConstantDecl::new("w", DType::F32, &[2, 3]),
            ConstantDecl::new("wt", DType::F32, &[3, 2]).derived(true),
        ],
    )
    .unwrap()
}

type FoldResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn transpose(run: &wharf::FoldRun<'_>) -> FoldResult {
    let w = run.tensor("w")?;
    let wt = run.tensor("wt")?;
    assert_eq!(
        (wt.shape(), wt.num_elements(), wt.dtype(), wt.device()),
        (&[3i64, 2][..], 6, DType::F32, Device::Cpu)
    );
    assert!(run.stream().is_null());
    // SAFETY: host backend: both are host memory of 6 floats, "wt" freshly allocated for
    // this update and touched by nothing else while the callback runs.
    unsafe {
        let src = std::slice::from_raw_parts(w.data_ptr().cast::<f32>(), 6);
        let dst = std::slice::from_raw_parts_mut(wt.data_ptr_mut().unwrap().cast::<f32>(), 6);
        for i in 0..2 {
            for j in 0..3 {
                dst[j * 2 + i] = src[i * 3 + j];
            }
        }
    }
    Ok(())
}

/// A fold may write only derived constants and the constants its update writes: the others
/// share their storage with the active generation, which open and new runs read (issues 21
/// and 23). `data_ptr_mut` refuses them; they are read through `data_ptr`.
#[test]
fn fold_cannot_write_constants_its_update_did_not_write() {
    let rt = host();
    let c = Container::new(
        &rt,
        "summed",
        &[
            ConstantDecl::new("a", DType::F32, &[4]),
            ConstantDecl::new("b", DType::F32, &[4]),
            ConstantDecl::new("d", DType::F32, &[4]).derived(true),
        ],
    )
    .unwrap();
    let sum = |run: &wharf::FoldRun<'_>| -> FoldResult {
        let (a, b, d) = (run.tensor("a")?, run.tensor("b")?, run.tensor("d")?);
        // SAFETY: host backend: three host arrays of 4 floats; "d" is fresh for this update
        // and touched by nothing else while the callback runs.
        unsafe {
            let a = std::slice::from_raw_parts(a.data_ptr().cast::<f32>(), 4);
            let b = std::slice::from_raw_parts(b.data_ptr().cast::<f32>(), 4);
            let d = std::slice::from_raw_parts_mut(d.data_ptr_mut()?.cast::<f32>(), 4);
            for ((d, a), b) in d.iter_mut().zip(a).zip(b) {
                *d = a + b;
            }
        }
        Ok(())
    };
    let mut both = ConstantMap::new().unwrap();
    both.set_slice("a", &[4], &[1f32; 4]).unwrap();
    both.set_slice("b", &[4], &[10f32; 4]).unwrap();
    c.update_with_fold(&both, &UpdateOptions::new(), sum)
        .unwrap();
    c.swap().unwrap();

    let open = c.begin_run().unwrap();
    let mut only_a = ConstantMap::new().unwrap();
    only_a.set_slice("a", &[4], &[2f32; 4]).unwrap();
    let flags = Mutex::new(Vec::new());
    c.update_with_fold(&only_a, &UpdateOptions::new(), |run| {
        let b = run.tensor("b")?;
        let refused = b.data_ptr_mut().unwrap_err();
        assert_eq!(refused.code(), Code::FailedPrecondition);
        assert!(refused.to_string().contains("read-only"), "{refused}");
        flags.lock().unwrap().extend([
            run.tensor("a")?.is_read_only(),
            b.is_read_only(),
            run.tensor("d")?.is_read_only(),
        ]);
        sum(run)
    })
    .unwrap();
    assert_eq!(*flags.lock().unwrap(), vec![false, true, false]);
    let mut b = [0u8; 16];
    open.read("b", 0, &mut b).unwrap();
    assert_eq!(f32::from_ne_bytes(b[..4].try_into().unwrap()), 10.0);
    drop(open);
    c.swap().unwrap();
    let run = c.begin_run().unwrap();
    let mut d = [0u8; 16];
    run.read("d", 0, &mut d).unwrap();
    assert_eq!(f32::from_ne_bytes(d[..4].try_into().unwrap()), 12.0);
}

#[test]
fn fold_computes_derived_constants() {
    let rt = host();
    let c = fold_container(&rt);
    assert!(c.constant_info(1).unwrap().derived);
    let w = [0f32, 1., 2., 3., 4., 5.];
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("w", &[2, 3], &w).unwrap();
    expect_code(
        c.update(&m, &UpdateOptions::new()),
        Code::InvalidArgument,
        &["fold"],
    );

    #[derive(Debug)]
    struct Mine;
    impl std::fmt::Display for Mine {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("my fold failed")
        }
    }
    impl std::error::Error for Mine {}
    let err = expect_code(
        c.update_with_fold(&m, &UpdateOptions::new(), |_| Err(Box::new(Mine))),
        Code::Callback,
        &["my fold failed"],
    );
    let source = std::error::Error::source(&err).expect("the callback's error is the source");
    assert!(source.downcast_ref::<Mine>().is_some());
    expect_code(c.swap(), Code::FailedPrecondition, &[]); // the aborted update staged nothing

    // A wharf::Error from inside the callback keeps its code.
    expect_code(
        c.update_with_fold(&m, &UpdateOptions::new(), |run| {
            run.tensor("missing")?;
            Ok(())
        }),
        Code::NotFound,
        &["missing"],
    );

    // The callback's own code and message cross the C API (wharf_status_create) and come back
    // from the library, after its context; the callback's error is the source.
    let err = c
        .update_with_fold(&m, &UpdateOptions::new(), |_| {
            Err(Box::new(wharf::Error::new(
                Code::ResourceExhausted,
                "fold scratch budget of 64 bytes exceeded",
            )))
        })
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(
        err.message(),
        "container 'fold': fold callback: fold scratch budget of 64 bytes exceeded"
    );
    let source = std::error::Error::source(&err).expect("the callback's error is the source");
    assert_eq!(
        source
            .downcast_ref::<wharf::Error>()
            .map(wharf::Error::message),
        Some("fold scratch budget of 64 bytes exceeded")
    );
    expect_code(c.swap(), Code::FailedPrecondition, &[]); // nothing was staged

    let mut calls = 0;
    c.update_with_fold(&m, &UpdateOptions::new(), |run| {
        calls += 1;
        transpose(run)?;
        let mut back = [0u8; 4];
        run.read("wt", 4, &mut back)?; // wt[1] is w[1][0]
        assert_eq!(f32::from_ne_bytes(back), 3.0);
        Ok(())
    })
    .unwrap();
    assert_eq!(calls, 1);
    c.swap().unwrap();
    assert_eq!(read::<f32>(&c, "wt").0, [0., 3., 1., 4., 2., 5.]);

    let mut derived = ConstantMap::new().unwrap();
    derived.set_slice("wt", &[3, 2], &w).unwrap();
    expect_code(
        c.update_with_fold(&derived, &UpdateOptions::new(), transpose),
        Code::InvalidArgument,
        &["derived"],
    );
}

#[test]
fn fold_panic_is_resumed_after_the_library_returns() {
    let rt = host();
    let c = fold_container(&rt);
    let w = [0f32; 6];
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("w", &[2, 3], &w).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = c.update_with_fold(&m, &UpdateOptions::new(), |_| panic!("boom"));
    }))
    .expect_err("the panic was swallowed");
    assert_eq!(caught.downcast_ref::<&str>(), Some(&"boom"));
    // The library released its update lock: the container is usable.
    c.update_with_fold(&m, &UpdateOptions::new(), transpose)
        .unwrap();
    c.swap().unwrap();
}

#[test]
fn concurrent_update_is_busy() {
    let rt = host();
    let c = fold_container(&rt);
    let w = [0f32; 6];
    let mut m = ConstantMap::new().unwrap();
    m.set_slice("w", &[2, 3], &w).unwrap();
    let (in_fold_tx, in_fold_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    thread::scope(|s| {
        let first = s.spawn(|| {
            c.update_with_fold(&m, &UpdateOptions::new(), |run| {
                in_fold_tx.send(()).unwrap();
                release_rx.lock().unwrap().recv().unwrap();
                transpose(run)
            })
        });
        in_fold_rx.recv().unwrap();
        expect_code(
            c.update_with_fold(&m, &UpdateOptions::new(), transpose),
            Code::Busy,
            &[],
        );
        release_tx.send(()).unwrap();
        first.join().unwrap().unwrap();
    });
}

// ---- bound memory ----------------------------------------------------------------------

#[test]
fn bind_host_is_zero_copy() {
    let rt = host();
    let c = two_constants(&rt);
    update_one(&c, "a", &[2, 3], &[0f32; 6], UpdateOptions::new()).unwrap();
    let data = vec![4i32, 3, 2, 1];
    let ptr = data.as_ptr();
    c.bind_host("b", &[4], data).unwrap();
    c.swap().unwrap();
    let run = c.begin_run().unwrap();
    let t = run.tensor("b").unwrap();
    assert_eq!(t.data_ptr(), ptr.cast(), "the bound vector was copied");
    assert_eq!(t.as_slice::<i32>().unwrap(), &[4, 3, 2, 1]);
    run.end().unwrap();
    expect_code(
        c.bind_host("b", &[4], vec![1f32; 4]),
        Code::InvalidArgument,
        &["b"],
    );
    expect_code(
        c.bind_host("b", &[3], vec![1i32; 4]),
        Code::InvalidArgument,
        &["3 elements"],
    );
    expect_code(
        c.bind_host("zz", &[4], vec![1i32; 4]),
        Code::NotFound,
        &["zz"],
    );
}

#[test]
fn bind_user_constant_releases_after_the_container() {
    let rt = host();
    let c = two_constants(&rt);
    let data: Arc<[i32]> = Arc::from(vec![5, 6, 7, 8]);
    let released = Arc::new(AtomicBool::new(false));
    let raw = RawTensor {
        data: data.as_ptr().cast(),
        dtype: DType::I32,
        device: Device::Cpu,
        shape: &[4],
        strides: None,
    };
    let (keep, flag) = (data.clone(), released.clone());
    // SAFETY: `keep` (moved into release) holds the memory until the library lets go, and
    // nothing writes it.
    unsafe {
        c.bind_user_constant(
            "b",
            &raw,
            Some(Box::new(move || {
                drop(keep);
                flag.store(true, Ordering::SeqCst);
            })),
        )
    }
    .unwrap();
    // A failed bind drops its release closure uncalled.
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = DropFlag(dropped.clone());
    let wrong = RawTensor { shape: &[2], ..raw };
    // SAFETY: rejected (shape mismatch) before the memory is used.
    let err = unsafe { c.bind_user_constant("b", &wrong, Some(Box::new(move || drop(guard)))) };
    expect_code(err, Code::InvalidArgument, &["b"]);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the release closure of a failed bind leaked"
    );

    update_one(&c, "a", &[2, 3], &[0f32; 6], UpdateOptions::new()).unwrap();
    c.swap().unwrap();
    assert_eq!(read::<i32>(&c, "b").0, [5, 6, 7, 8]);
    assert!(!released.load(Ordering::SeqCst));
    drop(c);
    for _ in 0..200 {
        if released.load(Ordering::SeqCst) {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    assert!(
        released.load(Ordering::SeqCst),
        "release was not called after the container was freed"
    );
    assert_eq!(Arc::strong_count(&data), 1);
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// ---- lifetimes -------------------------------------------------------------------------

#[test]
fn runtime_dropped_before_its_container() {
    let rt = host();
    let c = Container::new(&rt, "x", &[ConstantDecl::new("x", DType::U8, &[3])]).unwrap();
    drop(rt); // the container keeps the runtime alive
    update_one(&c, "x", &[3], &[7u8, 8, 9], UpdateOptions::new()).unwrap();
    c.swap().unwrap();
    assert_eq!(read::<u8>(&c, "x").0, [7, 8, 9]);
    assert_eq!(c.runtime().backend(), Backend::Host);
    drop(c); // frees the container, then the runtime
}

#[test]
fn a_run_moved_into_a_thread_outlives_nothing() {
    // Runs borrow their container: a scoped thread may end one, and the container is
    // dropped only afterwards (an unscoped thread would not compile).
    let rt = host();
    let c = Container::new(&rt, "x", &[ConstantDecl::new("x", DType::U8, &[1])]).unwrap();
    update_one(&c, "x", &[1], &[1u8], UpdateOptions::new()).unwrap();
    c.swap().unwrap();
    let run = c.begin_run().unwrap();
    thread::scope(|s| {
        s.spawn(move || {
            assert_eq!(run.tensor("x").unwrap().as_slice::<u8>().unwrap(), &[1]);
            run.end().unwrap();
        });
    });
    drop(c);
}

// ---- logging ---------------------------------------------------------------------------

#[test]
fn log_callback() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    wharf::set_log_callback(LogLevel::Info, move |level, msg| {
        sink.lock().unwrap().push(format!("{level:?}: {msg}"));
    });
    // AUTO logs its choice: at INFO, or at WARN when a CUDA build falls back to the host.
    drop(Runtime::new(&RuntimeOptions::new()).unwrap());
    let got = lines.lock().unwrap().join("\n");
    assert!(
        got.contains("Info: runtime: backend AUTO chose")
            || got.contains("Warn: runtime: backend AUTO chose"),
        "{got:?}"
    );
    wharf::reset_log_callback();
    lines.lock().unwrap().clear();
    drop(Runtime::new(&RuntimeOptions::new()).unwrap());
    assert!(
        lines.lock().unwrap().is_empty(),
        "a removed callback still received lines"
    );
}
