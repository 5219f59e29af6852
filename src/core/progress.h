/* SPDX-License-Identifier: Apache-2.0 */
// Progress reporting and cancellation of a long call (wharf_progress_fn in wharf.h): the
// caller's callback, the call's total, and when it is called. Lives on the calling thread
// (the transfer engine reports to it from there), so it needs no lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "core/status.h"

namespace wharf {

// The caller's callback: bytes done and total; false cancels.
using ProgressFn = std::function<bool(uint64_t done, uint64_t total)>;

class Progress {
 public:
  // How often the callback is called at most (the contract promises at least every 64 MiB).
  static constexpr uint64_t kInterval = 16ull << 20;

  Progress() = default;  // no callback: report() is free and never cancels
  // `what` names the call in the cancellation message ("container 'm': update").
  Progress(ProgressFn fn, uint64_t total, std::string what)
      : fn_(std::move(fn)), total_(total), what_(std::move(what)) {}

  bool enabled() const { return bool(fn_); }
  uint64_t total() const { return total_; }

  // `done` bytes of the whole call are copied: calls the callback when `done` passed the
  // next mark (every kInterval bytes), or always when `final` (then done must be total).
  // CANCELLED when the callback cancels, and from then on.
  Status report(uint64_t done, bool final = false) {
    if (!fn_) return Status::Ok();
    if (cancelled_) return cancelled_status(done_);
    if (!final && done < next_) return Status::Ok();
    done_ = done > total_ ? total_ : done;
    next_ = done_ + kInterval;
    if (!fn_(done_, total_)) {
      cancelled_ = true;
      return cancelled_status(done_);
    }
    return Status::Ok();
  }
  // The final report: every byte is in place, nothing is published yet.
  Status finish() { return report(total_, true); }

 private:
  Status cancelled_status(uint64_t done) const {
    return Cancelled(what_ + ": cancelled by the progress callback after " + std::to_string(done) + " of " +
                     std::to_string(total_) + " bytes; nothing was changed");
  }

  ProgressFn fn_;
  uint64_t total_ = 0;
  std::string what_;
  uint64_t done_ = 0;
  uint64_t next_ = kInterval;
  bool cancelled_ = false;
};

}  // namespace wharf
