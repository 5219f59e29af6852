// SPDX-License-Identifier: Apache-2.0
//! Raw declarations of `include/wharf/wharf.h` (ABI 1), written by hand.
//!
//! Everything here mirrors the header one to one; see the header for ownership, thread
//! safety and errors. C enums are declared as `u32` aliases with constants rather than
//! Rust enums: a library newer than this file may return values it does not know, which
//! would be undefined behaviour in a Rust enum. The safe layer in the crate root converts
//! them.
#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_void};
use std::marker::{PhantomData, PhantomPinned};

/// The ABI major version these declarations were written for (`WHARF_ABI_VERSION`).
pub const WHARF_ABI_VERSION: u32 = 1;
pub const WHARF_VERSION_MAJOR: u32 = 0;
pub const WHARF_VERSION_MINOR: u32 = 3;
pub const WHARF_VERSION_PATCH: u32 = 0;

/// Declares an opaque C type (only ever used behind a pointer).
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(
    wharf_status,
    wharf_runtime,
    wharf_constant_map,
    wharf_container,
    wharf_session,
    wharf_run,
    wharf_weight_store
);

// --- status -----------------------------------------------------------------------------

pub type wharf_code = u32;
pub const WHARF_OK: wharf_code = 0;
pub const WHARF_INVALID_ARGUMENT: wharf_code = 1;
pub const WHARF_NOT_FOUND: wharf_code = 2;
pub const WHARF_ALREADY_EXISTS: wharf_code = 3;
pub const WHARF_OUT_OF_MEMORY: wharf_code = 4;
pub const WHARF_RESOURCE_EXHAUSTED: wharf_code = 5;
pub const WHARF_FAILED_PRECONDITION: wharf_code = 6;
pub const WHARF_BUSY: wharf_code = 7;
pub const WHARF_UNSUPPORTED: wharf_code = 8;
pub const WHARF_DEVICE_ERROR: wharf_code = 9;
pub const WHARF_IO_ERROR: wharf_code = 10;
pub const WHARF_DATA_CORRUPT: wharf_code = 11;
pub const WHARF_INTERNAL: wharf_code = 12;
pub const WHARF_CANCELLED: wharf_code = 13;

// --- logging ----------------------------------------------------------------------------

pub type wharf_log_level = u32;
pub const WHARF_LOG_DEBUG: wharf_log_level = 0;
pub const WHARF_LOG_INFO: wharf_log_level = 1;
pub const WHARF_LOG_WARN: wharf_log_level = 2;
pub const WHARF_LOG_ERROR: wharf_log_level = 3;
pub const WHARF_LOG_OFF: wharf_log_level = 4;

pub type wharf_log_fn =
    Option<unsafe extern "C" fn(level: wharf_log_level, message: *const c_char, user: *mut c_void)>;

// --- dtypes and views -------------------------------------------------------------------

pub type wharf_dtype = u32;
pub const WHARF_DTYPE_F32: wharf_dtype = 0;
pub const WHARF_DTYPE_F16: wharf_dtype = 1;
pub const WHARF_DTYPE_BF16: wharf_dtype = 2;
pub const WHARF_DTYPE_F64: wharf_dtype = 3;
pub const WHARF_DTYPE_F8_E4M3: wharf_dtype = 4;
pub const WHARF_DTYPE_F8_E5M2: wharf_dtype = 5;
pub const WHARF_DTYPE_I8: wharf_dtype = 6;
pub const WHARF_DTYPE_U8: wharf_dtype = 7;
pub const WHARF_DTYPE_I16: wharf_dtype = 8;
pub const WHARF_DTYPE_I32: wharf_dtype = 9;
pub const WHARF_DTYPE_I64: wharf_dtype = 10;
pub const WHARF_DTYPE_BOOL: wharf_dtype = 11;
pub const WHARF_DTYPE_U16: wharf_dtype = 12;
pub const WHARF_DTYPE_U32: wharf_dtype = 13;
pub const WHARF_DTYPE_U64: wharf_dtype = 14;
pub const WHARF_DTYPE_C64: wharf_dtype = 15;
pub const WHARF_DTYPE_F8_E8M0: wharf_dtype = 16;
pub const WHARF_DTYPE_F8_E4M3FNUZ: wharf_dtype = 17;
pub const WHARF_DTYPE_F8_E5M2FNUZ: wharf_dtype = 18;
pub const WHARF_DTYPE_F4: wharf_dtype = 19;
pub const WHARF_DTYPE_F6_E2M3: wharf_dtype = 20;
pub const WHARF_DTYPE_F6_E3M2: wharf_dtype = 21;

pub type wharf_device_type = u32;
pub const WHARF_DEVICE_CPU: wharf_device_type = 0;
pub const WHARF_DEVICE_CUDA: wharf_device_type = 1;

pub const WHARF_MAX_DIMS: usize = 8;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_tensor_view {
    // Set to size_of::<wharf_tensor_view>() (every struct begins with it).
    pub struct_size: u32,
    pub flags: u32,
    pub data: *mut c_void,
    pub dtype: wharf_dtype,
    pub device_type: wharf_device_type,
    pub device_index: i32,
    pub ndim: i32,
    pub shape: *const i64,
    pub strides: *const i64,
    pub byte_offset: u64,
}

/// wharf_tensor_view.flags: the memory must not be written.
pub const WHARF_VIEW_READ_ONLY: u32 = 0x1;

// --- runtime ----------------------------------------------------------------------------

