// SPDX-License-Identifier: Apache-2.0
//! CUDA graphs of a model's runs (experimental): [`Model::enable_graphs`],
//! [`Model::graph_stats`], [`Model::graph_bucket`].

use std::ffi::{c_char, CString};

use crate::error::{Error, Result};
use crate::model::Model;
use crate::sys;

/// Options of [`Model::enable_graphs`] (`wharf_graph_options`). `GraphOptions::new()` (or
/// `default()`) means the library's defaults: 8 buckets, no pool ceiling, 4 concurrent runs,
/// a package method's dimension padded to its default buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphOptions {
    max_buckets: u32,
    max_pool_bytes: u64,
    max_concurrent_runs: u32,
    bucket_dim: Option<String>,
    bucket_sizes: Vec<i64>,
    exact_shapes: bool,
}

/// A `wharf_graph_options` and the memory its pointers name (kept for the call).
pub(crate) struct COptions {
    pub(crate) raw: sys::wharf_graph_options,
    _dim: Option<CString>,
    _sizes: Vec<i64>,
}

impl GraphOptions {
    /// The defaults.
    pub fn new() -> GraphOptions {
        GraphOptions::default()
    }

    /// Distinct input shapes (buckets) that get a graph, each captured at the first run of
    /// that shape; runs of further shapes execute eagerly. 0 (the default): 8.
    pub fn max_buckets(mut self, buckets: u32) -> GraphOptions {
        self.max_buckets = buckets;
        self
    }

    /// Ceiling of each graph pool in bytes (0, the default: none): a capture that would
    /// pass it fails and its shape runs eagerly.
    pub fn max_pool_bytes(mut self, bytes: u64) -> GraphOptions {
        self.max_pool_bytes = bytes;
        self
    }

    /// Runs that may replay at the same time: each open run that replayed holds a set of
    /// graphs until it ends; a run finding every set held executes eagerly. 0 (the
    /// default): 4.
    pub fn max_concurrent_runs(mut self, runs: u32) -> GraphOptions {
        self.max_concurrent_runs = runs;
        self
    }

    /// Buckets of a symbolic dimension (a model package method's manifest `dims`:
    /// a batched method's session dimension, decode_batch's `"N"`, or one marked `"pad": "repeat"`,
    /// the exporter's prefill `"T"`): a run of size n replays the
    /// graph of the smallest of `sizes` >= n, its inputs padded by repeating their last row, its outputs
    /// with the dimension views of the real rows; sizes past the largest run eagerly (see
    /// `wharf_model_enable_graphs` for the rule a method must satisfy). `dim` `None` with
    /// sizes: the method's only paddable dimension. Not called: the default set (powers of
    /// two up to the dimension's max, and the max) where the method has one session dimension
    /// with a max (a prefill's T: exact shapes).
    pub fn buckets(mut self, dim: Option<&str>, sizes: &[i64]) -> GraphOptions {
        self.bucket_dim = dim.map(str::to_string);
        self.bucket_sizes = sizes.to_vec();
        self
    }

    /// No padding: a graph per exact input shape.
    pub fn exact_shapes(mut self, exact: bool) -> GraphOptions {
        self.exact_shapes = exact;
        self
    }

    /// `InvalidArgument` for a dimension name holding a NUL byte.
    pub(crate) fn to_c(&self) -> Result<COptions> {
        // SAFETY: all-zero is valid input for *_init_sized, which fills the defaults.
        let mut o = unsafe { std::mem::zeroed::<sys::wharf_graph_options>() };
        // SAFETY: a valid, writable struct of the size passed.
        unsafe {
            sys::wharf_graph_options_init_sized(
                &mut o,
                std::mem::size_of::<sys::wharf_graph_options>(),
            )
        };
        o.max_buckets = self.max_buckets;
        o.max_pool_bytes = self.max_pool_bytes;
        o.max_concurrent_runs = self.max_concurrent_runs;
        o.exact_shapes = u32::from(self.exact_shapes);
        let dim = match &self.bucket_dim {
            Some(d) => Some(CString::new(d.as_str()).map_err(|_| {
                Error::invalid(format!(
                    "GraphOptions::buckets: the dimension name {d:?} holds a NUL byte"
                ))
            })?),
            None => None,
        };
        let sizes = self.bucket_sizes.clone();
        if let Some(d) = &dim {
            o.bucket_dim = d.as_ptr();
        }
        if !sizes.is_empty() {
            o.bucket_sizes = sizes.as_ptr();
            o.num_bucket_sizes = u32::try_from(sizes.len()).map_err(|_| {
                Error::invalid(format!("GraphOptions::buckets: {} sizes", sizes.len()))
            })?;
        }
        Ok(COptions {
            raw: o,
            _dim: dim,
            _sizes: sizes,
        })
    }
}

