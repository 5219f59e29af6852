// SPDX-License-Identifier: Apache-2.0
//! The additions of library 0.3: the ten new dtypes (sub-byte ones sized in bits),
//! metadata on any map, and updates of containers and weight stores from files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wharf::{
    Code, ConstantDecl, ConstantMap, Container, ContainerOptions, DType, Error, UpdateOptions,
    UpdateTarget, WeightStore,
};

mod common;
use common::host;

/// common::expect_code with one fragment.
#[track_caller]
fn expect_code<T: std::fmt::Debug>(result: wharf::Result<T>, code: Code, fragment: &str) -> Error {
    common::expect_code(result, code, &[fragment])
}

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wharf-rs-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Writes a safetensors file of 1-D F32 tensors.
fn save(path: &Path, entries: &[(&str, &[f32])]) {
    let mut m = ConstantMap::new().expect("map");
    for (name, data) in entries {
        m.set_slice(name, &[data.len() as i64], data)
            .expect("set_slice");
    }
    m.save_safetensors(path).expect("save");
}

fn read(c: &Container, fqn: &str) -> (Vec<f32>, u64) {
    let run = c.begin_run().expect("run");
    let v = run
        .tensor(fqn)
        .expect("tensor")
        .as_slice::<f32>()
        .expect("slice")
        .to_vec();
    let g = run.generation();
    run.end().expect("end");
    (v, g)
}

#[test]
fn every_dtype_of_the_header_is_known() {
    let want = [
        (DType::U16, "U16", 16, 2),
        (DType::U32, "U32", 32, 4),
        (DType::U64, "U64", 64, 8),
        (DType::C64, "C64", 64, 8),
        (DType::F8E8M0, "F8_E8M0", 8, 1),
        (DType::F8E4M3Fnuz, "F8_E4M3FNUZ", 8, 1),
        (DType::F8E5M2Fnuz, "F8_E5M2FNUZ", 8, 1),
        (DType::F4, "F4", 4, 0),
        (DType::F6E2M3, "F6_E2M3", 6, 0),
        (DType::F6E3M2, "F6_E3M2", 6, 0),
        (DType::BF16, "BF16", 16, 2),
    ];
    for (d, name, bits, size) in want {
        assert_eq!((d.name(), d.bits(), d.size()), (name, bits, size), "{d:?}");
        assert_eq!(DType::from_name(name).unwrap(), d);
    }
    // Every value of wharf_dtype (0..=21) maps to a variant and back.
    assert_eq!(DType::all().count(), 22);
    for (i, d) in DType::all().enumerate() {
        assert_eq!(d.to_raw(), i as wharf::sys::wharf_dtype);
        assert_eq!(DType::from_raw(i as wharf::sys::wharf_dtype), Some(d));
    }
}

