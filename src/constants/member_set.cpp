// SPDX-License-Identifier: Apache-2.0
#include "constants/member_set.h"

#include "core/text.h"

namespace wharf {

std::vector<Mutex*> MemberSet::mutexes() const {
  std::vector<Mutex*> mus;
  mus.reserve(members_.size());
  for (const auto& c : members_) mus.push_back(&c->mu_);
  return mus;
}

Status MemberSet::admit(const std::function<std::string(size_t)>& busy, Admission* out) const {
  Admission a;
  for (size_t i = 0; i < members_.size(); ++i) {
    std::unique_lock<std::mutex> ul(members_[i]->update_mu_, std::try_to_lock);
    if (!ul.owns_lock()) return Busy(busy(i));  // `a` releases what was taken
    a.locks_.push_back(std::move(ul));
    // A replica is written only through its group (a weight store update reaching a grouped
    // store member would stage one replica behind the group's back).
    const Container& c = *members_[i];
    MutexLock lock(c.mu_);
    if (c.replica_group_)
      return FailedPrecondition("container " + quote_name(c.name()) + " is already replica " +
                                std::to_string(c.replica_index_) +
                                " of another replica group: a grouped container and its weight store are written only "
                                "through that group (wharf_replica_group_*); free the group first");
  }
  *out = std::move(a);
  return Status::Ok();
}

MemberSet::Base MemberSet::base(size_t i, DeadList* dead) const {
  Container& c = *members_[i];
  MutexLock lock(c.mu_);
  c.reap_locked(true, dead);
  return Base{c.next_generation_locked(), c.version_};
}

Status MemberSet::stage_all(std::vector<Write>* writes, Staging how, const std::string& what, DeadList* dead) const {
  WHARF_DCHECK(writes->size() == members_.size(), "one write per member");
  std::vector<std::shared_ptr<Generation>> staged(members_.size());
  WHARF_RETURN_IF_ERROR(stage_all_locked(writes, how, what, dead, &staged));
  // Outside every lock: the members' listeners prepare for what was staged.
  for (size_t i = 0; i < members_.size(); ++i) members_[i]->notify_staged(staged[i]);
  return Status::Ok();
}

Status MemberSet::stage_all_locked(std::vector<Write>* writes, Staging how, const std::string& what, DeadList* dead,
                                   std::vector<std::shared_ptr<Generation>>* staged) const {
  LockSet locks(mutexes());
  if (how == Staging::kLockstep)
    for (size_t i = 0; i < members_.size(); ++i) {
      const Container& c = *members_[i];
      const Container& first = *members_[0];
      locks.holds(c.mu_);
      locks.holds(first.mu_);
      WHARF_DCHECK(c.version_ == (*writes)[i].base_version, "lockstep members change only through the set's calls");
      WHARF_DCHECK(c.staged_ == first.staged_, "lockstep members are staged in step");
      (void)c;
      (void)first;
    }
  // Check every member before staging any: all or nothing.
  for (size_t i = 0; i < members_.size(); ++i) {
    Container& c = *members_[i];
    locks.holds(c.mu_);
    if (c.version_ != (*writes)[i].base_version && (*writes)[i].folded)
      return Busy(what + ": container " + quote_name(c.name()) +
                  " swapped or freed its inactive generation during the update, and its derived constants were "
                  "computed from the previous base; nothing was staged anywhere: retry the update");
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    Container& c = *members_[i];
    Write& w = (*writes)[i];
    locks.holds(c.mu_);
    if (c.version_ != w.base_version) {
      // A swap (rollback) or free_inactive ran meanwhile: the write goes over the current
      // base, the outcome of the write ordered after that call.
      std::shared_ptr<Generation> rebased = c.next_generation_locked();
      for (auto& s : w.written) rebased->slots[size_t(s.first)] = s.second;
      w.gen = std::move(rebased);
    }
    (*staged)[i] = w.gen;
    c.stage_locked(std::move(w.gen), dead);
    if (how == Staging::kStore) c.store_pending_ = true;
    c.check_invariants_locked();
  }
  return Status::Ok();
}

Status MemberSet::swap_all(bool by_store, const std::function<std::string(size_t)>& refused,
                           const std::function<void()>& then, DeadList* dead) const {
  LockSet locks(mutexes());
  for (size_t i = 0; i < members_.size(); ++i) {
    Container& c = *members_[i];
    locks.holds(c.mu_);
    WHARF_DCHECK(!by_store || c.store_pending_,
                 "a member staged by the store keeps its store update until the store swap");
    WHARF_RETURN_IF_ERROR(c.check_swap_locked(by_store).with_context(refused(i)));
  }
  for (const auto& p : members_) {
    Container& c = *p;
    locks.holds(c.mu_);
    c.swap_locked(dead);
  }
  if (then) then();
  return Status::Ok();
}

void MemberSet::drop_inactive_all(DeadList* dead) const {
  LockSet locks(mutexes());
  for (const auto& p : members_) {
    Container& c = *p;
    locks.holds(c.mu_);
    c.drop_inactive_locked(dead);
  }
}

Status MemberSet::join_group(const void* group, const std::function<std::string(size_t)>& name,
                             const std::function<size_t(size_t)>& replica) const {
  LockSet locks(mutexes());
  for (size_t i = 0; i < members_.size(); ++i) {
    const Container& c = *members_[i];
    locks.holds(c.mu_);
    if (c.replica_group_)
      return FailedPrecondition("replica group: container " + quote_name(c.name()) + " is already replica " +
                                std::to_string(c.replica_index_) + " of another replica group (free that group first)");
    if (c.staged_)
      return FailedPrecondition("replica group: " + name(i) +
                                " has an update staged and not swapped; swap it or free its inactive generation "
                                "before grouping (the replicas must start in step)");
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    Container& c = *members_[i];
    locks.holds(c.mu_);
    c.replica_group_ = group;
    c.replica_index_ = replica ? replica(i) : i;
  }
  return Status::Ok();
}

void MemberSet::leave_group(const void* group) const {
  for (const auto& p : members_) {
    if (!p) continue;
    MutexLock lock(p->mu_);
    if (p->replica_group_ == group) p->replica_group_ = nullptr;
  }
}

std::shared_ptr<Slot> MemberSet::active_slot_locked(const LockSet& locks, size_t i, int index) const {
  const Container& c = *members_[i];
  locks.holds(c.mu_);
  return c.active_ ? c.active_->slots[size_t(index)] : nullptr;
}

std::shared_ptr<Slot> MemberSet::Locked::active_slot(size_t i, int index) const {
  return set_.active_slot_locked(locks_, i, index);
}

void MemberSet::with_locks(const std::function<void(const Locked&)>& fn) const {
  LockSet locks(mutexes());
  fn(Locked(*this, locks));
}

}  // namespace wharf