/// Statistics of a model's CUDA graphs (`wharf_graph_stats`), from [`Model::graph_stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphStats {
    /// Graphs held, one per input shape per concurrent set.
    pub num_buckets: u32,
    /// Graphs captured.
    pub captures: u64,
    /// Shapes whose capture failed (they run eagerly).
    pub capture_failures: u64,
    /// Runs served by a graph.
    pub replays: u64,
    /// Replays that re-pointed nodes (their binding differed).
    pub repoints: u64,
    /// Node parameter updates, in total.
    pub nodes_repointed: u64,
    /// Runs executed eagerly while graphs were enabled.
    pub eager_runs: u64,
    /// Generations whose constants were folded for the graphs.
    pub folds: u64,
    /// The graph pools: static inputs, outputs, intermediates (memory tag "graph").
    pub pool_bytes: u64,
    /// Folded constants held for live generations.
    pub folded_bytes: u64,
    /// Host time binding replays that re-pointed nodes, in total, nanoseconds.
    pub repoint_ns: u64,
    /// Host time binding replays that did not (the bases compared), nanoseconds.
    pub bind_check_ns: u64,
    /// Host time folding the constants of new generations, nanoseconds.
    pub fold_ns: u64,
    /// Why the last eager run was not replayed (`""` if none; truncated to 255 bytes).
    pub last_eager_reason: String,
    /// Replays whose inputs were padded to a larger bucket.
    pub padded_replays: u64,
    /// The dimension padded to buckets (`""` for exact shapes).
    pub bucket_dim: String,
    /// Its number of bucket sizes.
    pub num_bucket_sizes: u32,
    /// Host time of replays in total, nanoseconds, by phase (their binding is in
    /// `repoint_ns` and `bind_check_ns`; divide by `replays` for a replay's breakdown):
    /// choosing the graph (the lock, the check that the caller is not capturing the stream,
    /// the bucket, the set and the graph; replays that captured a graph are left out).
    /// Since 0.3 (experimental).
    pub select_ns: u64,
    /// Ordering after the set's previous run (an event query, or a wait), nanoseconds.
    /// Since 0.3 (experimental).
    pub wait_ns: u64,
    /// The inputs (host inputs packed and copied, the gather's parameters), nanoseconds.
    /// Since 0.3 (experimental).
    pub inputs_ns: u64,
    /// `cudaGraphLaunch`, nanoseconds. Since 0.3 (experimental).
    pub launch_ns: u64,
    /// Handing out the outputs, nanoseconds. Since 0.3 (experimental).
    pub outputs_ns: u64,
    /// Releasing the set when the run ends (in [`Run::end`](crate::Run::end)), nanoseconds.
    /// Since 0.3 (experimental).
    pub release_ns: u64,
    /// Folds of new generations' constants done by replays (on the serving path: a
    /// generation no update prepared). Since 0.3 (experimental).
    pub replay_folds: u64,
    /// Folds done by updates: an update that stages a generation folds its constants and
    /// points a spare graph of each bucket at it before it returns. Since 0.3 (experimental).
    pub prepare_folds: u64,
    /// Replays that found their graph pointed at their binding by an update (no node set;
    /// not in `repoints`). Since 0.3 (experimental).
    pub prepointed_replays: u64,
    /// Generations prepared for by updates. Since 0.3 (experimental).
    pub prepares: u64,
    /// Preparations that failed (the first replay then folds and re-points). Since 0.3
    /// (experimental).
    pub prepare_failures: u64,
    /// Host time of the preparations in total, nanoseconds (on the updaters' threads).
    /// Since 0.3 (experimental).
    pub prepare_ns: u64,
}

