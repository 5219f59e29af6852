/* SPDX-License-Identifier: Apache-2.0 */
// Slots and generations: the storage model of a container's constants.
//
// A Slot is one constant's storage (owned memory, a range of a slab shared with other
// constants of the same update, or caller memory with a release callback). A Generation is
// one complete set of slots, one per declared constant, shared by pointer: a new generation
// starts as a copy of the slot pointers of another (no memory) and an update replaces only
// the slots it writes (copy-on-write). Runs hold their generation until their completion
// event fires, so a slot dies only when no generation and no unfinished run references it
// (and a slab when none of its slots is left).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "device/device.h"

namespace wharf {

class Slot {
 public:
  explicit Slot(Buffer buffer) : buffer_(std::move(buffer)), data_(buffer_.data()) {}
  // `offset` bytes into `slab`, which goes back to its device when its last slot goes.
  Slot(std::shared_ptr<const Buffer> slab, uint64_t offset)
      : slab_(std::move(slab)), data_(static_cast<char*>(slab_->data()) + offset) {}
  Slot(void* user_data, std::function<void()> release) : data_(user_data), release_(std::move(release)) {}
  ~Slot() {
    if (release_) release_();
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  void* data() const { return data_; }
  bool user_managed() const { return !buffer_ && !slab_ && data_ != nullptr; }

 private:
  Buffer buffer_;
  std::shared_ptr<const Buffer> slab_;
  void* data_ = nullptr;
  std::function<void()> release_;
};

struct Generation {
  std::vector<std::shared_ptr<Slot>> slots;  // by declaration index; null = never written
  // Both guarded by the owning container's mutex (set when published; runs counted there).
  uint64_t id = 0;    // set when it becomes active
  int open_runs = 0;  // runs begun and not yet ended
  // Only while a fold callback runs over this generation (before it is staged): the
  // constants the fold may write, by index: derived ones and those this update gave fresh
  // storage. Every other slot is shared with the active generation or a weight store, and
  // open runs read it. Empty otherwise.
  std::vector<bool> fold_writable;
};

}  // namespace wharf
