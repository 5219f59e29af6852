// SPDX-License-Identifier: Apache-2.0
#include "constants/weight_store.h"

#include <algorithm>

#include "constants/member_set.h"
#include "core/text.h"
#include "core/test_hooks.h"
#include "device/transfer.h"

namespace wharf {
namespace {

const char* placement_name(Placement p) { return p == Placement::kHost ? "host" : "device"; }

std::string describe(const ConstantDecl& d) {
  return std::string(dtype_name(d.dtype)) + " " + shape_string(d.shape) + " " + placement_name(d.placement);
}

}  // namespace

Status WeightStore::join(Container* c, const std::string& name, const std::vector<ConstantDecl>& decls) {
  MutexLock lock(mu_);
  // Check everything first: a refused container leaves no trace in the store.
  for (const ConstantDecl& d : decls) {
    if (d.derived()) continue;  // computed per container: never shared
    auto it = entries_.find(d.fqn);
    if (it == entries_.end()) continue;
    const ConstantDecl& e = it->second.decl;
    if (e.dtype != d.dtype || e.shape != d.shape || e.placement != d.placement)
      return InvalidArgument("weight store: constant " + quote_name(d.fqn) + " of container " + quote_name(name) +
                             " is declared " + describe(d) + ", but container " + quote_name(it->second.declared_by) +
                             " declared it " + describe(e) + " in the same store; a shared FQN must name one weight");
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
  MutexLock lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto& u = it->second.users;
    u.erase(std::remove(u.begin(), u.end(), c), u.end());
    // No container declares it any more: a later one may declare the FQN differently.
    it = u.empty() ? entries_.erase(it) : std::next(it);
  }
  members_.erase(std::remove_if(members_.begin(), members_.end(), [c](const Member& m) { return m.raw == c; }),
                 members_.end());
}

bool WeightStore::served_by(const std::vector<std::shared_ptr<Container>>& members, const std::string& fqn,
                            const std::shared_ptr<Slot>& slot, const Container* except) {
  for (const auto& c : members) {
    if (c.get() == except) continue;
    int idx = c->find(fqn);
    if (idx >= 0 && c->active_slot(idx) == slot) return true;
  }
  return false;
}

void WeightStore::served_slots(const Container* requester, const std::vector<std::string>& fqns,
                               std::vector<std::shared_ptr<Slot>>* out) const {
  out->assign(fqns.size(), nullptr);
  std::vector<std::shared_ptr<Container>> members;  // released after every lock
  {
    MutexLock lock(mu_);
    members = live_members_locked();
  }
  // One instant for every constant: the members' actives and the store's entries are read
  // under all members' locks (then the store's, the documented order), which a store swap
  // also holds while it publishes and moves the entries. Looked up one by one, a store swap
  // in between gave a joiner two store versions, or its own data beside the store's.
  MemberSet set(std::move(members));
  set.with_locks([&](const MemberSet::Locked& locked) {
    MutexLock lock(mu_);
    for (size_t k = 0; k < fqns.size(); ++k) {
      auto it = entries_.find(fqns[k]);
      if (it == entries_.end()) continue;
      std::shared_ptr<Slot> slot = it->second.slot.lock();
      if (!slot) continue;
      // Storage no member serves any more (kept alive only by a rollback generation or a
      // run) is not the weight this FQN names now: the requester loads its own.
      for (size_t i = 0; i < set.size() && !(*out)[k]; ++i) {
        if (&set[i] == requester) continue;
        int idx = set[i].find(fqns[k]);
        if (idx >= 0 && locked.active_slot(i, idx) == slot) (*out)[k] = slot;
      }
    }
  });
}

void WeightStore::offer_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) {
  std::shared_ptr<Slot> current;
  std::vector<std::shared_ptr<Container>> members;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(fqn);
    if (it == entries_.end()) return;
    current = it->second.slot.lock();
    if (current) members = live_members_locked();
  }
  if (current && served_by(members, fqn, current, nullptr)) return;
  MutexLock lock(mu_);
  auto it = entries_.find(fqn);
  if (it != entries_.end() && it->second.slot.lock() == current) it->second.slot = slot;
}

bool WeightStore::is_entry_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) const {
  MutexLock lock(mu_);
  auto it = entries_.find(fqn);
  return it != entries_.end() && it->second.slot.lock() == slot;
}

