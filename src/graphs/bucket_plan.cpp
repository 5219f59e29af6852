// SPDX-License-Identifier: Apache-2.0
#include "graphs/bucket_plan.h"

#include <algorithm>
#include <cstring>

#include "core/text.h"

namespace wharf {

std::vector<int64_t> default_bucket_sizes(int64_t min, int64_t max) {
  std::vector<int64_t> out;
  if (max < 1) return out;
  const int64_t lo = std::max<int64_t>(min, 1);
  int64_t p = 1;
  while (p < lo) p *= 2;
  for (; p <= max; p *= 2) {
    out.push_back(p);
    if (p > max / 2) break;  // the next would pass max (and never overflows)
  }
  if (out.empty() || out.back() != max) out.push_back(max);
  return out;
}

namespace {

bool paddable(const SymbolicDim& d) {
  bool any = false;
  for (int k : d.inputs) {
    if (k == -2) return false;
    any = any || k >= 0;
  }
  for (int k : d.outputs)
    if (k == -2) return false;
  return any;
}

}  // namespace

Status resolve_buckets(const std::string& model, const std::vector<SymbolicDim>& dims, size_t num_inputs,
                       const std::string& dim, const std::vector<int64_t>& sizes, bool exact, BucketSpec* out) {
  *out = BucketSpec();
  const std::string who = "model " + quote_name(model) + ": graph buckets: ";
  if (exact) {
    if (!dim.empty() || !sizes.empty())
      return InvalidArgument(who + "exact shapes were asked for together with bucket sizes");
    return Status::Ok();
  }
  const SymbolicDim* d = nullptr;
  if (!dim.empty()) {
    for (const SymbolicDim& x : dims)
      if (x.name == dim) d = &x;
    if (!d) {
      std::string names;
      for (const SymbolicDim& x : dims) names += (names.empty() ? "" : ", ") + quote_name(x.name);
      return InvalidArgument(who + "the model has no dimension " + quote_name(dim) +
                             (names.empty() ? std::string(" (it declares none)") : " (it declares " + names + ")"));
    }
    if (!paddable(*d))
      return InvalidArgument(who + "dimension " + quote_name(dim) +
                             " cannot be padded row by row (an input or output names it twice, or no input has it)");
    if (!d->rows_independent)
      return Unsupported(who + "dimension " + quote_name(dim) + " may not be padded: " +
                         (d->pad_refusal.empty()
                              ? std::string("it is neither a batched method's session dimension nor marked "
                                            "\"pad\": \"repeat\" in its package's manifest, so repeating its last "
                                            "row is not known to leave the real rows' results unchanged; declare "
                                            "exact shapes")
                              : d->pad_refusal));
  } else {
    // Sizes without a name: the model's only dimension that may be padded. Nothing declared:
    // the only one padded by default, with a max.
    std::vector<const SymbolicDim*> cands;
    for (const SymbolicDim& x : dims)
      if (paddable(x) && x.rows_independent && (!sizes.empty() || (x.padded_by_default && x.max >= 1)))
        cands.push_back(&x);
    if (cands.size() != 1) {
      if (sizes.empty()) return Status::Ok();  // no default: exact shapes
      return InvalidArgument(who + std::to_string(sizes.size()) +
                             " sizes given without a dimension name, and the model has " +
                             std::to_string(cands.size()) + " dimensions that may be padded (name one)");
    }
    d = cands[0];
  }
  if (num_inputs > kMaxGatherInputs)
    return InvalidArgument(who + "the model has " + std::to_string(num_inputs) + " inputs; padding handles at most " +
                           std::to_string(kMaxGatherInputs));
  std::vector<int64_t> s = sizes;
  if (s.empty()) {
    s = default_bucket_sizes(d->min, d->max);
    out->defaulted = true;
    if (s.empty()) return Status::Ok();
  }
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] < 1)
      return InvalidArgument(who + "size " + std::to_string(s[i]) + " of " + quote_name(d->name) + " is < 1");
    if (i && s[i] == s[i - 1])
      return InvalidArgument(who + "size " + std::to_string(s[i]) + " of " + quote_name(d->name) + " is given twice");
    if (s[i] > UINT32_MAX || (d->max >= 0 && s[i] > d->max))
      return InvalidArgument(who + "size " + std::to_string(s[i]) + " of " + quote_name(d->name) +
                             " is past the dimension's max " +
                             std::to_string(d->max >= 0 ? d->max : int64_t(UINT32_MAX)));
  }
  out->dim = d->name;
  out->inputs = d->inputs;
  out->outputs = d->outputs;
  out->inputs.resize(num_inputs, -1);
  out->sizes = std::move(s);
  return Status::Ok();
}

