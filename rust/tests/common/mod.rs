// SPDX-License-Identifier: Apache-2.0
//! Helpers the integration tests share (each test file is its own crate: `mod common;`).
#![allow(dead_code)]

use wharf::{Backend, Code, Error, Runtime, RuntimeOptions};

/// A host-backend runtime with a small staging ring (one copy thread, 128 KiB), so that
/// updates of a few KiB already pass through several ring chunks.
pub fn host() -> Runtime {
    Runtime::new(
        &RuntimeOptions::new()
            .backend(Backend::Host)
            .copy_threads(1)
            .staging_bytes(128 << 10),
    )
    .expect("host runtime")
}

/// Asserts that `result` failed with `code` and a message containing every fragment.
#[track_caller]
pub fn expect_code<T: std::fmt::Debug>(
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