std::vector<std::shared_ptr<Container>> WeightStore::live_members_locked() const {
  std::vector<std::shared_ptr<Container>> out;
  for (const Member& m : members_)
    if (auto c = m.weak.lock()) out.push_back(std::move(c));
  return out;
}

std::vector<std::shared_ptr<Container>> WeightStore::members() const {
  MutexLock lock(mu_);
  return live_members_locked();
}

void WeightStore::set_entry_slot(const std::string& fqn, const std::shared_ptr<Slot>& slot) {
  MutexLock lock(mu_);
  auto it = entries_.find(fqn);
  if (it != entries_.end()) it->second.slot = slot;
}

size_t WeightStore::staged_members_for_test() const {
  MutexLock lock(mu_);
  return staged_.size();
}

Status WeightStore::update(const ConstantMap& map, const UpdateOptions& opts) {
  if (opts.in_place)
    return Unsupported(
        "weight store update: only the inactive target is supported (update a container in place instead)");
  WHARF_RETURN_IF_ERROR(owner_.check("weight store update", "weight store"));
  std::unique_ptr<ConstantMap> renamed;
  WHARF_RETURN_IF_ERROR(resolve_aliases(map, &renamed));
  std::lock_guard<std::mutex> serial(update_mu_);
  UpdateOwner::Scope inside(owner_);
  return update_serialised(renamed ? *renamed : map, opts);
}

void WeightStore::set_aliases(const std::vector<std::pair<std::string, std::string>>& aliases) {
  MutexLock lock(mu_);
  aliases_.clear();
  for (const auto& [alias, fqn] : aliases) aliases_[alias] = fqn;
}

Status WeightStore::resolve_aliases(const ConstantMap& map, std::unique_ptr<ConstantMap>* out) const {
  std::unordered_map<std::string, std::string> aliases;
  {
    MutexLock lock(mu_);
    if (aliases_.empty()) return Status::Ok();
    bool used = false;
    for (size_t i = 0; i < map.size() && !used; ++i) used = aliases_.count(map.entry(i).fqn) != 0;
    if (!used) return Status::Ok();
    aliases = aliases_;
  }
  auto renamed = std::make_unique<ConstantMap>();
  for (size_t i = 0; i < map.size(); ++i) {
    MapEntry e = map.entry(i);
    auto it = aliases.find(e.fqn);
    if (it != aliases.end()) {
      if (map.find(it->second))
        return InvalidArgument("weight store update: " + quote_name(e.fqn) + " and " + quote_name(it->second) +
                               " name one weight (" + quote_name(e.fqn) + " is another name of " +
                               quote_name(it->second) + "); give it once");
      e.fqn = it->second;
    }
    WHARF_RETURN_IF_ERROR(renamed->add_entry(e));
  }
  *out = std::move(renamed);
  return Status::Ok();
}

namespace {

// A member without weights for `d` cannot take a store update that does not write it.
Status unloaded(const Container& c, const ConstantDecl& d) {
  return FailedPrecondition("weight store update: container " + quote_name(c.name()) + " has no weights for constant " +
                            quote_name(d.fqn) +
                            " yet, so this update would stage an incomplete generation there; "
                            "load it first (wharf_container_update and wharf_container_swap, or create it from a map)");
}

}  // namespace

