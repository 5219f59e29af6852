/* SPDX-License-Identifier: Apache-2.0 */
// The transfer engine's switches from the environment, applied when a runtime makes its engine
// (Runtime::transfers). They exist for A/B measurements (docs/performance.md says what each
// measured; docs/environment.md lists them):
//
//   WHARF_TRANSFER_CHUNK_KIB        staging chunk (TransferOptions::chunk_bytes; at most half the ring)
//   WHARF_TRANSFER_BLOCK_KIB        most one DMA from the ring carries (block_bytes)
//   WHARF_TRANSFER_RAMP             0/1: smaller first fills (ramp_start; default 1)
//   WHARF_TRANSFER_ALLOC_AHEAD_MIB  allocate staged destinations this far ahead (alloc_ahead_bytes)
//   WHARF_STAGING_COPY              memcpy/stream: how the ring is filled (staging_copy)
//   WHARF_SERVING_*                 the serving policy (ServingPolicy::from_env, device/serving.h)
//
// core/env.h's rule: unset or empty keeps the default; a malformed or out-of-range value is
// INVALID_ARGUMENT naming the variable (so a typo in an A/B run cannot measure the default).
#pragma once

#include "core/status.h"
#include "device/transfer.h"

namespace wharf {

// Overrides the fields of `*t` the environment sets; on error `*t` is unchanged.
Status apply_transfer_env(TransferOptions* t);

}  // namespace wharf