/// One captured graph (`wharf_graph_bucket_info`), from [`Model::graph_bucket`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphBucket {
    /// Its concurrent set (`0 .. max_concurrent_runs`).
    pub set: u32,
    /// Pool memory its capture added (memory tag "graph").
    pub pool_bytes: u64,
    /// Nodes of the graph.
    pub nodes: u64,
    /// Nodes with a parameter pointing at constants, state or folded constants.
    pub patched_nodes: u64,
    /// Such parameter words.
    pub patches: u64,
    /// Fold, warm-up, capture and instantiation, milliseconds.
    pub capture_ms: f64,
    /// The inputs' dtypes and shapes, e.g. `"I64[1, 1], I64[1]"` (truncated to 127 bytes).
    pub shapes: String,
    /// Its size along the bucket dimension (-1: an exact shape).
    pub bucket_size: i64,
    /// `capture_ms` in parts, milliseconds: the instance, binding and fold.
    pub bind_fold_ms: f64,
    /// The static inputs and the warm-up run.
    pub warmup_ms: f64,
    /// The captured run.
    pub capture_run_ms: f64,
    /// Reading the nodes and building the patch plan.
    pub scan_ms: f64,
    /// Instantiation.
    pub instantiate_ms: f64,
}

/// A char array the library NUL-terminates, never read past its length.
fn fixed_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl GraphStats {
    pub(crate) fn from_c(s: &sys::wharf_graph_stats) -> GraphStats {
        GraphStats {
            num_buckets: s.num_buckets,
            captures: s.captures,
            capture_failures: s.capture_failures,
            replays: s.replays,
            repoints: s.repoints,
            nodes_repointed: s.nodes_repointed,
            eager_runs: s.eager_runs,
            folds: s.folds,
            pool_bytes: s.pool_bytes,
            folded_bytes: s.folded_bytes,
            repoint_ns: s.repoint_ns,
            bind_check_ns: s.bind_check_ns,
            fold_ns: s.fold_ns,
            last_eager_reason: fixed_string(&s.last_eager_reason),
            padded_replays: s.padded_replays,
            bucket_dim: fixed_string(&s.bucket_dim),
            num_bucket_sizes: s.num_bucket_sizes,
            select_ns: s.select_ns,
            wait_ns: s.wait_ns,
            inputs_ns: s.inputs_ns,
            launch_ns: s.launch_ns,
            outputs_ns: s.outputs_ns,
            release_ns: s.release_ns,
            replay_folds: s.replay_folds,
            prepare_folds: s.prepare_folds,
            prepointed_replays: s.prepointed_replays,
            prepares: s.prepares,
            prepare_failures: s.prepare_failures,
            prepare_ns: s.prepare_ns,
        }
    }
}

impl GraphBucket {
    pub(crate) fn from_c(b: &sys::wharf_graph_bucket_info) -> GraphBucket {
        GraphBucket {
            set: b.set,
            pool_bytes: b.pool_bytes,
            nodes: b.nodes,
            patched_nodes: b.patched_nodes,
            patches: b.patches,
            capture_ms: b.capture_ms,
            shapes: fixed_string(&b.shapes),
            bucket_size: b.bucket_size,
            bind_fold_ms: b.bind_fold_ms,
            warmup_ms: b.warmup_ms,
            capture_run_ms: b.capture_run_ms,
            scan_ms: b.scan_ms,
            instantiate_ms: b.instantiate_ms,
        }
    }
}

/// The C calls on a raw model pointer (NULL reaches the library's argument checks, which
/// the tests exercise without a GPU).
///
/// # Safety
///
/// `model` is NULL or a live model.
unsafe fn enable_graphs(model: *mut sys::wharf_model, opts: &GraphOptions) -> Result<()> {
    let o = opts.to_c()?;
    // SAFETY: (caller) model; `o` (and the memory its pointers name) is read during the call only.
    unsafe { Error::check(sys::wharf_model_enable_graphs(model, &o.raw)) }
}

/// # Safety
///
/// `model` is NULL or a live model.
unsafe fn graph_stats(model: *const sys::wharf_model) -> Result<GraphStats> {
    // SAFETY: all-zero is a valid struct to be overwritten.
    let mut s = unsafe { std::mem::zeroed::<sys::wharf_graph_stats>() };
    s.struct_size = std::mem::size_of::<sys::wharf_graph_stats>() as u32;
    // SAFETY: (caller) model; a writable struct of the size it states.
    unsafe { Error::check(sys::wharf_model_get_graph_stats(model, &mut s))? };
    Ok(GraphStats::from_c(&s))
}