Status WeightStore::update_serialised(const ConstantMap& map, const UpdateOptions& opts) {
  // 1. Validate every entry against the store's declaration; find who declares what. Forget
  //    staged containers that were freed since (the list never outgrows the live members).
  std::vector<ConstantDecl> decls;
  std::vector<std::shared_ptr<Container>> members;  // released after mu_ (see the header)
  {
    MutexLock lock(mu_);
    staged_.erase(std::remove_if(staged_.begin(), staged_.end(), [](const auto& w) { return w.expired(); }),
                  staged_.end());
    pending_slots_.erase(
        std::remove_if(pending_slots_.begin(), pending_slots_.end(), [](const auto& p) { return p.second.expired(); }),
        pending_slots_.end());
    for (size_t i = 0; i < map.size(); ++i) {
      const MapEntry& e = map.entry(i);
      auto it = entries_.find(e.fqn);
      if (it == entries_.end())
        return NotFound("weight store update: constant " + quote_name(e.fqn) +
                        " is not declared by any container of the store");
      decls.push_back(it->second.decl);
    }
    members = live_members_locked();
    if (opts.require_full)
      for (const auto& kv : entries_)
        if (!map.find(kv.first))
          return InvalidArgument("weight store update: require_full: the map has no constant " + quote_name(kv.first) +
                                 " (" + std::to_string(map.size()) + " of the store's " +
                                 std::to_string(entries_.size()) + " constants given)");
  }
  for (size_t i = 0; i < map.size(); ++i)
    WHARF_RETURN_IF_ERROR(validate_constant_source(*runtime_, decls[i], map.entry(i).meta, map.entry(i).source())
                              .with_context("weight store update"));
  std::unique_ptr<Event> source_ready;
  WHARF_RETURN_IF_ERROR(record_wait_stream(*runtime_, opts.wait_stream, "weight store update", &source_ready));

  // 2. The containers affected, each admitted (its update lock held for the whole call), and
  //    each checked to be able to take the update before anything is copied or staged.
  std::vector<std::shared_ptr<Container>> affected;
  std::vector<std::vector<std::pair<int, size_t>>> writes;  // per target: (constant index, map entry)
  std::vector<std::vector<bool>> written;                   // per target: by constant index
  for (auto& c : members) {
    std::vector<std::pair<int, size_t>> w;
    for (size_t i = 0; i < map.size(); ++i) {
      int idx = c->find(map.entry(i).fqn);
      if (idx >= 0 && !c->decls()[size_t(idx)].derived()) w.emplace_back(idx, i);
    }
    if (w.empty()) continue;
    if (c->has_derived() && !opts.fold)
      return InvalidArgument("weight store update: container " + quote_name(c->name()) +
                             " declares derived constants; the update needs a fold callback to recompute them");
    // A member its creator is still loading (created from a map, or a model's container)
    // takes its weights from that load: this update waits its turn instead of racing it.
    if (c->being_loaded())
      return Busy("weight store update: container " + quote_name(c->name()) +
                  " is being loaded by its creator (created from a map or a model); nothing was staged: retry");
    // A member this update would leave incomplete is refused before it is admitted (and
    // checked again on its base below): admitting it would make its own first load answer
    // BUSY for nothing.
    std::vector<bool> by_index(c->decls().size(), false);
    for (auto& x : w) by_index[size_t(x.first)] = true;
    const int missing = c->first_missing(by_index, bool(opts.fold));
    if (missing >= 0) return unloaded(*c, c->decls()[size_t(missing)]);
    affected.push_back(c);
    writes.push_back(std::move(w));
    written.push_back(std::move(by_index));
  }
  MemberSet targets(std::move(affected));
  MemberSet::Admission admitted;
  WHARF_RETURN_IF_ERROR(targets.admit(
      [&](size_t t) {
        return "weight store update: container " + quote_name(targets[t].name()) +
               " is being updated (or this is its fold callback)";
      },
      &admitted));
  DeadList dead;  // destroyed last, after every lock is released
  std::vector<MemberSet::Write> staged(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    Container& c = targets[t];
    MemberSet::Base base = targets.base(t, &dead);
    staged[t].gen = std::move(base.gen);
    staged[t].base_version = base.version;
    staged[t].folded = c.has_derived() && bool(opts.fold);
    // Again on the base this update builds on (a swap or free_inactive may have moved it).
    const int missing = c.first_missing_in(staged[t].gen.get(), written[t], bool(opts.fold));
    if (missing >= 0) return unloaded(c, c.decls()[size_t(missing)]);
  }

  // 3. One slot and one copy per FQN; slots are allocated while earlier copies run.
  std::vector<std::shared_ptr<Slot>> slots(map.size());
  std::vector<CopyRequest> reqs;
  std::vector<size_t> entry_of;  // request -> map entry
  for (size_t i = 0; i < map.size(); ++i) {
    if (decls[i].nbytes == 0) {  // nothing to copy, so the engine would not ask for it
      WHARF_RETURN_IF_ERROR(allocate_constant_slot(*runtime_, decls[i], &slots[i]));
      continue;
    }
    CopyRequest r = copy_request(map.entry(i), nullptr, decls[i].nbytes);
    r.dst_kind = slot_kind(decls[i]);
    reqs.push_back(r);
    entry_of.push_back(i);
  }
  AllocateFn allocate = [&](size_t k, void** dst) -> Status {
    const size_t i = entry_of[k];
    WHARF_RETURN_IF_ERROR(allocate_constant_slot(*runtime_, decls[i], &slots[i]));
    *dst = slots[i]->data();
    return Status::Ok();
  };
  TransferEngine* engine = nullptr;
  WHARF_RETURN_IF_ERROR(runtime_->transfers(&engine));
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready.get());
  uint64_t total = 0;
  for (const CopyRequest& r : reqs) total += r.bytes;
  Progress progress(opts.progress, total, "weight store update");
  CopyProgressFn on_progress;
  if (progress.enabled()) on_progress = [&](uint64_t done) { return progress.report(done); };
  {
    Status st = engine->copy(reqs, wait_for, nullptr, allocate, on_progress);
    if (st.code() == Code::kCancelled) return st;  // its message already names the call
    WHARF_RETURN_IF_ERROR(st.with_context("weight store update: copying " + std::to_string(map.size()) + " constants"));
  }

  // 4. Build every container's next generation; publish only when all are built.
  for (size_t t = 0; t < targets.size(); ++t) {
    for (auto& w : writes[t]) {
      staged[t].gen->slots[size_t(w.first)] = slots[w.second];
      staged[t].written.emplace_back(w.first, slots[w.second]);
    }
    WHARF_RETURN_IF_ERROR(targets[t]
                              .fold_into(staged[t].gen, opts)
                              .with_context("weight store update: container " + quote_name(targets[t].name())));
  }
  WHARF_RETURN_IF_ERROR(progress.finish());  // the last chance to cancel: nothing is staged yet
  test_hook("store.update.before_stage");

  // 5. Stage everywhere at once (MemberSet's rebase rule for members that swapped, rolled
  //    back or freed their inactive generation meanwhile).
  WHARF_RETURN_IF_ERROR(targets.stage_all(&staged, MemberSet::Staging::kStore, "weight store update", &dead));
  // Updates accumulate until the swap: add to what earlier updates staged.
  MutexLock lock(mu_);
  for (const auto& c : targets.members()) {
    bool known = false;
    for (auto& w : staged_) known |= w.lock() == c;
    if (!known) staged_.push_back(c);
  }
  for (size_t i = 0; i < map.size(); ++i) {
    auto it = std::find_if(pending_slots_.begin(), pending_slots_.end(),
                           [&](const auto& p) { return p.first == map.entry(i).fqn; });
    if (it != pending_slots_.end())
      it->second = slots[i];
    else
      pending_slots_.emplace_back(map.entry(i).fqn, slots[i]);
  }
  return Status::Ok();
}

