// SPDX-License-Identifier: Apache-2.0
#include "device/transfer_env.h"

#include <algorithm>

#include "core/env.h"
#include "device/dma_copy.h"

namespace wharf {

Status apply_transfer_env(TransferOptions* t) {
  constexpr uint64_t kMaxKiB = 1ull << 30;  // 1 TiB: a bound, not a suggestion
  std::optional<uint64_t> chunk_kib, block_kib, ahead_mib;
  std::optional<bool> ramp;
  std::optional<std::string> copy;
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_TRANSFER_CHUNK_KIB", 1, kMaxKiB, "KiB", &chunk_kib));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_TRANSFER_BLOCK_KIB", 1, kMaxKiB, "KiB", &block_kib));
  WHARF_RETURN_IF_ERROR(env_switch("WHARF_TRANSFER_RAMP", &ramp));
  WHARF_RETURN_IF_ERROR(env_uint("WHARF_TRANSFER_ALLOC_AHEAD_MIB", 0, kMaxKiB >> 10, "MiB", &ahead_mib));
  WHARF_RETURN_IF_ERROR(env_choice("WHARF_STAGING_COPY", {"memcpy", "stream"}, &copy));
  ServingPolicy serving;
  WHARF_RETURN_IF_ERROR(ServingPolicy::from_env(&serving));

  TransferOptions o = *t;
  if (chunk_kib) o.chunk_bytes = std::min<uint64_t>(*chunk_kib << 10, o.staging_bytes / 2);
  if (block_kib) o.block_bytes = *block_kib << 10;
  if (ramp) o.ramp_start = *ramp;
  if (ahead_mib) o.alloc_ahead_bytes = *ahead_mib << 20;
  if (copy) o.staging_copy = parse_staging_copy(*copy);  // one of the two: env_choice checked it
  if (!o.serving_policy) o.serving_policy = serving;
  *t = o;
  return Status::Ok();
}

}  // namespace wharf