/// # Safety
///
/// `model` is NULL or a live model.
unsafe fn graph_bucket(model: *const sys::wharf_model, index: u32) -> Result<GraphBucket> {
    // SAFETY: all-zero is a valid struct to be overwritten.
    let mut b = unsafe { std::mem::zeroed::<sys::wharf_graph_bucket_info>() };
    b.struct_size = std::mem::size_of::<sys::wharf_graph_bucket_info>() as u32;
    // SAFETY: (caller) model; a writable struct of the size it states.
    unsafe { Error::check(sys::wharf_model_get_graph_bucket(model, index, &mut b))? };
    Ok(GraphBucket::from_c(&b))
}

impl Model {
    /// Makes the model's runs replay CUDA graphs (`wharf_model_enable_graphs`; see
    /// docs/decisions.md, "CUDA graphs"): from this call on, [`Model::run`] captures a graph
    /// the first time it sees a shape of the inputs and replays it for every later run of
    /// that shape, re-pointed (never recaptured) after a swap, an update or for another
    /// session. Outputs of a replayed run are the graph's static buffers, borrowed from the
    /// run like every output. Whatever cannot be captured runs eagerly and says why in
    /// [`graph_stats`](Self::graph_stats).
    ///
    /// With buckets ([`GraphOptions::buckets`], or the default set of a package method's
    /// dimension) runs are padded to the smallest bucket that fits.
    ///
    /// A model with offloaded layers replays too (its layers' copies are graph nodes that
    /// follow swaps); a capture finding its offloader held by another run is put off.
    ///
    /// Errors: `Unsupported` (a model or shim library without the entry points capture
    /// needs, a CUDA driver older than 12.4; named),
    /// `FailedPrecondition` (graphs already enabled), `InvalidArgument` (a bucket dimension
    /// the model does not declare, a size < 1, past its max or given twice, sizes with
    /// exact shapes; named).
    pub fn enable_graphs(&self, opts: &GraphOptions) -> Result<()> {
        // SAFETY: a live model (thread-safe in C).
        unsafe { enable_graphs(self.as_raw(), opts) }
    }

    /// The statistics of the model's CUDA graphs. Errors: `FailedPrecondition` (graphs not
    /// enabled).
    pub fn graph_stats(&self) -> Result<GraphStats> {
        // SAFETY: a live model.
        unsafe { graph_stats(self.as_raw()) }
    }

