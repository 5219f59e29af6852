#include "constants/weight_store.h"

#include <algorithm>

#include "device/transfer.h"

namespace wharf {
namespace {

const char* placement_name(Placement p) { return p == Placement::kHost ? "host" : "device"; }

std::string describe(const ConstantDecl& d) {
  return std::string(dtype_name(d.dtype)) + " " + shape_string(d.shape) + " " + placement_name(d.placement);
}

}  // namespace

Status WeightStore::join(Container* c, const std::string& name, const std::vector<ConstantDecl>& decls) {
  std::lock_guard<std::mutex> lock(mu_);
  // Check everything first: a refused container leaves no trace in the store.
  for (const ConstantDecl& d : decls) {
    if (d.derived()) continue;  // computed per container: never shared
    auto it = entries_.find(d.fqn);
    if (it == entries_.end()) continue;
    const ConstantDecl& e = it->second.decl;
    if (e.dtype != d.dtype || e.shape != d.shape || e.placement != d.placement)
      return InvalidArgument("weight store: constant '" + d.fqn + "' of container '" + name + "' is declared " +
                             describe(d) + ", but container '" + it->second.declared_by + "' declared it " +
                             describe(e) + " in the same store; a shared FQN must name one weight");
  }
  for (const ConstantDecl& d : decls) {
    if (d.derived()) continue;
    auto it = entries_.find(d.fqn);
    if (it == entries_.end()) it = entries_.emplace(d.fqn, Entry{d, name, {}, {}}).first;
    it->second.users.push_back(c);
  }
  members_.push_back({c, c->weak_from_this()});
  return Status::Ok();
}

void WeightStore::leave(Container* c) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto& u = it->second.users;
    u.erase(std::remove(u.begin(), u.end(), c), u.end());
    // No container declares it any more: a later one may declare the FQN differently.
    it = u.empty() ? entries_.erase(it) : std::next(it);
  }
  members_.erase(std::remove_if(members_.begin(), members_.end(), [c](const Member& m) { return m.raw == c; }),
                 members_.end());
}

std::shared_ptr<Slot> WeightStore::find_slot(const std::string& fqn) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(fqn);
  return it == entries_.end() ? nullptr : it->second.slot.lock();
}

void WeightStore::offer_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(fqn);
  if (it != entries_.end() && it->second.slot.expired()) it->second.slot = slot;
}

std::vector<std::shared_ptr<Container>> WeightStore::live_members_locked() const {
  std::vector<std::shared_ptr<Container>> out;
  for (const Member& m : members_)
    if (auto c = m.weak.lock()) out.push_back(std::move(c));
  return out;
}