Status WeightStore::swap() {
  WHARF_RETURN_IF_ERROR(owner_.check("weight store swap", "weight store"));
  std::lock_guard<std::mutex> serial(update_mu_);
  UpdateOwner::Scope inside(owner_);
  return swap_serialised();
}

Status WeightStore::swap_serialised() {
  std::vector<std::shared_ptr<Container>> staged;
  {
    MutexLock lock(mu_);
    for (auto& w : staged_)
      if (auto c = w.lock()) staged.push_back(std::move(c));
  }
  if (staged.empty())
    return FailedPrecondition("weight store swap: nothing staged (no weight store update since the last swap)");
  // All members' locks at once: run_begin on any of them waits for the whole swap, so no run
  // begun after it returns sees old weights beside new ones. Every member is checked before
  // any is swapped (all or nothing), and the entries move under the same locks: a joining
  // container reads entries and actives under them too, so it never sees one without the other.
  DeadList dead;
  MemberSet targets(std::move(staged));
  Status st = targets.swap_all(
      true, [](size_t) { return std::string("weight store swap (nothing was swapped)"); },
      [&] {
        MutexLock lock(mu_);
        for (auto& p : pending_slots_) {
          auto it = entries_.find(p.first);
          if (it != entries_.end())
            if (auto s = p.second.lock()) it->second.slot = s;
        }
        pending_slots_.clear();
        staged_.clear();
      },
      &dead);
  if (st.ok()) test_hook("store.swap.after_publish");
  return st;
}

WeightStoreStats WeightStore::stats() const {
  std::vector<std::shared_ptr<Container>> members;
  std::vector<std::pair<std::string, std::shared_ptr<Slot>>> live;
  std::vector<uint64_t> bytes;
  {
    MutexLock lock(mu_);
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
      if (idx >= 0 && c->active_slot(idx) == live[i].second) ++refs;
    }
    st.unique_constants += 1;
    st.unique_bytes += bytes[i];
    st.references += refs;
    if (refs > 1) st.saved_bytes += (refs - 1) * bytes[i];
  }
  return st;
}

}  // namespace wharf
