/* SPDX-License-Identifier: Apache-2.0 */
// WeightStore: one copy of each weight shared by the containers that declare it.
//
// The store keys weights by FQN and checks the whole declaration (dtype, shape, placement)
// on every join, so equal names with different metadata are an error, never an alias. It
// holds storage weakly: a weight lives while some container generation or unfinished run
// holds its slot, and the store only remembers where it is so a joining container can take
// it instead of copying. It hands out only storage that some member serves (its active
// generation holds it): storage kept alive only by a rollback generation is stale.
//
// Locking (docs/concurrency.md): `mu_` guards the entries, the member list and what is
// staged; it is a leaf lock (nothing else is taken while it is held, and no container may
// be destroyed under it: member references are copied out first). `update_mu_` serialises
// store updates and swaps. Order when several are needed: store `update_mu_`, then member
// `update_mu_`s (try-lock: BUSY, never a wait), then member `mu_`s in address order, then
// store `mu_`. Multi-member staging and publishing go through MemberSet
// (src/constants/member_set.h); a store swap moves its entries under the members' locks, so
// no reader sees the members swapped and the entries not. A store call made from inside a store update's fold callback
// (same thread) fails with FAILED_PRECONDITION instead of deadlocking.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
#include "core/update_owner.h"
#include "core/sync.h"
#include "device/runtime.h"

namespace wharf {

struct WeightStoreStats {
  uint64_t unique_constants = 0, unique_bytes = 0, references = 0, saved_bytes = 0;
};

class WeightStore : public std::enable_shared_from_this<WeightStore> {
 public:
  explicit WeightStore(std::shared_ptr<Runtime> runtime) : runtime_(std::move(runtime)) {}

  // Registers a container's non-derived constants; all or nothing. INVALID_ARGUMENT names
  // both declarations when one disagrees with the store's under the same FQN.
  Status join(Container* c, const std::string& name, const std::vector<ConstantDecl>& decls) WHARF_EXCLUDES(mu_);
  void leave(Container* c) WHARF_EXCLUDES(mu_);
  // For each of `fqns`, the storage another member's active generation serves, or null;
  // all read at one instant (under every member's lock), so the slots come from one store
  // version. Called by a member loading constants it has never held.
  void served_slots(const Container* requester, const std::vector<std::string>& fqns,
                    std::vector<std::shared_ptr<Slot>>* out) const WHARF_EXCLUDES(mu_);
  // Records `slot` as the storage of `fqn` when the store holds none that a member serves.
  void offer_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) WHARF_EXCLUDES(mu_);
  // Whether `slot` is the storage the store would hand out for `fqn`.
  bool is_entry_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) const WHARF_EXCLUDES(mu_);

  // An update names each weight by its FQN, or by another name of it given here (a tied
  // weight's checkpoint name, e.g. a model package's weights.aliases: alias -> FQN). Naming a
  // weight by both in one update is INVALID_ARGUMENT.
  void set_aliases(const std::vector<std::pair<std::string, std::string>>& aliases) WHARF_EXCLUDES(mu_);
  Status update(const ConstantMap& map, const UpdateOptions& opts) WHARF_EXCLUDES(mu_);
  Status swap() WHARF_EXCLUDES(mu_);
  WeightStoreStats stats() const WHARF_EXCLUDES(mu_);
  Runtime& runtime() { return *runtime_; }
  // Replica groups (src/replicas/replica_members.h) group a member with its whole store: the
  // live members in the order they joined, and the store's entry for `fqn` pointed at the
  // storage a group swap published (called under the members' `mu_`s: the documented order).
  std::vector<std::shared_ptr<Container>> members() const WHARF_EXCLUDES(mu_);
  void set_entry_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) WHARF_EXCLUDES(mu_);
  // For tests: how many containers a store update has staged and the store swap would publish.
  size_t staged_members_for_test() const WHARF_EXCLUDES(mu_);

 private:
  struct Entry {
    ConstantDecl decl;
    std::string declared_by;        // the first container's name, for messages
    std::vector<Container*> users;  // containers that declare it
    std::weak_ptr<Slot> slot;       // current shared storage
  };
  struct Member {
    Container* raw;
    std::weak_ptr<Container> weak;
  };

  std::vector<std::shared_ptr<Container>> live_members_locked() const WHARF_REQUIRES(mu_);
  // Whether a member other than `except` serves `slot` as constant `fqn` in its active generation.
  static bool served_by(const std::vector<std::shared_ptr<Container>>& members, const std::string& fqn,
                        const std::shared_ptr<Slot>& slot, const Container* except);
  // FAILED_PRECONDITION when the calling thread is inside this store's update (a fold).
  Status update_serialised(const ConstantMap& map, const UpdateOptions& opts) WHARF_EXCLUDES(mu_);
  // `map` with every alias renamed to its FQN, in *out; *out stays null when none is used.
  Status resolve_aliases(const ConstantMap& map, std::unique_ptr<ConstantMap>* out) const WHARF_EXCLUDES(mu_);
  Status swap_serialised() WHARF_EXCLUDES(mu_);

  std::shared_ptr<Runtime> runtime_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ WHARF_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::string> aliases_ WHARF_GUARDED_BY(mu_);  // alias -> FQN
  std::vector<Member> members_ WHARF_GUARDED_BY(mu_);
  // Staged by updates since the last swap, published by swap (each container once; freed
  // ones are pruned at every update).
  std::vector<std::weak_ptr<Container>> staged_ WHARF_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::weak_ptr<Slot>>> pending_slots_ WHARF_GUARDED_BY(mu_);
  std::mutex update_mu_;  // one store update or swap at a time
  // The thread holding update_mu_ (re-entrancy check); default id when none.
  UpdateOwner owner_;  // the thread inside update or swap (a fold callback's calls are refused)
};

}  // namespace wharf
