/* SPDX-License-Identifier: Apache-2.0 */
// MemberSet: several containers written and published as one: a weight store's members
// (src/constants/weight_store.h) and a replica group's replicas (src/replicas/). It is the
// one home of multi-container staging, and the only code outside Container that takes a
// container's `mu_`:
// - admission: every member's writer lock (`update_mu_`, try-lock, BUSY naming the member),
//   held for the whole write so no member update interleaves with it;
// - base snapshots: the generation each member's write builds on, and its version;
// - a lock set over every member's `mu_` (address order: docs/concurrency.md), inside which
//   the members are staged, checked, swapped or freed together, so a run begun on any member
//   after the call sees all of it and one begun before sees none of it;
// - the rebase rule: a member that swapped, rolled back or freed its inactive generation
//   since its base gets the write over its current base (as if the write had run after that
//   call), or BUSY when derived constants were folded from the old base.
// Clang's thread-safety analysis stays on everywhere here: the lock set asserts each
// member's `mu_` (checked in DCHECK builds) before a *_locked call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "constants/container.h"
#include "core/status.h"
#include "core/sync.h"

namespace wharf {

class MemberSet {
 public:
  // `members`: distinct containers (callers check for duplicates and nulls).
  explicit MemberSet(std::vector<std::shared_ptr<Container>> members) : members_(std::move(members)) {}
  MemberSet() = default;

  size_t size() const { return members_.size(); }
  Container& operator[](size_t i) const { return *members_[i]; }
  const std::vector<std::shared_ptr<Container>>& members() const { return members_; }

  // Every member's writer lock, held until this object goes.
  class Admission {
   public:
    Admission() = default;
    Admission(Admission&&) = default;
    Admission& operator=(Admission&&) = default;

   private:
    friend class MemberSet;
    std::vector<std::unique_lock<std::mutex>> locks_;
  };
  // Admits this write on every member, or none: BUSY with `busy(i)`'s message for the first
  // member already being written (another update, bind, fold, or group/store call);
  // FAILED_PRECONDITION for a member of a replica group (written only through the group).
  Status admit(const std::function<std::string(size_t)>& busy, Admission* out) const;

  struct Base {
    std::shared_ptr<Generation> gen;  // the staged generation, else a copy of the active one
    uint64_t version = 0;
  };
  // Member i's base (finished runs reaped into *dead, to be destroyed after every lock).
  Base base(size_t i, DeadList* dead) const;

  // What a write gives member i: a generation built from its base, and the slots it wrote.
  struct Write {
    std::shared_ptr<Generation> gen;
    uint64_t base_version = 0;
    // (constant index, fresh slot): what a rebase puts over the member's current base
    // (Staging::kStore only; lockstep members never move, so they leave it empty).
    std::vector<std::pair<int, std::shared_ptr<Slot>>> written;
    bool folded = false;  // derived constants were computed from the base: cannot be rebased
  };
  // How stage_all treats the members.
  enum class Staging {
    kStore,     // store members: each may have moved on its own (rebase rule); the staged
                // generations await the store swap (a member's own swap is refused)
    kLockstep,  // replicas: members change only through this set's calls (checked)
  };
  // Stages writes[i] on member i, all under every member's lock. BUSY (nothing staged
  // anywhere) when a folded write's member moved; `what` prefixes it. Then, outside the
  // locks, each member's listeners are told (Container::notify_staged).
  Status stage_all(std::vector<Write>* writes, Staging how, const std::string& what, DeadList* dead) const;

  // Swaps every member at once after checking that each can swap (all or nothing); a
  // failure is wrapped by `refused(i)`. `by_store`: the weight store publishing its update.
  // `then` runs under the same locks after the swap (the store updates its entries there, so
  // nobody sees the members swapped and the entries not).
  Status swap_all(bool by_store, const std::function<std::string(size_t)>& refused, const std::function<void()>& then,
                  DeadList* dead) const;
  // Drops every member's inactive generation (a replica group's free_inactive).
  void drop_inactive_all(DeadList* dead) const;

  // Replica groups: marks every member as replica `replica(i)` (default i) of `group` (each
  // then refuses writes of its own); FAILED_PRECONDITION, with nothing marked, when a member is
  // in a group already or has an update staged (the replicas must start in step). `name(i)`
  // names member i. (A replica of several members: a grouped weight store's containers.)
  Status join_group(const void* group, const std::function<std::string(size_t)>& name,
                    const std::function<size_t(size_t)>& replica = nullptr) const;
  // Clears the marks `group` set (one member at a time; a no-op for members it never marked).
  void leave_group(const void* group) const;

  // Every member's `mu_` held at once (address order), for reads that must be one instant's
  // across members: a weight store hands a joining container storage from one store
  // version, never a mix, by reading its entries and the members' active slots in here.
  class Locked {
   public:
    // Member i's active storage of constant `index` (null: no active generation).
    std::shared_ptr<Slot> active_slot(size_t i, int index) const;

   private:
    friend class MemberSet;
    Locked(const MemberSet& set, const LockSet& locks) : set_(set), locks_(locks) {}
    const MemberSet& set_;
    const LockSet& locks_;
  };
  void with_locks(const std::function<void(const Locked&)>& fn) const;

 private:
  std::vector<Mutex*> mutexes() const;
  // stage_all under every member's lock; *staged: what each member staged.
  Status stage_all_locked(std::vector<Write>* writes, Staging how, const std::string& what, DeadList* dead,
                          std::vector<std::shared_ptr<Generation>>* staged) const;
  std::shared_ptr<Slot> active_slot_locked(const LockSet& locks, size_t i, int index) const;

  std::vector<std::shared_ptr<Container>> members_;
};

}  // namespace wharf
