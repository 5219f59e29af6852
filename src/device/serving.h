/* SPDX-License-Identifier: Apache-2.0 */
// Serving while updating (issue 26): whether runs are being served on a device right now, and
// how an update's copies give way to them meanwhile.
//
// A decode step makes small copies (its token in, its logits out) on the same copy engines an
// update streams gigabytes through. A copy engine works through one copy at a time, so a
// step's copy can wait behind the update's: a 16 MiB staging block takes ~0.3 ms at the H100's
// ~55 GB/s, and with several blocks queued on the update's stream the wait grows (measured:
// decode p99 4.8x idle while 8 GiB updates streamed). While runs are served, the transfer
// engine therefore (1) splits its copies into pieces of at most `dma_bytes`, so a run's copy
// waits for at most one piece, (2) keeps at most `inflight_bytes` of them queued on its
// stream, so the engine's channel drains between pieces instead of holding the copy engine,
// (3) waits for the copy engine by polling instead of spinning, and optionally (4) fills the
// staging ring with fewer host threads, leaving cores to the serving threads. Outside serving nothing changes
// (update_bench measures that path).
//
// "Serving" = a run began on the device within the last `window_ms` (Container::acquire notes
// each run). The signal is process-wide per CUDA device: the copy engines belong to the GPU,
// whichever runtime's runs use it.
//
// The policy's values come from the environment when a runtime makes its transfer engine (A/B
// switches for bench/serve_update_bench; docs/performance.md): WHARF_SERVING_DMA_KIB (0: no split),
// WHARF_SERVING_INFLIGHT_KIB (0: no limit), WHARF_SERVING_COPY_THREADS (0: all),
// WHARF_SERVING_POLL_US (0: spin), WHARF_SERVING_WINDOW_MS (0: never serving, i.e. the
// behaviour before issue 26).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace wharf {

struct ServingPolicy {
  uint64_t dma_bytes = 1ull << 20;       // the most one copy carries while serving; 0: no split
  uint64_t inflight_bytes = 4ull << 20;  // the most queued on the copy stream; 0: no limit
  uint32_t copy_threads = 0;             // staging threads while serving; 0: all of them
  uint64_t window_ms = 0;                // a run within this long means serving; 0: never (default, measured)
  // How the engine's threads wait for the copy engine while serving: polling the event every
  // this many microseconds, sleeping in between, instead of CUDA's spin (by default a waiting
  // thread spins on a core, and a dozen staging threads spinning take the cores the serving
  // threads need); 0: spin.
  uint64_t poll_us = 20;

  // The defaults above, overridden by the environment variables named at the top (core/env.h's
  // rule: a malformed or out-of-range value is INVALID_ARGUMENT naming it; *out is unchanged).
  static Status from_env(ServingPolicy* out);
};

class ServingSignal {
 public:
  // The signal of CUDA device `index` (one per device in the process).
  static std::shared_ptr<ServingSignal> for_cuda_device(int index);

  // A run began now. Cheap enough for every run: one clock read, and a store only when the
  // last one is older than a millisecond (no cache-line ping-pong between serving threads).
  void note_run() noexcept;
  // Whether a run began within the last `window_ms` (0: false).
  bool active(uint64_t window_ms) const noexcept;

 private:
  std::atomic<int64_t> last_ns_{0};  // steady clock; 0: never
};

}  // namespace wharf