Status WeightStore::update(const ConstantMap& map, const UpdateOptions& opts) {
  if (opts.in_place)
    return Unsupported("weight store update: only the inactive target is supported (update a container in place instead)");
  std::lock_guard<std::mutex> serial(update_mu_);
  // 1. Validate every entry against the store's declaration; find who declares what.
  std::vector<ConstantDecl> decls;
  std::vector<std::shared_ptr<Container>> members;  // released after mu_ (see the header)
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < map.size(); ++i) {
      const MapEntry& e = map.entry(i);
      auto it = entries_.find(e.fqn);
      if (it == entries_.end())
        return NotFound("weight store update: constant '" + e.fqn + "' is not declared by any container of the store");
      decls.push_back(it->second.decl);
    }
    members = live_members_locked();
    if (opts.require_full)
      for (const auto& kv : entries_)
        if (!map.find(kv.first))
          return InvalidArgument("weight store update: require_full: the map has no constant '" + kv.first +
                                 "' (" + std::to_string(map.size()) + " of the store's " +
                                 std::to_string(entries_.size()) + " constants given)");
  }
  for (size_t i = 0; i < map.size(); ++i)
    WHARF_RETURN_IF_ERROR(validate_constant_source(*runtime_, decls[i], map.entry(i).meta, map.entry(i).data)
                              .with_context("weight store update"));

  // 2. The containers affected, each with its update lock held for the whole call.
  struct Target {
    std::shared_ptr<Container> c;
    std::unique_lock<std::mutex> lock;
    std::vector<std::pair<int, size_t>> writes;  // (constant index, map entry)
    std::shared_ptr<Generation> gen;
  };
  std::vector<Target> targets;
  for (auto& c : members) {
    std::vector<std::pair<int, size_t>> writes;
    for (size_t i = 0; i < map.size(); ++i) {
      int idx = c->find(map.entry(i).fqn);
      if (idx >= 0 && !c->decls_[idx].derived()) writes.emplace_back(idx, i);
    }
    if (writes.empty()) continue;
    if (c->has_derived_ && !opts.fold)
      return InvalidArgument("weight store update: container '" + c->name() +
                             "' declares derived constants; the update needs a fold callback to recompute them");
    std::unique_lock<std::mutex> ul(c->update_mu_, std::try_to_lock);
    if (!ul.owns_lock()) return Busy("weight store update: container '" + c->name() + "' is being updated");
    targets.push_back(Target{c, std::move(ul), std::move(writes), nullptr});
  }

  // 3. One slot and one copy per FQN.
  std::vector<std::shared_ptr<Slot>> slots(map.size());
  std::vector<CopyRequest> reqs;
  for (size_t i = 0; i < map.size(); ++i) {
    WHARF_RETURN_IF_ERROR(allocate_constant_slot(*runtime_, decls[i], &slots[i]));
    reqs.push_back({slots[i]->data(), map.entry(i).data, decls[i].nbytes});
  }
  TransferEngine* engine = nullptr;
  WHARF_RETURN_IF_ERROR(runtime_->transfers(&engine));
  WHARF_RETURN_IF_ERROR(engine->copy(reqs, {}).with_context("weight store update: copying " +
                                                            std::to_string(map.size()) + " constants"));

  // 4. Build every container's next generation; publish only when all are built.
  DeadList dead;
  for (Target& t : targets) {
    {
      std::lock_guard<std::mutex> lock(t.c->mu_);
      t.c->reap_locked(true, &dead);
      t.gen = t.c->next_generation_locked();
    }
    for (auto& w : t.writes) t.gen->slots[w.first] = slots[w.second];
    WHARF_RETURN_IF_ERROR(t.c->fold_into(t.gen, opts).with_context("weight store update: container '" + t.c->name() + "'"));
  }
  for (Target& t : targets) {
    std::lock_guard<std::mutex> lock(t.c->mu_);
    t.c->stage_locked(std::move(t.gen), &dead);
  }
  // Updates accumulate until the swap: add to what earlier updates staged.
  std::lock_guard<std::mutex> lock(mu_);
  for (Target& t : targets) {
    bool known = false;
    for (auto& w : staged_) known |= w.lock() == t.c;
    if (!known) staged_.push_back(t.c);
  }
  for (size_t i = 0; i < map.size(); ++i) {
    auto it = std::find_if(pending_slots_.begin(), pending_slots_.end(),
                           [&](const auto& p) { return p.first == map.entry(i).fqn; });
    if (it != pending_slots_.end()) it->second = slots[i];
    else pending_slots_.emplace_back(map.entry(i).fqn, slots[i]);
  }
  return Status::Ok();
}

Status WeightStore::swap() {
  std::lock_guard<std::mutex> serial(update_mu_);
  std::vector<std::shared_ptr<Container>> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : staged_)
      if (auto c = w.lock()) targets.push_back(std::move(c));
  }
  if (targets.empty())
    return FailedPrecondition("weight store swap: nothing staged (no weight store update since the last swap)");
  // All containers' locks at once, in address order: run_begin on any of them waits for the
  // whole swap, so no run begun after it returns sees old weights beside new ones.
  std::sort(targets.begin(), targets.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& c : targets) locks.emplace_back(c->mu_);
  DeadList dead;
  Status first;
  for (auto& c : targets) {
    if (!c->staged_) continue;  // swapped (or freed) on its own since the store update
    Status st = c->swap_locked(&dead);
    if (!st.ok() && first.ok()) first = st;  // cannot happen: store updates build on complete generations
  }
  locks.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : pending_slots_) {
    auto it = entries_.find(p.first);
    if (it != entries_.end())
      if (auto s = p.second.lock()) it->second.slot = s;
  }
  pending_slots_.clear();
  staged_.clear();
  return first;
}

WeightStoreStats WeightStore::stats() const {
  std::vector<std::shared_ptr<Container>> members;
  std::vector<std::pair<std::string, std::shared_ptr<Slot>>> live;
  std::vector<uint64_t> bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    members = live_members_locked();
    for (const auto& kv : entries_)
      if (auto s = kv.second.slot.lock()) {
        live.emplace_back(kv.first, std::move(s));
        bytes.push_back(kv.second.decl.nbytes);
      }
  }
  WeightStoreStats st;
  for (size_t i = 0; i < live.size(); ++i) {
    uint64_t refs = 0;
    for (auto& c : members) {
      int idx = c->find(live[i].first);
      if (idx < 0) continue;
      std::lock_guard<std::mutex> lock(c->mu_);
      if (c->active_ && c->active_->slots[idx] == live[i].second) ++refs;
    }
    st.unique_constants += 1;
    st.unique_bytes += bytes[i];
    st.references += refs;
    if (refs > 1) st.saved_bytes += (refs - 1) * bytes[i];
  }
  return st;
}

}  // namespace wharf
