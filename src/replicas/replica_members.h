/* SPDX-License-Identifier: Apache-2.0 */
// ReplicaMembers: the containers one replica of a group stands for (a replica of a group in
// one process, or one rank's replica of a group spanning processes), and the weights a group
// update writes there. Both kinds of group build their next generations through it.
//
// The weight-store rule: a grouped container that belongs to a weight store brings its whole
// store. The replica is every member of that store (the grouped container first, then the
// others in the order they joined), and a group update writes the store's weights, as
// wharf_weight_store_update would: one fresh storage per weight (FQN) per replica, shared by
// every member that declares it; the members that declare a written weight fold their
// derived constants (each on its own device); the group publishes every member of every
// replica at once and points each store's entries at the new storage, so a container that
// joins the store afterwards shares it. A container joining a grouped store is not in the
// group: it starts from the weights the store serves when it joins, group updates do not
// reach it, and it is updated on its own. (Refusing group updates while such a container
// lives was tried: a freed container outlives its handle while any run or internal snapshot
// holds it, so group updates failed spuriously after the caller had freed it.)
// A container without a store is a replica of one member, its weights its own constants.
//
// Derived constants: after the sources (or a broadcast) filled a replica's fresh storage,
// fold() runs the update's fold callback over each affected member's next generation, on that
// member's device and stream; a failure there fails the update before anything is staged.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
#include "constants/member_set.h"
#include "constants/weight_store.h"
#include "core/progress.h"

namespace wharf {

class ReplicaMembers {
 public:
  // The members `c` stands for (see above). `who` names the replica in messages.
  static ReplicaMembers of(std::shared_ptr<Container> c, std::string who);
  ReplicaMembers() = default;

  const std::vector<std::shared_ptr<Container>>& containers() const { return containers_; }
  const std::shared_ptr<WeightStore>& store() const { return store_; }
  const std::string& who() const { return who_; }
  Container& first() const { return *containers_[0]; }

  // A weight: one non-derived FQN of the members, and where each member declares it.
  struct Use {
    size_t member;
    int index;
  };
  struct Weight {
    const ConstantDecl* decl;  // the first member's declaration (a store checks they agree)
    std::vector<Use> uses;
  };
  const std::vector<Weight>& weights() const { return weights_; }
  int find(const std::string& fqn) const;  // the weight's index, or -1

  // INVALID_ARGUMENT naming the first difference from `first` (member count, a member's
  // constants or states); `name(m)` names member m of this replica, `first_name(m)` of `first`.
  Status check_alike(const ReplicaMembers& first, const std::function<std::string(size_t)>& name,
                     const std::function<std::string(size_t)>& first_name) const;
  // A hash of every member's declarations, in order (ranks compare it when they join).
  uint64_t fingerprint() const;

  // One written weight and its source.
  struct Planned {
    size_t weight;
    const MapEntry* entry;
  };
  // Checks `map` against the weights (names, derived constants, sources, require_full, and a
  // fold callback for members with derived constants that a written weight reaches).
  Status validate(const ConstantMap& map, const UpdateOptions& opts, std::vector<Planned>* plan) const;

  // The next generation of every member, built from its base (`writes[m]`).
  using Writes = std::vector<MemberSet::Write>;
  // Reads `batch`'s sources into fresh storage of this replica (through each weight's first
  // user, so pageable sources go through the staging ring), allocating while earlier copies
  // run; (*slots)[k] is batch[k]'s storage. `progress` is told base + the bytes done.
  Status read_sources(const std::vector<Planned>& batch, Writes* writes, const std::vector<Event*>& wait_for,
                      Progress* progress, uint64_t base, std::vector<std::shared_ptr<Slot>>* slots) const;
  // Fresh storage for weight `w` on this replica's runtime.
  Status allocate(size_t w, std::shared_ptr<Slot>* out) const;
  // Puts `slot` as weight w's storage into every member that declares it.
  void assign(Writes* writes, size_t w, const std::shared_ptr<Slot>& slot) const;
  // Runs the fold over every member that declares one of `written` (weight indices) and has
  // derived constants; `complete`: also FAILED_PRECONDITION for a member whose next generation
  // would lack a constant (a group that publishes at once cannot let the swap refuse it).
  Status fold(Writes* writes, const std::vector<size_t>& written, const UpdateOptions& opts, bool complete) const;
  // The storage each written weight now has, for the store's entries at the publish.
  void remember(const std::vector<size_t>& written, const std::vector<std::shared_ptr<Slot>>& slots);
  // Points the store's entries at what remember() kept (call under the members' locks, in
  // MemberSet::swap_all's `then`), and forgets it. No store: nothing to do.
  void publish_entries();
  void forget_entries() { pending_.clear(); }

 private:
  std::string who_;
  std::vector<std::shared_ptr<Container>> containers_;
  std::shared_ptr<WeightStore> store_;
  std::vector<Weight> weights_;
  std::unordered_map<std::string, size_t> index_;
  // Written weights' storage since the last publish (FQN -> storage): the store's next entries.
  std::vector<std::pair<std::string, std::weak_ptr<Slot>>> pending_;
};

}  // namespace wharf
