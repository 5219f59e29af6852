// WeightStore: one copy of each weight shared by the containers that declare it.
//
// The store keys weights by FQN and checks the whole declaration (dtype, shape, placement)
// on every join, so equal names with different metadata are an error, never an alias. It
// holds storage weakly: a weight lives while some container generation or unfinished run
// holds its slot, and the store only remembers where it is so a joining container can take
// it instead of copying.
//
// Locking: `mu_` guards the entries and member lists and is never held while a container's
// lock is taken or a container may be destroyed (member references are copied out first).
// Order when both are needed: store `update_mu_`, then container update locks (try-lock),
// then container `mu_`s in address order.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
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
  Status join(Container* c, const std::string& name, const std::vector<ConstantDecl>& decls);
  void leave(Container* c);
  // The live storage of `fqn`, or null.
  std::shared_ptr<Slot> find_slot(const std::string& fqn) const;
  // Records `slot` as the storage of `fqn` when the store holds none alive.
  void offer_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot);

  Status update(const ConstantMap& map, const UpdateOptions& opts);
  Status swap();
  WeightStoreStats stats() const;
  Runtime& runtime() { return *runtime_; }

 private:
  struct Entry {
    ConstantDecl decl;
    std::string declared_by;              // the first container's name, for messages
    std::vector<Container*> users;        // containers that declare it
    std::weak_ptr<Slot> slot;             // current shared storage
  };
  struct Member {
    Container* raw;
    std::weak_ptr<Container> weak;
  };

  std::vector<std::shared_ptr<Container>> live_members_locked() const;

  std::shared_ptr<Runtime> runtime_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::vector<Member> members_;
  // Staged by the last update, published by swap.
  std::vector<std::weak_ptr<Container>> staged_;
  std::vector<std::pair<std::string, std::weak_ptr<Slot>>> pending_slots_;
  std::mutex update_mu_;  // one store update or swap at a time
};

}  // namespace wharf