#[test]
fn new_and_sub_byte_dtypes_round_trip() -> wharf::Result<()> {
    let dir = temp_dir("dtypes");
    let path = dir.join("dtypes.safetensors");
    let packed = [0x21u8, 0x43, 0x65, 0x87, 0xa9, 0xcb];
    let u64s = [1u64 << 40, 7];
    let u16s = [65535u16, 1, 2];
    let mut m = ConstantMap::new()?;
    m.set_bytes("f4", DType::F4, &[2, 6], &packed)?; // 12 x 4 bits
    m.set_bytes("f6", DType::F6E3M2, &[8], &packed)?; // 8 x 6 bits
    m.set_slice("u64", &[2], &u64s)?;
    m.set_slice("u16", &[3], &u16s)?;
    // 3 x 4 bits is not a whole number of bytes; 6 bytes are not 5 elements of F4.
    expect_code(
        m.set_bytes("odd", DType::F4, &[3], &packed[..2]),
        Code::InvalidArgument,
        "12 bits",
    );
    expect_code(
        m.set_bytes("short", DType::F4, &[5], &packed),
        Code::InvalidArgument,
        "bits",
    );
    m.save_safetensors(&path)?;
    // SAFETY: nothing modifies the file while it is mapped.
    let back = unsafe { ConstantMap::load_safetensors(&path)? };
    let f4 = back.find("f4")?;
    assert_eq!((f4.dtype(), f4.num_bytes()), (DType::F4, 6));
    assert_eq!(f4.as_bytes(), Some(&packed[..]));
    let f6 = back.find("f6")?;
    assert_eq!((f6.dtype(), f6.num_bytes()), (DType::F6E3M2, 6));
    assert_eq!(back.find("u64")?.to_vec::<u64>()?, u64s);
    assert_eq!(back.find("u16")?.to_vec::<u16>()?, u16s);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn set_metadata_on_any_map() -> wharf::Result<()> {
    let dir = temp_dir("metadata");
    let path = dir.join("meta.safetensors");
    let w = [1.0f32, 2.0];
    let mut m = ConstantMap::new()?;
    m.set_slice("w", &[2], &w)?;
    m.set_metadata("format", "pt")?;
    m.set_metadata("step", "1")?;
    m.set_metadata("format", "np")?; // replaced in its place
    m.set_metadata("", "")?;
    expect_code(m.set_metadata("k", "a\0b"), Code::InvalidArgument, "NUL");
    assert_eq!(m.metadata()?, [("format", "np"), ("step", "1"), ("", "")]);
    m.save_safetensors(&path)?;
    // SAFETY: nothing modifies the file while it is mapped.
    let mut back = unsafe { ConstantMap::load_safetensors(&path)? };
    assert_eq!(
        back.metadata()?,
        [("format", "np"), ("step", "1"), ("", "")]
    );
    back.set_metadata("step", "2")?; // a loaded map takes metadata too
    assert_eq!(back.metadata()?[1], ("step", "2"));
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn container_update_from_file() -> wharf::Result<()> {
    let rt = host();
    let dir = temp_dir("container-file");
    let (a, b) = ([1.0f32, 2.0], [3.0f32, 4.0, 5.0]);
    let mut base = ConstantMap::new()?;
    base.set_slice("a", &[2], &a)?;
    base.set_slice("b", &[3], &b)?;
    let c = Container::from_map(&rt, &base, "file")?;
    let g1 = c.generation();

    let partial = dir.join("b.safetensors");
    save(&partial, &[("b", &[-3.0, -4.0, -5.0])]);
    c.update_from_file(&partial, &UpdateOptions::new())?;
    c.swap()?;
    let (v, g) = read(&c, "b");
    assert_eq!(v, [-3.0, -4.0, -5.0]);
    assert_ne!(g, g1);
    assert_eq!(read(&c, "a").0, a, "a constant the file does not name");
    expect_code(
        c.update_from_file(&partial, &UpdateOptions::new().require_full(true)),
        Code::InvalidArgument,
        "a",
    );

    // Failures change nothing.
    let g2 = c.generation();
    expect_code(
        c.update_from_file(dir.join("missing.safetensors"), &UpdateOptions::new()),
        Code::NotFound,
        "missing",
    );
    let corrupt = dir.join("corrupt.safetensors");
    let bytes = std::fs::read(&partial).expect("read");
    std::fs::write(&corrupt, &bytes[..bytes.len() - 1]).expect("write");
    expect_code(
        c.update_from_file(&corrupt, &UpdateOptions::new()),
        Code::DataCorrupt,
        "",
    );
    let unknown = dir.join("unknown.safetensors");
    save(&unknown, &[("a", &[9.0, 9.0]), ("zz", &[1.0])]);
    expect_code(
        c.update_from_file(&unknown, &UpdateOptions::new()),
        Code::NotFound,
        "zz",
    );
    let shape = dir.join("shape.safetensors");
    save(&shape, &[("a", &[9.0, 9.0, 9.0])]);
    expect_code(
        c.update_from_file(&shape, &UpdateOptions::new()),
        Code::InvalidArgument,
        "a",
    );
    assert_eq!(c.generation(), g2);
    assert_eq!(read(&c, "a").0, a);

    // In place: published by the call.
    let whole = dir.join("whole.safetensors");
    save(&whole, &[("a", &[7.0, 8.0]), ("b", &[0.0, 0.0, 1.0])]);
    c.update_from_file(
        &whole,
        &UpdateOptions::new()
            .target(UpdateTarget::ActiveInPlace)
            .require_full(true),
    )?;
    assert_eq!(read(&c, "a").0, [7.0, 8.0]);
    assert_eq!(read(&c, "b").0, [0.0, 0.0, 1.0]);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// A file that another process (here a thread) truncates and writes back while updates read
/// it: each update either succeeds with the whole file's values or fails with an error
/// (`IoError` for a file that shrank after it was validated, `DataCorrupt` for one validated
/// while short); safe code never dies of it (a mapped file raised SIGBUS here).
#[test]
fn update_from_a_file_that_shrinks_is_an_error_not_a_crash() -> wharf::Result<()> {
    let rt = host();
    let dir = temp_dir("shrinking-file");
    const N: usize = 1 << 20; // 4 MiB of F32: 32 chunks of the test runtime's ring
    let values: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let initial = vec![-1.0f32; N];
    let mut base = ConstantMap::new()?;
    base.set_slice("w", &[N as i64], &initial)?;
    let c = Container::from_map(&rt, &base, "shrinking")?;
    let path = dir.join("w.safetensors");
    save(&path, &[("w", &values)]);
    let bytes = std::fs::read(&path).expect("read");
    let stop = AtomicBool::new(false);
    let (mut ok, mut shrank, mut short, mut rounds) = (0, 0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            use std::io::{Seek, SeekFrom, Write};
            // The same inode throughout (replacing by rename would shrink nothing).
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let keep = bytes.len() as u64 / 8 * (1 + k % 7);
                f.set_len(keep).expect("truncate");
                std::thread::sleep(Duration::from_micros(200));
                f.seek(SeekFrom::Start(keep)).expect("seek");
                f.write_all(&bytes[keep as usize..]).expect("write back");
                std::thread::sleep(Duration::from_micros(300));
                k += 1;
            }
        });
        // Until several updates saw the file shrink under them (or enough rounds).
        while shrank < 3 && rounds < 3000 {
            rounds += 1;
            match c.update_from_file(&path, &UpdateOptions::new()) {
                Ok(()) => {
                    ok += 1;
                    c.swap().expect("swap");
                    assert!(
                        read(&c, "w").0 == values,
                        "a successful update wrote other values"
                    );
                }
                Err(e) if e.code() == Code::IoError => {
                    assert!(e.message().contains("w.safetensors"), "{e}");
                    shrank += 1;
                }
                Err(e) if e.code() == Code::DataCorrupt => short += 1,
                Err(e) => panic!("unexpected error: {e}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(
        shrank > 0,
        "no update saw the file shrink in {rounds} rounds ({ok} succeeded, {short} validated it short)"
    );
    // The file whole again: the container takes it.
    c.update_from_file(&path, &UpdateOptions::new())?;
    c.swap()?;
    assert!(read(&c, "w").0 == values);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn container_update_from_file_with_fold() -> wharf::Result<()> {
    let rt = host();
    let dir = temp_dir("fold-file");
    let c = Container::new(
        &rt,
        "fold",
        &[
            ConstantDecl::new("w", DType::F32, &[2]),
            ConstantDecl::new("twice", DType::F32, &[2]).derived(true),
        ],
    )?;
    let path = dir.join("w.safetensors");
    save(&path, &[("w", &[1.5, 2.5])]);
    // A container with derived constants refuses an update without a fold.
    expect_code(
        c.update_from_file(&path, &UpdateOptions::new()),
        Code::InvalidArgument,
        "",
    );
    c.update_from_file_with_fold(&path, &UpdateOptions::new(), |run| {
        let mut w = [0u8; 8];
        run.read("w", 0, &mut w)?;
        let twice = run.tensor("twice")?;
        let doubled: Vec<u8> = w
            .chunks_exact(4)
            .flat_map(|b| (2.0 * f32::from_ne_bytes(b.try_into().unwrap())).to_ne_bytes())
            .collect();
        // SAFETY: host backend: "twice" is host memory of 2 floats, fresh for this update
        // and touched by nothing else while the callback runs.
        unsafe {
            std::ptr::copy_nonoverlapping(doubled.as_ptr(), twice.data_ptr_mut()?.cast::<u8>(), 8)
        };
        Ok(())
    })?;
    c.swap()?;
    assert_eq!(read(&c, "w").0, [1.5, 2.5]);
    assert_eq!(read(&c, "twice").0, [3.0, 5.0]);
    // The fold's error aborts the update.
    let g = c.generation();
    let err = c
        .update_from_file_with_fold(&path, &UpdateOptions::new(), |_| Err("no".into()))
        .expect_err("the fold failed");
    assert!(err.message().contains("no"), "{err}");
    assert_eq!(c.generation(), g);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn store_update_from_file() -> wharf::Result<()> {
    let rt = host();
    let dir = temp_dir("store-file");
    let store = WeightStore::new(&rt)?;
    let (embed, aw, bw) = ([1.0f32; 64], [1.0f32, 2.0], [3.0f32, 4.0, 5.0]);
    let mut m1 = ConstantMap::new()?;
    m1.set_slice("embed", &[64], &embed)?;
    m1.set_slice("a.w", &[2], &aw)?;
    let mut m2 = ConstantMap::new()?;
    m2.set_slice("embed", &[64], &embed)?;
    m2.set_slice("b.w", &[3], &bw)?;
    let prefill = Container::from_map_with_options(
        &rt,
        &m1,
        &ContainerOptions::new().name("prefill").store(&store),
    )?;
    let decode = Container::from_map_with_options(
        &rt,
        &m2,
        &ContainerOptions::new().name("decode").store(&store),
    )?;
    let path = dir.join("store.safetensors");
    save(&path, &[("embed", &[5.0; 64]), ("b.w", &[6.0, 7.0, 8.0])]);
    store.update_from_file(&path, &UpdateOptions::new())?;
    store.swap()?;
    assert_eq!(read(&prefill, "embed").0, [5.0; 64]);
    assert_eq!(read(&decode, "embed").0, [5.0; 64]);
    assert_eq!(read(&decode, "b.w").0, [6.0, 7.0, 8.0]);
    assert_eq!(read(&prefill, "a.w").0, aw);
    // A file naming a tensor no member declares stages nothing anywhere.
    let bad = dir.join("bad.safetensors");
    save(&bad, &[("embed", &[9.0; 64]), ("nobody", &[1.0])]);
    expect_code(
        store.update_from_file(&bad, &UpdateOptions::new()),
        Code::NotFound,
        "nobody",
    );
    expect_code(store.swap(), Code::FailedPrecondition, "nothing staged");
    assert_eq!(read(&prefill, "embed").0, [5.0; 64]);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
