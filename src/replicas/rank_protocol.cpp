// SPDX-License-Identifier: Apache-2.0
#include "replicas/rank_protocol.h"

#include <cstring>

namespace wharf {
namespace {

template <typename T>
void put(std::vector<unsigned char>* out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);  // little-endian hosts only (x86-64, aarch64): checked below
  out->insert(out->end(), b, b + sizeof b);
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the rank protocol is little-endian");

}  // namespace

std::vector<unsigned char> encode_rank_plan(const std::vector<RankPlanEntry>& entries) {
  std::vector<unsigned char> out;
  for (const RankPlanEntry& e : entries) {
    put<uint64_t>(&out, e.nbytes);
    put<uint32_t>(&out, uint32_t(e.dtype));
    put<uint32_t>(&out, uint32_t(e.shape.size()));
    for (int64_t d : e.shape) put<int64_t>(&out, d);
    put<uint32_t>(&out, uint32_t(e.fqn.size()));
    out.insert(out.end(), e.fqn.begin(), e.fqn.end());
    out.resize((out.size() + 7) / 8 * 8, 0);
  }
  return out;
}

Status decode_rank_plan(const unsigned char* bytes, uint64_t size, uint32_t count, std::vector<RankPlanEntry>* out) {
  out->clear();
  uint64_t at = 0;
  auto bad = [&](const std::string& why) {
    return DataCorrupt("replica group: rank 0's plan is malformed at byte " + std::to_string(at) + " of " +
                       std::to_string(size) + " (" + why + "; the ranks are out of step, or rank 0 is not Wharf's)");
  };
  auto take = [&](void* dst, uint64_t n) {
    if (size - at < n) return false;
    std::memcpy(dst, bytes + at, size_t(n));
    at += n;
    return true;
  };
  for (uint32_t k = 0; k < count; ++k) {
    RankPlanEntry e;
    uint32_t dtype = 0, ndim = 0, name = 0;
    if (!take(&e.nbytes, 8) || !take(&dtype, 4) || !take(&ndim, 4)) return bad("entry " + std::to_string(k));
    if (ndim > 64) return bad("entry " + std::to_string(k) + " has " + std::to_string(ndim) + " dimensions");
    e.dtype = DType(int(dtype));
    e.shape.resize(ndim);
    for (uint32_t d = 0; d < ndim; ++d)
      if (!take(&e.shape[d], 8)) return bad("entry " + std::to_string(k) + "'s shape");
    if (!take(&name, 4) || size - at < name) return bad("entry " + std::to_string(k) + "'s name");
    e.fqn.assign(reinterpret_cast<const char*>(bytes + at), name);
    at += name;
    const uint64_t padded = (at + 7) / 8 * 8;
    if (padded > size) return bad("entry " + std::to_string(k) + "'s padding");
    at = padded;
    out->push_back(std::move(e));
  }
  if (at != size) return bad(std::to_string(size - at) + " bytes after the last entry");
  return Status::Ok();
}

}  // namespace wharf