    /// Graph `index` of the model, in capture order (`0 .. graph_stats()?.num_buckets`).
    /// Errors: `FailedPrecondition` (graphs not enabled), `InvalidArgument` (`index` past
    /// the last graph).
    pub fn graph_bucket(&self, index: u32) -> Result<GraphBucket> {
        // SAFETY: a live model.
        unsafe { graph_bucket(self.as_raw(), index) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn options_reach_the_c_struct() {
        let c = GraphOptions::new().to_c().unwrap();
        let o = c.raw;
        assert_eq!(
            o.struct_size as usize,
            std::mem::size_of::<sys::wharf_graph_options>()
        );
        assert_eq!(
            (o.max_buckets, o.max_pool_bytes, o.max_concurrent_runs),
            (0, 0, 0)
        );
        assert!(o.bucket_dim.is_null() && o.bucket_sizes.is_null());
        assert_eq!((o.num_bucket_sizes, o.exact_shapes), (0, 0));
        let c = GraphOptions::new()
            .max_buckets(3)
            .max_pool_bytes(1 << 40)
            .max_concurrent_runs(2)
            .buckets(Some("T"), &[16, 8, 1 << 40])
            .to_c()
            .unwrap();
        let o = c.raw;
        assert_eq!(
            (o.max_buckets, o.max_pool_bytes, o.max_concurrent_runs),
            (3, 1 << 40, 2)
        );
        // SAFETY: the pointers name memory `c` keeps.
        let (dim, sizes) = unsafe {
            (
                std::ffi::CStr::from_ptr(o.bucket_dim).to_str().unwrap(),
                std::slice::from_raw_parts(o.bucket_sizes, o.num_bucket_sizes as usize),
            )
        };
        assert_eq!(
            (dim, sizes, o.exact_shapes),
            ("T", &[16, 8, 1 << 40][..], 0)
        );
        let o = GraphOptions::new().exact_shapes(true).to_c().unwrap().raw;
        assert_eq!((o.exact_shapes, o.num_bucket_sizes), (1, 0));
        assert!(o.bucket_dim.is_null());
        let nul = GraphOptions::new().buckets(Some("T\0"), &[8]).to_c();
        assert_eq!(nul.err().map(|e| e.code()), Some(Code::InvalidArgument));
    }

    #[test]
    fn stats_and_buckets_convert_every_field() {
        // SAFETY: all-zero is a valid struct.
        let mut s = unsafe { std::mem::zeroed::<sys::wharf_graph_stats>() };
        s.num_buckets = 2;
        (s.captures, s.capture_failures, s.replays, s.repoints) = (3, 4, 5, 6);
        (s.nodes_repointed, s.eager_runs, s.folds, s.pool_bytes) = (7, 8, 9, 10);
        (s.folded_bytes, s.repoint_ns, s.bind_check_ns, s.fold_ns) = (11, 12, 13, 1 << 40);
        let reason = "shape I64[1, 9] past max_buckets";
        for (d, b) in s.last_eager_reason.iter_mut().zip(reason.bytes()) {
            *d = b as c_char;
        }
        (s.padded_replays, s.num_bucket_sizes) = (14, 4);
        (s.select_ns, s.wait_ns, s.inputs_ns) = (15, 16, 17);
        (s.launch_ns, s.outputs_ns, s.release_ns) = (18, 19, 1 << 41);
        (s.replay_folds, s.prepare_folds, s.prepointed_replays) = (20, 21, 22);
        (s.prepares, s.prepare_failures, s.prepare_ns) = (23, 24, 1 << 42);
        s.bucket_dim[0] = b'N' as c_char;
        let got = GraphStats::from_c(&s);
        assert_eq!(
            got,
            GraphStats {
                num_buckets: 2,
                captures: 3,
                capture_failures: 4,
                replays: 5,
                repoints: 6,
                nodes_repointed: 7,
                eager_runs: 8,
                folds: 9,
                pool_bytes: 10,
                folded_bytes: 11,
                repoint_ns: 12,
                bind_check_ns: 13,
                fold_ns: 1 << 40,
                last_eager_reason: reason.to_string(),
                padded_replays: 14,
                bucket_dim: "N".to_string(),
                num_bucket_sizes: 4,
                select_ns: 15,
                wait_ns: 16,
                inputs_ns: 17,
                launch_ns: 18,
                outputs_ns: 19,
                release_ns: 1 << 41,
                replay_folds: 20,
                prepare_folds: 21,
                prepointed_replays: 22,
                prepares: 23,
                prepare_failures: 24,
                prepare_ns: 1 << 42,
            }
        );

        // SAFETY: all-zero is a valid struct.
        let mut b = unsafe { std::mem::zeroed::<sys::wharf_graph_bucket_info>() };
        (b.set, b.pool_bytes, b.nodes, b.patched_nodes, b.patches) = (1, 4096, 120, 30, 45);
        b.capture_ms = 2.5;
        b.shapes = [b'x' as c_char; 128]; // no NUL: the whole array, never past it
        b.bucket_size = -1;
        (b.bind_fold_ms, b.warmup_ms, b.capture_run_ms) = (0.5, 1.5, 2.5);
        (b.scan_ms, b.instantiate_ms) = (3.5, 4.5);
        let got = GraphBucket::from_c(&b);
        assert_eq!(
            (
                got.set,
                got.pool_bytes,
                got.nodes,
                got.patched_nodes,
                got.patches
            ),
            (1, 4096, 120, 30, 45)
        );
        assert_eq!(got.capture_ms, 2.5);
        assert_eq!(got.shapes, "x".repeat(128));
        assert_eq!(got.bucket_size, -1);
        assert_eq!(
            (
                got.bind_fold_ms,
                got.warmup_ms,
                got.capture_run_ms,
                got.scan_ms,
                got.instantiate_ms
            ),
            (0.5, 1.5, 2.5, 3.5, 4.5)
        );
    }

    #[test]
    fn the_library_refuses_a_null_model() {
        // SAFETY: NULL is allowed (the library checks it).
        unsafe {
            for err in [
                enable_graphs(std::ptr::null_mut(), &GraphOptions::new()).unwrap_err(),
                graph_stats(std::ptr::null()).unwrap_err(),
                graph_bucket(std::ptr::null(), 0).unwrap_err(),
            ] {
                assert_eq!(err.code(), Code::InvalidArgument, "{err}");
                assert!(err.message().contains("NULL"), "{err}");
            }
            let err = enable_graphs(std::ptr::null_mut(), &GraphOptions::new()).unwrap_err();
            assert!(err.message().contains("wharf_model_enable_graphs"), "{err}");
        }
    }
}