int choose_bucket(const std::vector<int64_t>& sizes, int64_t n) {
  auto it = std::lower_bound(sizes.begin(), sizes.end(), n);
  return it == sizes.end() ? -1 : int(it - sizes.begin());
}

Status run_size_error(const BucketSpec& spec, size_t first, size_t i, int64_t n, int64_t v, int rank) {
  const std::string dim = quote_name(spec.dim);
  if (rank >= 0)
    return FailedPrecondition("input " + std::to_string(i) + " has " + std::to_string(rank) + " dimensions, not " +
                              "dimension " + std::to_string(spec.inputs[i]) + " (" + dim + ")");
  if (n < 0)
    return FailedPrecondition("input " + std::to_string(i) + " has " + dim + " = " + std::to_string(v) +
                              " (no last row to repeat)");
  return FailedPrecondition("inputs " + std::to_string(first) + " and " + std::to_string(i) + " disagree on " + dim +
                            " (" + std::to_string(n) + " and " + std::to_string(v) + ")");
}

TensorMeta bucket_meta(const BucketSpec& spec, size_t i, const TensorMeta& real, int64_t b) {
  TensorMeta m;
  m.dtype = real.dtype;
  m.shape = real.shape;
  const int k = i < spec.inputs.size() ? spec.inputs[i] : -1;
  if (k >= 0 && size_t(k) < m.shape.size()) m.shape[size_t(k)] = b;
  return m;
}

GatherInput gather_geometry(const BucketSpec& spec, size_t i, const TensorMeta& real, int64_t b) {
  GatherInput g;
  const int k = i < spec.inputs.size() ? spec.inputs[i] : -1;
  const uint64_t elem_bits = dtype_bits(real.dtype);
  if (k < 0 || size_t(k) >= real.shape.size()) {
    g.row_units = real.nbytes();
    return g;
  }
  uint64_t outer = 1, inner = 1;
  for (size_t d = 0; d < real.shape.size(); ++d) {
    if (int(d) < k) outer *= uint64_t(real.shape[d]);
    if (int(d) > k) inner *= uint64_t(real.shape[d]);
  }
  g.outer = outer;
  g.row_units = (inner * elem_bits) % 8 ? 0 : inner * elem_bits / 8;  // 0: rows not whole bytes
  g.rows = uint32_t(real.shape[size_t(k)]);
  g.bucket_rows = uint32_t(b);
  return g;
}

TensorMeta output_view(const BucketSpec& spec, size_t j, const TensorMeta& bucket, int64_t n) {
  TensorMeta m = bucket;
  const int k = j < spec.outputs.size() ? spec.outputs[j] : -1;
  if (k < 0 || size_t(k) >= m.shape.size() || m.shape[size_t(k)] == n) return m;
  m.strides = bucket.strides.empty() ? bucket.contiguous_strides() : bucket.strides;
  m.shape[size_t(k)] = n;
  return m;
}

void gather_host(const GatherInput& g) {
  const uint64_t n = gather_dst_units(g);
  const char* src = static_cast<const char*>(g.src);
  char* dst = static_cast<char*>(g.dst);
  for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * g.unit, src + gather_src_unit(g, i) * g.unit, g.unit);
}

}  // namespace wharf
