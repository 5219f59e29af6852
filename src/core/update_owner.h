/* SPDX-License-Identifier: Apache-2.0 */
// UpdateOwner: the thread inside an object's update. A weight store's and a replica group's
// update run their members' fold callbacks on the calling thread while holding the object's
// own lock; a call on that object from inside a fold would wait for that lock forever. The
// object marks the thread for the update's duration (Scope) and answers such a call
// FAILED_PRECONDITION (check) instead.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "core/status.h"

namespace wharf {

class UpdateOwner {
 public:
  // FAILED_PRECONDITION when the calling thread is inside the update: `call` is what was
  // called ("replica group swap"), `object` what is busy ("replica group").
  Status check(const std::string& call, const char* object) const {
    if (owner_.load() != std::this_thread::get_id()) return Status::Ok();
    return FailedPrecondition(call + ": called from inside this " + object +
                              "'s update (a fold callback); it is busy with that update on this thread");
  }

  // Marks the calling thread as the one inside the update for the scope.
  class Scope {
   public:
    explicit Scope(UpdateOwner& o) : o_(o) { o_.owner_.store(std::this_thread::get_id()); }
    ~Scope() { o_.owner_.store(std::thread::id()); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    UpdateOwner& o_;
  };

 private:
  std::atomic<std::thread::id> owner_{};  // no thread's id outside an update
};

}  // namespace wharf
