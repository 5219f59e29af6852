/* SPDX-License-Identifier: Apache-2.0 */
// Declared buckets of a symbolic dimension, and the padding a run of another size gets.
//
// A model package's method names its dynamic dimensions in the manifest (`dims`: prefill's
// T on input_ids [1, T] and cache_position [T]; decode_batch's N on input_ids [N, 1],
// cache_position [N] and slots [N]). With buckets declared for one of them (or the default,
// powers of two up to the manifest's max), a run of size n replays the graph of the smallest
// bucket b >= n: every input with the dimension is padded to b by repeating its last row
// (last token, last position, last slot), and every output with it is handed out as a view
// of its first n rows. Outputs without it (prefill's last-position logits) are the padded
// run's, which equal the real last row's.
//
// Why that is sound, and the rule a method must satisfy to be padded: a repeated row is the
// real last row again (same token, same position, same slot), so (1) each row's writes must
// be keyed by the row's own position/slot (a repeated row writes the same values to the same
// place), and (2) rows must be independent apart from what they read through those writes
// (attention over the cache up to the row's position, its slot's rows): the repeated row
// then attends exactly as the real last row, and the real rows see nothing of it. The
// exporter's prefill (index_copy at cache_position, each row's causal mask at its own
// cache_position, marked `"pad": "repeat"` in the manifest), decode and decode_batch
// (index_put at [slot, position], attention over the slot's filled length) satisfy it.
// Whether the padded rows' arithmetic equals an unpadded run bit for bit depends on the
// kernels (a GEMM may pick another algorithm for another row count); the GPU tests check it
// for the committed package.
//
// Host code only (the unit tests drive it); graphs/model_graphs.cpp applies it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graphs/gather.h"

namespace wharf {

// A symbolic dimension of a model's inputs and outputs (a package manifest's `dims` entry).
struct SymbolicDim {
  std::string name;
  int64_t min = 0;   // 0: none declared
  int64_t max = -1;  // -1: none declared
  // Per input / output: the dimension of this name, -1 where it has none, -2 where it names it
  // more than once (such a dimension cannot be padded row by row).
  std::vector<int> inputs, outputs;
  // Rows along this dimension are independent and keyed by their own inputs, so repeating the
  // last row changes nothing the real rows compute or write: a batched method's session
  // dimension (each row its own slot and position), or a dimension the package's manifest
  // marks `"pad": "repeat"` (the exporter's prefill T, whose rows' attention masks are at
  // their own cache_position). Only such a dimension is padded. Packages exported before that
  // (each row's mask at its place in the chunk) do not mark their prefill's T: padded, its
  // last row's logits changed (measured on the H100), so they are refused.
  bool rows_independent = false;
  // Padded by default (the default set when nothing is declared): a batched method's session
  // dimension, whose size changes every few steps of a serving loop and is launch-bound. A
  // prefill's T is padded only to sizes declared for it: a long prefill is compute-bound, and
  // padding it to the next power of two costs up to its work again.
  bool padded_by_default = false;
  // Why a dimension that is not rows_independent may not be padded (the loader's words, naming
  // the manifest field; empty: the general reason).
  std::string pad_refusal;
};

// The bucket declaration of a model's graphs, resolved.
struct BucketSpec {
  std::string dim;                   // the dimension's name; empty: exact shapes only
  std::vector<int> inputs, outputs;  // as SymbolicDim
  std::vector<int64_t> sizes;        // ascending, distinct, >= 1
  bool defaulted = false;            // the default set (none declared)

  bool enabled() const { return !sizes.empty(); }
};

// Powers of two from the smallest >= max(min, 1) up to max, and max itself when it is not
// one (decode_batch N in 1..8: 1, 2, 4, 8; prefill T in 1..1000: 1, 2, 4, ..., 512, 1000).
// Empty when max < 1.
std::vector<int64_t> default_bucket_sizes(int64_t min, int64_t max);

// Resolves a declaration against the model's dimensions. `dim` empty with `sizes` empty: the
// default set for the model's only dimension that has a max and is padded by default (none:
// exact shapes); `dim` empty with sizes: the model's only paddable dimension. `exact`: no
// buckets. UNSUPPORTED for a named dimension that is not rows_independent (its pad_refusal).
// INVALID_ARGUMENT naming `model` and the value at fault: an unknown dimension, one named
// twice by an input (or absent from every input), a size < 1 or past the dimension's max, a
// repeated size, sizes with a model of no or several dimensions and no name, more than
// kMaxGatherInputs inputs.
Status resolve_buckets(const std::string& model, const std::vector<SymbolicDim>& dims, size_t num_inputs,
                       const std::string& dim, const std::vector<int64_t>& sizes, bool exact, BucketSpec* out);

// The index in spec.sizes of the smallest bucket >= n, or -1 when n is past the largest.
int choose_bucket(const std::vector<int64_t>& sizes, int64_t n);

// The run's size along the spec's dimension: that of the first input having it; every other
// input having it must agree, and it must be >= 1 (else FAILED_PRECONDITION saying which, and
// the run executes eagerly). *n = -1 when no input has it (a model whose inputs are not
// dynamic there).
// (Inputs are TensorMetas or anything with a `meta`, as ModelTensor.)
Status run_size_error(const BucketSpec& spec, size_t first, size_t i, int64_t n, int64_t v, int rank);
inline const TensorMeta& meta_of(const TensorMeta& m) { return m; }
template <class T>
const TensorMeta& meta_of(const T& t) {
  return t.meta;
}
template <class T>
Status run_size(const BucketSpec& spec, const std::vector<T>& inputs, int64_t* n) {
  *n = -1;
  size_t first = 0;
  for (size_t i = 0; i < inputs.size() && i < spec.inputs.size(); ++i) {
    const int k = spec.inputs[i];
    if (k < 0) continue;
    const std::vector<int64_t>& shape = meta_of(inputs[i]).shape;
    if (size_t(k) >= shape.size()) return run_size_error(spec, first, i, *n, -1, int(shape.size()));
    const int64_t v = shape[size_t(k)];
    if (*n < 0) {
      first = i;
      if (v < 1) return run_size_error(spec, i, i, -1, v, -1);
      *n = v;
    } else if (v != *n) {
      return run_size_error(spec, first, i, *n, v, -1);
    }
  }
  return Status::Ok();
}

// Input i's dtype and shape in bucket `b` (the spec's dimension set to b), contiguous.
TensorMeta bucket_meta(const BucketSpec& spec, size_t i, const TensorMeta& real, int64_t b);

// How the gather copies input i (contiguous, `real`'s shape, padded to the bucket's `b`):
// src/dst left null (the caller sets them), unit 1 byte (the caller narrows it with
// gather_narrow); row_units 0 when a row is not whole bytes (sub-byte dtypes: not padded).
GatherInput gather_geometry(const BucketSpec& spec, size_t i, const TensorMeta& real, int64_t b);

// Output j's view for a run of size n out of the bucket's static output `bucket` (contiguous,
// with the bucket size at the dimension): shape n there, the bucket's row-major strides (a
// view of the real rows; the same tensor when n is the bucket's size or j has no dimension).
TensorMeta output_view(const BucketSpec& spec, size_t j, const TensorMeta& bucket, int64_t n);

// A host reference of the gather kernel (the unit tests compare with it; the same index math).
void gather_host(const GatherInput& g);

}  // namespace wharf