pub type wharf_backend = u32;
pub const WHARF_BACKEND_AUTO: wharf_backend = 0;
pub const WHARF_BACKEND_CUDA: wharf_backend = 1;
pub const WHARF_BACKEND_HOST: wharf_backend = 2;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_runtime_options {
    pub struct_size: u32,
    pub backend: wharf_backend,
    pub device_index: i32,
    pub device_memory_limit: u64,
    pub copy_threads: u32,
    pub staging_bytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct wharf_device_info {
    pub struct_size: u32,
    pub backend: wharf_backend,
    pub device_index: i32,
    pub name: [c_char; 256],
    pub total_memory: u64,
    pub free_memory: u64,
    pub compute_major: i32,
    pub compute_minor: i32,
}

pub type wharf_memory_tag = u32;
pub const WHARF_MEM_CONSTANTS: wharf_memory_tag = 0;
pub const WHARF_MEM_STATE: wharf_memory_tag = 1;
pub const WHARF_MEM_STAGING: wharf_memory_tag = 2;
pub const WHARF_MEM_WORKSPACE: wharf_memory_tag = 3;
pub const WHARF_MEM_OFFLOAD: wharf_memory_tag = 4;
pub const WHARF_MEM_GRAPH: wharf_memory_tag = 5;
pub const WHARF_MEM_TAG_CAPACITY: usize = 16;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_memory_stats {
    pub struct_size: u32,
    pub current: [u64; WHARF_MEM_TAG_CAPACITY],
    pub peak: [u64; WHARF_MEM_TAG_CAPACITY],
    pub device_current: u64,
    pub device_peak: u64,
    pub pinned_host_current: u64,
    pub pinned_host_peak: u64,
}

// --- containers -------------------------------------------------------------------------

pub type wharf_placement = u32;
pub const WHARF_PLACEMENT_DEVICE: wharf_placement = 0;
pub const WHARF_PLACEMENT_HOST: wharf_placement = 1;

pub const WHARF_CONSTANT_DERIVED: u32 = 0x1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_constant_decl {
    // Every element of one array states the same size.
    pub struct_size: u32,
    pub fqn: *const c_char,
    pub dtype: wharf_dtype,
    pub ndim: i32,
    pub shape: *const i64,
    pub placement: wharf_placement,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_state_decl {
    pub struct_size: u32,
    pub fqn: *const c_char,
    pub dtype: wharf_dtype,
    pub ndim: i32,
    pub shape: *const i64,
    pub initial: *const wharf_tensor_view,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_container_options {
    pub struct_size: u32,
    pub name: *const c_char,
    pub constants: *const wharf_constant_decl,
    pub num_constants: usize,
    pub store: *mut wharf_weight_store,
    pub states: *const wharf_state_decl,
    pub num_states: usize,
    pub max_session_bytes: u64,
    pub progress: wharf_progress_fn,
    pub progress_user: *mut c_void,
    /// State arena (experimental): the container whose arena to join (NULL: none).
    pub state_arena_of: *const wharf_container,
    /// State arena (experimental): > 0 makes an arena of this many sessions.
    pub session_capacity: u32,
}

/// Progress of a long call; a non-zero answer cancels it (`WHARF_CANCELLED`). Since 0.3.
pub type wharf_progress_fn =
    Option<unsafe extern "C" fn(done: u64, total: u64, user: *mut c_void) -> i32>;

pub type wharf_update_target = u32;
pub const WHARF_TARGET_INACTIVE: wharf_update_target = 0;
pub const WHARF_TARGET_ACTIVE_IN_PLACE: wharf_update_target = 1;

pub type wharf_fold_fn =
    Option<unsafe extern "C" fn(target: *mut wharf_run, user: *mut c_void) -> *mut wharf_status>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_update_options {
    pub struct_size: u32,
    pub target: wharf_update_target,
    pub require_full: i32,
    pub fold: wharf_fold_fn,
    pub fold_user: *mut c_void,
    pub wait_stream: *mut c_void,
    pub in_place_max_wait_ms: u32,
    pub progress: wharf_progress_fn,
    pub progress_user: *mut c_void,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_constant_info {
    pub struct_size: u32,
    pub fqn: *const c_char,
    pub dtype: wharf_dtype,
    pub ndim: i32,
    pub shape: *const i64,
    pub placement: wharf_placement,
    pub flags: u32,
    pub nbytes: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_state_info {
    pub struct_size: u32,
    pub fqn: *const c_char,
    pub dtype: wharf_dtype,
    pub ndim: i32,
    pub shape: *const i64,
    pub nbytes: u64,
}

pub type wharf_release_fn = Option<unsafe extern "C" fn(data: *mut c_void, user: *mut c_void)>;

// --- weight store -----------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_weight_store_stats {
    pub struct_size: u32,
    pub num_unique_constants: u64,
    pub unique_bytes: u64,
    pub num_references: u64,
    pub saved_bytes: u64,
}

// --- sessions ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_session_options {
    pub struct_size: u32,
    pub max_state_bytes: u64,
    pub allocate_eagerly: i32,
}

extern "C" {
    // status
    pub fn wharf_status_create(code: wharf_code, message: *const c_char) -> *mut wharf_status;
    pub fn wharf_status_code(status: *const wharf_status) -> wharf_code;
    pub fn wharf_status_message(status: *const wharf_status) -> *const c_char;
    pub fn wharf_status_free(status: *mut wharf_status);
    pub fn wharf_code_name(code: wharf_code) -> *const c_char;

    // versions
    pub fn wharf_version() -> *const c_char;
    pub fn wharf_version_number() -> u32;
    pub fn wharf_abi_version() -> u32;

    // logging
    pub fn wharf_log_set_callback(f: wharf_log_fn, min_level: wharf_log_level, user: *mut c_void);

    // dtypes
    pub fn wharf_dtype_size(dtype: wharf_dtype) -> usize;
    pub fn wharf_dtype_bits(dtype: wharf_dtype) -> usize;
    pub fn wharf_dtype_name(dtype: wharf_dtype) -> *const c_char;
    pub fn wharf_dtype_from_name(name: *const c_char, out: *mut wharf_dtype) -> *mut wharf_status;

    // runtime
    pub fn wharf_runtime_options_init_sized(opts: *mut wharf_runtime_options, struct_size: usize);
    pub fn wharf_runtime_create(
        opts: *const wharf_runtime_options,
        out: *mut *mut wharf_runtime,
    ) -> *mut wharf_status;
    pub fn wharf_runtime_free(runtime: *mut wharf_runtime);
    pub fn wharf_runtime_backend(runtime: *const wharf_runtime) -> wharf_backend;
    pub fn wharf_runtime_get_device_info(
        runtime: *const wharf_runtime,
        out: *mut wharf_device_info,
    ) -> *mut wharf_status;
    pub fn wharf_runtime_synchronize(runtime: *mut wharf_runtime) -> *mut wharf_status;
    pub fn wharf_runtime_get_memory_stats(
        runtime: *const wharf_runtime,
        out: *mut wharf_memory_stats,
    ) -> *mut wharf_status;
    pub fn wharf_runtime_reset_peak(runtime: *mut wharf_runtime);

    // constant maps
    pub fn wharf_constant_map_create(out: *mut *mut wharf_constant_map) -> *mut wharf_status;
    pub fn wharf_constant_map_set(
        map: *mut wharf_constant_map,
        fqn: *const c_char,
        view: *const wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_find(
        map: *const wharf_constant_map,
        fqn: *const c_char,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_num_entries(map: *const wharf_constant_map) -> usize;
    pub fn wharf_constant_map_get_entry(
        map: *const wharf_constant_map,
        i: usize,
        fqn: *mut *const c_char,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_load_safetensors(
        path: *const c_char,
        out: *mut *mut wharf_constant_map,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_num_metadata_entries(map: *const wharf_constant_map) -> usize;
    pub fn wharf_constant_map_get_metadata_entry(
        map: *const wharf_constant_map,
        i: usize,
        key: *mut *const c_char,
        value: *mut *const c_char,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_set_metadata(
        map: *mut wharf_constant_map,
        key: *const c_char,
        value: *const c_char,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_save_safetensors(
        map: *const wharf_constant_map,
        path: *const c_char,
    ) -> *mut wharf_status;
    pub fn wharf_constant_map_free(map: *mut wharf_constant_map);

    // containers
    pub fn wharf_container_options_init_sized(
        opts: *mut wharf_container_options,
        struct_size: usize,
    );
    pub fn wharf_container_create(
        runtime: *mut wharf_runtime,
        opts: *const wharf_container_options,
        out: *mut *mut wharf_container,
    ) -> *mut wharf_status;
    pub fn wharf_container_create_from_map(
        runtime: *mut wharf_runtime,
        map: *const wharf_constant_map,
        opts: *const wharf_container_options,
        out: *mut *mut wharf_container,
    ) -> *mut wharf_status;
    pub fn wharf_container_free(container: *mut wharf_container);
    pub fn wharf_update_options_init_sized(opts: *mut wharf_update_options, struct_size: usize);
    pub fn wharf_container_update(
        container: *mut wharf_container,
        map: *const wharf_constant_map,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
    pub fn wharf_container_update_from_file(
        container: *mut wharf_container,
        path: *const c_char,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
    pub fn wharf_container_swap(container: *mut wharf_container) -> *mut wharf_status;
    pub fn wharf_container_free_inactive(container: *mut wharf_container) -> *mut wharf_status;
    pub fn wharf_container_generation(container: *const wharf_container) -> u64;
    pub fn wharf_container_name(container: *const wharf_container) -> *const c_char;
    pub fn wharf_container_num_states(container: *const wharf_container) -> usize;
    pub fn wharf_container_get_state_info(
        container: *const wharf_container,
        i: usize,
        out: *mut wharf_state_info,
    ) -> *mut wharf_status;
    pub fn wharf_container_num_constants(container: *const wharf_container) -> usize;
    pub fn wharf_container_get_constant_info(
        container: *const wharf_container,
        i: usize,
        out: *mut wharf_constant_info,
    ) -> *mut wharf_status;
    pub fn wharf_container_bind_user_constant(
        container: *mut wharf_container,
        fqn: *const c_char,
        view: *const wharf_tensor_view,
        release: wharf_release_fn,
        user: *mut c_void,
    ) -> *mut wharf_status;

    // runs
    pub fn wharf_run_begin(
        container: *mut wharf_container,
        session: *mut wharf_session,
        stream: *mut c_void,
        out: *mut *mut wharf_run,
    ) -> *mut wharf_status;
    pub fn wharf_run_get_tensor(
        run: *const wharf_run,
        fqn: *const c_char,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_run_generation(run: *const wharf_run) -> u64;
    pub fn wharf_run_stream(run: *const wharf_run) -> *mut c_void;
    pub fn wharf_run_read(
        run: *const wharf_run,
        fqn: *const c_char,
        offset: u64,
        dst: *mut c_void,
        bytes: u64,
    ) -> *mut wharf_status;
    pub fn wharf_run_end(run: *mut wharf_run) -> *mut wharf_status;

    // weight store
    pub fn wharf_weight_store_create(
        runtime: *mut wharf_runtime,
        out: *mut *mut wharf_weight_store,
    ) -> *mut wharf_status;
    pub fn wharf_weight_store_free(store: *mut wharf_weight_store);
    pub fn wharf_weight_store_get_stats(
        store: *const wharf_weight_store,
        out: *mut wharf_weight_store_stats,
    ) -> *mut wharf_status;
    pub fn wharf_weight_store_update(
        store: *mut wharf_weight_store,
        map: *const wharf_constant_map,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
    pub fn wharf_weight_store_update_from_file(
        store: *mut wharf_weight_store,
        path: *const c_char,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
    pub fn wharf_weight_store_swap(store: *mut wharf_weight_store) -> *mut wharf_status;

    // sessions
    pub fn wharf_session_options_init_sized(opts: *mut wharf_session_options, struct_size: usize);
    pub fn wharf_session_create(
        runtime: *mut wharf_runtime,
        containers: *const *mut wharf_container,
        num_containers: usize,
        opts: *const wharf_session_options,
        out: *mut *mut wharf_session,
    ) -> *mut wharf_status;
    pub fn wharf_session_reset(session: *mut wharf_session) -> *mut wharf_status;
    pub fn wharf_session_fork(
        src: *const wharf_session,
        out: *mut *mut wharf_session,
    ) -> *mut wharf_status;
    pub fn wharf_session_state_bytes(session: *const wharf_session) -> u64;
    pub fn wharf_session_free(session: *mut wharf_session);
}

// --- experimental tier (WHARF_EXPERIMENTAL; cargo feature "experimental") ---------------
//
// Symbol version WHARF_EXPERIMENTAL: not in the ABI baseline, may change or go in any minor
// release (a changed signature gets a new name).

#[cfg(feature = "experimental")]
opaque!(wharf_model);

#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_model_options {
    pub struct_size: u32,
    pub name: *const c_char,
    pub store: *mut wharf_weight_store,
    pub max_session_bytes: u64,
    pub shim_path: *const c_char,
    pub offload: *const wharf_offloader_options,
    pub progress: wharf_progress_fn,
    pub progress_user: *mut c_void,
    pub session_capacity: u32,
}

/// Options of wharf_model_enable_graphs (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_graph_options {
    pub struct_size: u32,
    pub max_buckets: u32,
    pub max_pool_bytes: u64,
    pub max_concurrent_runs: u32,
    pub bucket_dim: *const c_char,
    pub bucket_sizes: *const i64,
    pub num_bucket_sizes: u32,
    pub exact_shapes: u32,
}

/// wharf_graph_stats (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_graph_stats {
    pub struct_size: u32,
    pub num_buckets: u32,
    pub captures: u64,
    pub capture_failures: u64,
    pub replays: u64,
    pub repoints: u64,
    pub nodes_repointed: u64,
    pub eager_runs: u64,
    pub folds: u64,
    pub pool_bytes: u64,
    pub folded_bytes: u64,
    pub repoint_ns: u64,
    pub bind_check_ns: u64,
    pub fold_ns: u64,
    pub last_eager_reason: [c_char; 256],
    pub padded_replays: u64,
    pub bucket_dim: [c_char; 64],
    pub num_bucket_sizes: u32,
    pub select_ns: u64,
    pub wait_ns: u64,
    pub inputs_ns: u64,
    pub launch_ns: u64,
    pub outputs_ns: u64,
    pub release_ns: u64,
    pub replay_folds: u64,
    pub prepare_folds: u64,
    pub prepointed_replays: u64,
    pub prepares: u64,
    pub prepare_failures: u64,
    pub prepare_ns: u64,
}

/// wharf_graph_bucket_info (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_graph_bucket_info {
    pub struct_size: u32,
    pub set: u32,
    pub pool_bytes: u64,
    pub nodes: u64,
    pub patched_nodes: u64,
    pub patches: u64,
    pub capture_ms: f64,
    pub shapes: [c_char; 128],
    pub bucket_size: i64,
    pub bind_fold_ms: f64,
    pub warmup_ms: f64,
    pub capture_run_ms: f64,
    pub scan_ms: f64,
    pub instantiate_ms: f64,
}

/// wharf_state_arena_stats (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_state_arena_stats {
    pub struct_size: u32,
    pub num_slots: u32,
    pub num_slots_used: u32,
    pub num_slots_free: u32,
    pub bytes: u64,
}

#[cfg(feature = "experimental")]
extern "C" {
    // CUDA graphs of a model's runs
    pub fn wharf_graph_options_init_sized(opts: *mut wharf_graph_options, struct_size: usize);
    pub fn wharf_model_enable_graphs(
        model: *mut wharf_model,
        opts: *const wharf_graph_options,
    ) -> *mut wharf_status;
    pub fn wharf_model_get_graph_stats(
        model: *const wharf_model,
        out: *mut wharf_graph_stats,
    ) -> *mut wharf_status;
    pub fn wharf_model_get_graph_bucket(
        model: *const wharf_model,
        index: u32,
        out: *mut wharf_graph_bucket_info,
    ) -> *mut wharf_status;
    // state arenas and batched runs
    pub fn wharf_run_begin_batch(
        container: *mut wharf_container,
        sessions: *const *mut wharf_session,
        num_sessions: usize,
        stream: *mut c_void,
        out: *mut *mut wharf_run,
    ) -> *mut wharf_status;
    pub fn wharf_run_num_sessions(run: *const wharf_run) -> usize;
    pub fn wharf_run_get_slot_indices(
        run: *const wharf_run,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_session_slot(session: *const wharf_session) -> i64;
    pub fn wharf_container_get_state_arena_stats(
        container: *const wharf_container,
        out: *mut wharf_state_arena_stats,
    ) -> *mut wharf_status;
}

#[cfg(feature = "experimental")]
extern "C" {
    // index access and queries
    pub fn wharf_container_find_constant(
        container: *const wharf_container,
        fqn: *const c_char,
    ) -> i64;
    pub fn wharf_container_find_state(container: *const wharf_container, fqn: *const c_char)
        -> i64;
    pub fn wharf_container_has_staged(container: *const wharf_container) -> i32;
    pub fn wharf_run_get_tensor_at(
        run: *const wharf_run,
        index: usize,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_run_get_state_at(
        run: *const wharf_run,
        index: usize,
        out: *mut wharf_tensor_view,
    ) -> *mut wharf_status;
    pub fn wharf_run_get_session(
        run: *const wharf_run,
        out: *mut *mut wharf_session,
    ) -> *mut wharf_status;

    // models
    pub fn wharf_model_options_init_sized(opts: *mut wharf_model_options, struct_size: usize);
    pub fn wharf_model_load(
        runtime: *mut wharf_runtime,
        so_path: *const c_char,
        weights: *const wharf_constant_map,
        opts: *const wharf_model_options,
        out: *mut *mut wharf_model,
    ) -> *mut wharf_status;
    pub fn wharf_model_free(model: *mut wharf_model);
    pub fn wharf_model_container(model: *mut wharf_model) -> *mut wharf_container;
    pub fn wharf_model_num_inputs(model: *const wharf_model) -> usize;
    pub fn wharf_model_num_outputs(model: *const wharf_model) -> usize;
    pub fn wharf_model_input_name(model: *const wharf_model, i: usize) -> *const c_char;
    pub fn wharf_model_run(
        model: *mut wharf_model,
        run: *mut wharf_run,
        inputs: *const wharf_tensor_view,
        num_inputs: usize,
        outputs: *mut wharf_tensor_view,
        num_outputs: usize,
    ) -> *mut wharf_status;
    pub fn wharf_run_copy(
        run: *const wharf_run,
        dst: *mut c_void,
        src: *const c_void,
        bytes: u64,
    ) -> *mut wharf_status;
}

#[cfg(feature = "experimental")]
opaque!(wharf_model_package);

/// Options of wharf_model_package_load (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_model_package_options {
    pub struct_size: u32,
    pub shim_path: *const c_char,
    pub max_session_bytes: u64,
    pub progress: wharf_progress_fn,
    pub progress_user: *mut c_void,
    pub session_capacity: u32,
}

/// One input or output of a package's method (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_model_package_tensor_info {
    pub struct_size: u32,
    pub name: *const c_char,
    pub dtype: wharf_dtype,
    pub ndim: i32,
    pub shape: *const i64,
    pub dim_names: *const *const c_char,
    pub dim_min: *const i64,
    pub dim_max: *const i64,
}

#[cfg(feature = "experimental")]
extern "C" {
    // model packages
    pub fn wharf_model_package_options_init_sized(
        opts: *mut wharf_model_package_options,
        struct_size: usize,
    );
    pub fn wharf_model_package_load(
        runtime: *mut wharf_runtime,
        dir: *const c_char,
        opts: *const wharf_model_package_options,
        out: *mut *mut wharf_model_package,
    ) -> *mut wharf_status;
    pub fn wharf_model_package_free(package: *mut wharf_model_package);
    pub fn wharf_model_package_name(package: *const wharf_model_package) -> *const c_char;
    pub fn wharf_model_package_max_seq_len(package: *const wharf_model_package) -> u64;
    pub fn wharf_model_package_store(package: *mut wharf_model_package) -> *mut wharf_weight_store;
    pub fn wharf_model_package_num_methods(package: *const wharf_model_package) -> usize;
    pub fn wharf_model_package_method_name(
        package: *const wharf_model_package,
        i: usize,
    ) -> *const c_char;
    pub fn wharf_model_package_find_method(
        package: *const wharf_model_package,
        name: *const c_char,
    ) -> i64;
    pub fn wharf_model_package_get_method(
        package: *mut wharf_model_package,
        name: *const c_char,
        out: *mut *mut wharf_model,
    ) -> *mut wharf_status;
    pub fn wharf_model_package_create_session(
        package: *mut wharf_model_package,
        opts: *const wharf_session_options,
        out: *mut *mut wharf_session,
    ) -> *mut wharf_status;
    pub fn wharf_model_package_num_method_inputs(
        package: *const wharf_model_package,
        method: usize,
    ) -> usize;
    pub fn wharf_model_package_num_method_outputs(
        package: *const wharf_model_package,
        method: usize,
    ) -> usize;
    pub fn wharf_model_package_get_method_input(
        package: *const wharf_model_package,
        method: usize,
        i: usize,
        out: *mut wharf_model_package_tensor_info,
    ) -> *mut wharf_status;
    pub fn wharf_model_package_get_method_output(
        package: *const wharf_model_package,
        method: usize,
        i: usize,
        out: *mut wharf_model_package_tensor_info,
    ) -> *mut wharf_status;
}

#[cfg(feature = "experimental")]
opaque!(wharf_offloader, wharf_replica_group);

/// Options of wharf_offloader_create (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_offloader_options {
    pub struct_size: u32,
    pub fqns: *const *const c_char,
    pub num_fqns: usize,
    pub layer_pattern: *const c_char,
    pub group_size: u32,
    pub num_in_group: u32,
    pub prefetch_step: u32,
    pub slot_capacity: u32,
    pub step_compute_us: u64,
    pub h2d_bytes_per_second: u64,
    pub refuse_if_exposed: i32,
}

#[cfg(feature = "experimental")]
pub type wharf_h2d_source = i32;
#[cfg(feature = "experimental")]
pub const WHARF_H2D_GIVEN: wharf_h2d_source = 0;
#[cfg(feature = "experimental")]
pub const WHARF_H2D_MEASURED: wharf_h2d_source = 1;
#[cfg(feature = "experimental")]
pub const WHARF_H2D_ASSUMED: wharf_h2d_source = 2;

/// wharf_offloader_budget (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_offloader_budget {
    pub struct_size: u32,
    pub num_offloaded_layers: u32,
    pub bytes_per_step: u64,
    pub h2d_bytes_per_second: u64,
    pub h2d_source: i32,
    pub copy_us: f64,
    pub compute_us: f64,
    pub exposed_us: f64,
}

/// wharf_replica_group_id (experimental): 256 opaque bytes.
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_replica_group_id {
    pub internal: [u8; 256],
}

/// wharf_replica_group_rank_options (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_replica_group_rank_options {
    pub struct_size: u32,
    pub timeout_ms: u32,
}

/// wharf_replica_group_stats (experimental).
#[cfg(feature = "experimental")]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct wharf_replica_group_stats {
    pub struct_size: u32,
    pub num_replicas: u32,
    pub nccl_version: i32,
    pub num_updates: u64,
    pub num_swaps: u64,
    pub source_bytes: u64,
    pub broadcast_bytes: u64,
    pub num_broadcasts: u64,
}

#[cfg(feature = "experimental")]
extern "C" {
    // offloaders
    pub fn wharf_offloader_options_init_sized(
        opts: *mut wharf_offloader_options,
        struct_size: usize,
    );
    pub fn wharf_offloader_create(
        container: *mut wharf_container,
        opts: *const wharf_offloader_options,
        out: *mut *mut wharf_offloader,
    ) -> *mut wharf_status;
    pub fn wharf_offloader_free(offloader: *mut wharf_offloader);
    pub fn wharf_offloader_get_budget(
        offloader: *const wharf_offloader,
        out: *mut wharf_offloader_budget,
    ) -> *mut wharf_status;
    pub fn wharf_offloader_num_layers(offloader: *const wharf_offloader) -> u32;
    pub fn wharf_offloader_num_layer_constants(
        offloader: *const wharf_offloader,
        layer: u32,
    ) -> usize;
    pub fn wharf_offloader_layer_constant(
        offloader: *const wharf_offloader,
        layer: u32,
        i: usize,
    ) -> *const c_char;
    pub fn wharf_model_get_offloader(
        model: *mut wharf_model,
        out: *mut *mut wharf_offloader,
    ) -> *mut wharf_status;
    pub fn wharf_run_begin_offload(
        run: *mut wharf_run,
        offloader: *mut wharf_offloader,
    ) -> *mut wharf_status;
    pub fn wharf_run_wait_offload(
        run: *mut wharf_run,
        offloader: *mut wharf_offloader,
        layer: u32,
        views: *mut wharf_tensor_view,
        num_views: usize,
    ) -> *mut wharf_status;
    pub fn wharf_run_mark_offload_issued(
        run: *mut wharf_run,
        offloader: *mut wharf_offloader,
        layer: u32,
    ) -> *mut wharf_status;
    pub fn wharf_run_end_offload(
        run: *mut wharf_run,
        offloader: *mut wharf_offloader,
    ) -> *mut wharf_status;

    // replica groups
    pub fn wharf_replica_group_create(
        containers: *const *mut wharf_container,
        num_containers: usize,
        out: *mut *mut wharf_replica_group,
    ) -> *mut wharf_status;
    pub fn wharf_replica_group_free(group: *mut wharf_replica_group);
    pub fn wharf_replica_group_num_replicas(group: *const wharf_replica_group) -> usize;
    pub fn wharf_replica_group_update(
        group: *mut wharf_replica_group,
        map: *const wharf_constant_map,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
    pub fn wharf_replica_group_swap(group: *mut wharf_replica_group) -> *mut wharf_status;
    pub fn wharf_replica_group_free_inactive(group: *mut wharf_replica_group) -> *mut wharf_status;
    pub fn wharf_replica_group_get_stats(
        group: *const wharf_replica_group,
        out: *mut wharf_replica_group_stats,
    ) -> *mut wharf_status;
    pub fn wharf_replica_group_get_unique_id(
        runtime: *mut wharf_runtime,
        out: *mut wharf_replica_group_id,
    ) -> *mut wharf_status;
    pub fn wharf_replica_group_rank_options_init_sized(
        opts: *mut wharf_replica_group_rank_options,
        struct_size: usize,
    );
    pub fn wharf_replica_group_create_rank(
        container: *mut wharf_container,
        id: *const wharf_replica_group_id,
        rank: u32,
        size: u32,
        opts: *const wharf_replica_group_rank_options,
        out: *mut *mut wharf_replica_group,
    ) -> *mut wharf_status;
    pub fn wharf_replica_group_update_ranks(
        group: *mut wharf_replica_group,
        map: *const wharf_constant_map,
        opts: *const wharf_update_options,
    ) -> *mut wharf_status;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // Sizes and offsets as the C compiler lays the structs out on LP64 targets (x86-64,
    // aarch64), derived from the header and checked with gcc:
    //   printf '#include "wharf/wharf.h"\n#include <stdio.h>\n#include <stddef.h>\n
    //     int main(){printf("%zu\n",sizeof(wharf_tensor_view));}' | gcc -x c -Iinclude - && ./a.out
    // Every struct begins with struct_size. wharf_tensor_view: struct_size 4 + flags 4 +
    // data 8 + dtype 4 + device_type 4 + device_index 4 + ndim 4 + shape 8 + strides 8 +
    // byte_offset 8 = 56. wharf_device_info: 4+4+4+256 = 268, padded to 272 for
    // total_memory, + 8 + 8 + 4 + 4 = 296. wharf_memory_stats: 4, padded to 8, + 2*16*8
    // + 4*8 = 296. wharf_container_options (0.2.0): 4, padded to 8, + 3*8 (name, constants,
    // num_constants) + store 8 + states 8 + num_states 8 + max_session_bytes 8 = 64.
    // wharf_state_decl: struct_size 4, padded to 8, + fqn 8 + dtype 4 + ndim 4 + shape 8 +
    // initial 8 = 40. wharf_constant_decl: 4, padded to 8, + fqn 8 + dtype 4 + ndim 4 +
    // shape 8 + placement 4 + flags 4 = 40.
    // wharf_update_options: 32 (0.1), + wait_stream 8 + in_place_max_wait_ms 4, padded to 48.
    // wharf_session_options: 4, padded to 8, + 8 + 4, padded to 24.
    // wharf_weight_store_stats: 4, padded to 8, + 4*8 = 40.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn struct_layouts_match_the_c_header() {
        assert_eq!(size_of::<wharf_tensor_view>(), 56);
        assert_eq!(offset_of!(wharf_tensor_view, struct_size), 0);
        assert_eq!(offset_of!(wharf_tensor_view, flags), 4);
        assert_eq!(offset_of!(wharf_tensor_view, data), 8);
        assert_eq!(offset_of!(wharf_tensor_view, dtype), 16);
        assert_eq!(offset_of!(wharf_tensor_view, ndim), 28);
        assert_eq!(offset_of!(wharf_tensor_view, shape), 32);
        assert_eq!(offset_of!(wharf_tensor_view, strides), 40);
        assert_eq!(offset_of!(wharf_tensor_view, byte_offset), 48);

        assert_eq!(size_of::<wharf_runtime_options>(), 40);
        assert_eq!(offset_of!(wharf_runtime_options, device_index), 8);
        assert_eq!(offset_of!(wharf_runtime_options, device_memory_limit), 16);
        assert_eq!(offset_of!(wharf_runtime_options, copy_threads), 24);
        assert_eq!(offset_of!(wharf_runtime_options, staging_bytes), 32);

        assert_eq!(size_of::<wharf_device_info>(), 296);
        assert_eq!(offset_of!(wharf_device_info, name), 12);
        assert_eq!(offset_of!(wharf_device_info, total_memory), 272);
        assert_eq!(offset_of!(wharf_device_info, compute_minor), 292);

        assert_eq!(size_of::<wharf_memory_stats>(), 296);
        assert_eq!(offset_of!(wharf_memory_stats, current), 8);
        assert_eq!(offset_of!(wharf_memory_stats, peak), 136);
        assert_eq!(offset_of!(wharf_memory_stats, device_current), 264);
        assert_eq!(offset_of!(wharf_memory_stats, pinned_host_peak), 288);

        assert_eq!(size_of::<wharf_constant_decl>(), 40);
        assert_eq!(offset_of!(wharf_constant_decl, struct_size), 0);
        assert_eq!(offset_of!(wharf_constant_decl, fqn), 8);
        assert_eq!(offset_of!(wharf_constant_decl, shape), 24);
        assert_eq!(offset_of!(wharf_constant_decl, placement), 32);
        assert_eq!(offset_of!(wharf_constant_decl, flags), 36);

        assert_eq!(size_of::<wharf_container_options>(), 96);
        assert_eq!(offset_of!(wharf_container_options, state_arena_of), 80);
        assert_eq!(offset_of!(wharf_container_options, session_capacity), 88);
        assert_eq!(offset_of!(wharf_container_options, progress), 64);
        assert_eq!(offset_of!(wharf_container_options, progress_user), 72);
        assert_eq!(offset_of!(wharf_container_options, name), 8);
        assert_eq!(offset_of!(wharf_container_options, num_constants), 24);
        assert_eq!(offset_of!(wharf_container_options, store), 32);
        assert_eq!(offset_of!(wharf_container_options, states), 40);
        assert_eq!(offset_of!(wharf_container_options, num_states), 48);
        assert_eq!(offset_of!(wharf_container_options, max_session_bytes), 56);

        assert_eq!(size_of::<wharf_state_decl>(), 40);
        assert_eq!(offset_of!(wharf_state_decl, struct_size), 0);
        assert_eq!(offset_of!(wharf_state_decl, fqn), 8);
        assert_eq!(offset_of!(wharf_state_decl, dtype), 16);
        assert_eq!(offset_of!(wharf_state_decl, ndim), 20);
        assert_eq!(offset_of!(wharf_state_decl, shape), 24);
        assert_eq!(offset_of!(wharf_state_decl, initial), 32);

        assert_eq!(size_of::<wharf_session_options>(), 24);
        assert_eq!(offset_of!(wharf_session_options, max_state_bytes), 8);
        assert_eq!(offset_of!(wharf_session_options, allocate_eagerly), 16);

        assert_eq!(size_of::<wharf_weight_store_stats>(), 40);
        assert_eq!(
            offset_of!(wharf_weight_store_stats, num_unique_constants),
            8
        );
        assert_eq!(offset_of!(wharf_weight_store_stats, unique_bytes), 16);
        assert_eq!(offset_of!(wharf_weight_store_stats, num_references), 24);
        assert_eq!(offset_of!(wharf_weight_store_stats, saved_bytes), 32);

        assert_eq!(size_of::<wharf_update_options>(), 64);
        assert_eq!(offset_of!(wharf_update_options, progress), 48);
        assert_eq!(offset_of!(wharf_update_options, progress_user), 56);
        assert_eq!(offset_of!(wharf_update_options, wait_stream), 32);
        assert_eq!(offset_of!(wharf_update_options, in_place_max_wait_ms), 40);
        assert_eq!(offset_of!(wharf_update_options, require_full), 8);
        assert_eq!(offset_of!(wharf_update_options, fold), 16);
        assert_eq!(offset_of!(wharf_update_options, fold_user), 24);

        assert_eq!(size_of::<wharf_constant_info>(), 48);
        assert_eq!(offset_of!(wharf_constant_info, fqn), 8);
        assert_eq!(offset_of!(wharf_constant_info, dtype), 16);
        assert_eq!(offset_of!(wharf_constant_info, shape), 24);
        assert_eq!(offset_of!(wharf_constant_info, placement), 32);
        assert_eq!(offset_of!(wharf_constant_info, nbytes), 40);

        assert_eq!(size_of::<wharf_state_info>(), 40);
        assert_eq!(offset_of!(wharf_state_info, shape), 24);
        assert_eq!(offset_of!(wharf_state_info, nbytes), 32);

        // wharf_model_options (experimental): 4, padded to 8, + name 8 + store 8 +
        // max_session_bytes 8 + shim_path 8 + offload 8 + progress 8 + progress_user 8 +
        // session_capacity 4, padded to 8 = 72.
        #[cfg(feature = "experimental")]
        {
            assert_eq!(size_of::<wharf_model_options>(), 72);
            assert_eq!(offset_of!(wharf_model_options, session_capacity), 64);
            assert_eq!(size_of::<wharf_model_package_options>(), 48);
            assert_eq!(
                offset_of!(wharf_model_package_options, session_capacity),
                40
            );
            assert_eq!(size_of::<wharf_graph_options>(), 48);
            assert_eq!(offset_of!(wharf_graph_options, max_concurrent_runs), 16);
            assert_eq!(offset_of!(wharf_graph_options, bucket_dim), 24);
            assert_eq!(offset_of!(wharf_graph_options, bucket_sizes), 32);
            assert_eq!(offset_of!(wharf_graph_options, num_bucket_sizes), 40);
            assert_eq!(offset_of!(wharf_graph_options, exact_shapes), 44);
            // wharf_graph_stats: num_bucket_sizes 4 at 432, padded to 440, + the replay
            // phases' six u64 (select_ns .. release_ns) = 488, + the preparation counters'
            // six u64 (replay_folds .. prepare_ns) = 536.
            assert_eq!(size_of::<wharf_graph_stats>(), 536);
            assert_eq!(offset_of!(wharf_graph_stats, fold_ns), 96);
            assert_eq!(offset_of!(wharf_graph_stats, last_eager_reason), 104);
            assert_eq!(offset_of!(wharf_graph_stats, padded_replays), 360);
            assert_eq!(offset_of!(wharf_graph_stats, bucket_dim), 368);
            assert_eq!(offset_of!(wharf_graph_stats, num_bucket_sizes), 432);
            assert_eq!(offset_of!(wharf_graph_stats, select_ns), 440);
            assert_eq!(offset_of!(wharf_graph_stats, wait_ns), 448);
            assert_eq!(offset_of!(wharf_graph_stats, inputs_ns), 456);
            assert_eq!(offset_of!(wharf_graph_stats, launch_ns), 464);
            assert_eq!(offset_of!(wharf_graph_stats, outputs_ns), 472);
            assert_eq!(offset_of!(wharf_graph_stats, release_ns), 480);
            assert_eq!(offset_of!(wharf_graph_stats, replay_folds), 488);
            assert_eq!(offset_of!(wharf_graph_stats, prepare_ns), 528);
            assert_eq!(size_of::<wharf_graph_bucket_info>(), 224);
            assert_eq!(offset_of!(wharf_graph_bucket_info, instantiate_ms), 216);
            assert_eq!(offset_of!(wharf_graph_bucket_info, capture_ms), 40);
            assert_eq!(offset_of!(wharf_graph_bucket_info, shapes), 48);
            assert_eq!(offset_of!(wharf_graph_bucket_info, bucket_size), 176);
            assert_eq!(size_of::<wharf_state_arena_stats>(), 24);
            assert_eq!(offset_of!(wharf_state_arena_stats, bytes), 16);
            assert_eq!(offset_of!(wharf_model_options, offload), 40);
            assert_eq!(size_of::<wharf_offloader_options>(), 72);
            assert_eq!(offset_of!(wharf_offloader_options, layer_pattern), 24);
            assert_eq!(offset_of!(wharf_offloader_options, group_size), 32);
            assert_eq!(offset_of!(wharf_offloader_options, slot_capacity), 44);
            assert_eq!(offset_of!(wharf_offloader_options, step_compute_us), 48);
            assert_eq!(offset_of!(wharf_offloader_options, refuse_if_exposed), 64);
            assert_eq!(size_of::<wharf_offloader_budget>(), 56);
            assert_eq!(offset_of!(wharf_offloader_budget, h2d_source), 24);
            assert_eq!(offset_of!(wharf_offloader_budget, copy_us), 32);
            assert_eq!(offset_of!(wharf_offloader_budget, exposed_us), 48);
            assert_eq!(size_of::<wharf_replica_group_stats>(), 56);
            assert_eq!(size_of::<wharf_replica_group_id>(), 256);
            assert_eq!(size_of::<wharf_replica_group_rank_options>(), 8);
            assert_eq!(offset_of!(wharf_replica_group_rank_options, timeout_ms), 4);
            assert_eq!(offset_of!(wharf_replica_group_stats, num_updates), 16);
            assert_eq!(offset_of!(wharf_replica_group_stats, num_broadcasts), 48);
            assert_eq!(offset_of!(wharf_model_options, progress), 48);
            assert_eq!(offset_of!(wharf_model_options, progress_user), 56);
            assert_eq!(offset_of!(wharf_model_options, name), 8);
            assert_eq!(offset_of!(wharf_model_options, store), 16);
            assert_eq!(offset_of!(wharf_model_options, max_session_bytes), 24);
            assert_eq!(offset_of!(wharf_model_options, shim_path), 32);
            assert_eq!(align_of::<wharf_model_options>(), 8);
        }

        for align in [
            align_of::<wharf_tensor_view>(),
            align_of::<wharf_runtime_options>(),
            align_of::<wharf_device_info>(),
            align_of::<wharf_memory_stats>(),
            align_of::<wharf_constant_decl>(),
            align_of::<wharf_container_options>(),
            align_of::<wharf_update_options>(),
            align_of::<wharf_constant_info>(),
            align_of::<wharf_state_decl>(),
            align_of::<wharf_session_options>(),
            align_of::<wharf_weight_store_stats>(),
            align_of::<wharf_state_info>(),
        ] {
            assert_eq!(align, 8);
        }
        // A C enum is an int-sized integer.
        assert_eq!(size_of::<wharf_code>(), 4);
        assert_eq!(size_of::<wharf_fold_fn>(), 8);
    }

    #[test]
    fn options_init_sets_struct_size_to_the_c_size() {
        // The library's *_init_sized functions write the size they were given, filling the
        // defaults: a second, independent check of the Rust sizes.
        unsafe {
            let mut r = std::mem::zeroed::<wharf_runtime_options>();
            wharf_runtime_options_init_sized(&mut r, size_of::<wharf_runtime_options>());
            assert_eq!(r.struct_size as usize, size_of::<wharf_runtime_options>());
            let mut c = std::mem::zeroed::<wharf_container_options>();
            wharf_container_options_init_sized(&mut c, size_of::<wharf_container_options>());
            assert_eq!(c.struct_size as usize, size_of::<wharf_container_options>());
            let mut u = std::mem::zeroed::<wharf_update_options>();
            wharf_update_options_init_sized(&mut u, size_of::<wharf_update_options>());
            assert_eq!(u.struct_size as usize, size_of::<wharf_update_options>());
            assert_eq!(u.target, WHARF_TARGET_INACTIVE);
            assert!(u.fold.is_none());
            assert!(u.wait_stream.is_null());
            assert_eq!(u.in_place_max_wait_ms, 1000);
            // The later fields default to "no store, no states, no budget".
            assert!(c.store.is_null());
            assert!(c.states.is_null());
            assert_eq!((c.num_states, c.max_session_bytes), (0, 0));
            let mut s = std::mem::zeroed::<wharf_session_options>();
            wharf_session_options_init_sized(&mut s, size_of::<wharf_session_options>());
            assert_eq!(s.struct_size as usize, size_of::<wharf_session_options>());
            assert_eq!((s.max_state_bytes, s.allocate_eagerly), (0, 0));
            #[cfg(feature = "experimental")]
            {
                // Poisoned, to see that the init writes every field it covers (and only
                // those: the library writes no byte past the size it is given).
                let mut m = [0xA5u8; size_of::<wharf_model_options>() + 8];
                let p = m.as_mut_ptr().cast::<wharf_model_options>();
                wharf_model_options_init_sized(p, size_of::<wharf_model_options>());
                let o = p.read_unaligned();
                assert_eq!(o.struct_size as usize, size_of::<wharf_model_options>());
                assert!(o.name.is_null() && o.store.is_null() && o.shim_path.is_null());
                assert_eq!(o.max_session_bytes, 0);
                assert!(m[size_of::<wharf_model_options>()..]
                    .iter()
                    .all(|&b| b == 0xA5));
            }
            assert_eq!(
                wharf_version_number(),
                WHARF_VERSION_MAJOR * 10000 + WHARF_VERSION_MINOR * 100 + WHARF_VERSION_PATCH
            );
        }
    }
}
