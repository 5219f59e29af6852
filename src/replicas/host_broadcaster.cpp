// SPDX-License-Identifier: Apache-2.0
// The host broadcaster: replica 0's buffers copied into the others on the receiving
// replicas' streams (host backend replicas; their memory is host memory every stream reads).
#include <utility>

#include "replicas/broadcaster.h"

namespace wharf {
namespace {

class HostBroadcaster final : public Broadcaster {
 public:
  explicit HostBroadcaster(std::vector<std::shared_ptr<Runtime>> replicas) : replicas_(std::move(replicas)) {}
  const char* kind() const override { return "host"; }

  Status enqueue(const std::vector<BroadcastBuffer>& buffers) override {
    // Every receiving replica's stream copies in parallel with the others.
    for (size_t r = 1; r < replicas_.size(); ++r)
      for (const BroadcastBuffer& b : buffers) {
        if (b.bytes == 0) continue;
        WHARF_RETURN_IF_ERROR(replicas_[r]
                                  ->stream()
                                  .copy_async(b.ptrs[r], b.ptrs[0], b.bytes)
                                  .with_context("replica " + std::to_string(r) + ": broadcast copy"));
      }
    return Status::Ok();
  }

  Status finish() override {
    Status first;
    for (size_t r = 1; r < replicas_.size(); ++r) {
      Status st = replicas_[r]->stream().synchronize();
      if (!st.ok() && first.ok())
        first = st.with_context("replica " + std::to_string(r) + ": waiting for the broadcast");
    }
    return first;
  }

 private:
  std::vector<std::shared_ptr<Runtime>> replicas_;
};

}  // namespace

std::unique_ptr<Broadcaster> make_host_broadcaster(std::vector<std::shared_ptr<Runtime>> replicas) {
  return std::make_unique<HostBroadcaster>(std::move(replicas));
}

}  // namespace wharf
