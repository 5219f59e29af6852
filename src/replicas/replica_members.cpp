// SPDX-License-Identifier: Apache-2.0
#include "replicas/replica_members.h"

#include <algorithm>

#include "core/text.h"

namespace wharf {
namespace {

const char* placement_word(Placement p) { return p == Placement::kHost ? "host" : "device"; }

std::string describe_constant(const ConstantDecl& d) {
  return quote_name(d.fqn) + " " + dtype_name(d.dtype) + " " + shape_string(d.shape) + " " +
         placement_word(d.placement) + (d.derived() ? " derived" : "");
}

std::string describe_state(const StateDecl& d) {
  return quote_name(d.fqn) + " " + dtype_name(d.dtype) + " " + shape_string(d.shape);
}

void mix(uint64_t* h, const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    *h ^= b[i];
    *h *= 1099511628211ull;  // FNV-1a
  }
}

void mix_str(uint64_t* h, const std::string& s) {
  const uint64_t n = s.size();
  mix(h, &n, sizeof n);
  mix(h, s.data(), s.size());
}

void mix_container(uint64_t* h, const Container& c) {
  const uint64_t nc = c.decls().size(), ns = c.states().size();
  mix(h, &nc, sizeof nc);
  for (const ConstantDecl& d : c.decls()) {
    mix_str(h, d.fqn);
    const int64_t fields[] = {int64_t(d.dtype), int64_t(d.placement), int64_t(d.flags), int64_t(d.shape.size())};
    mix(h, fields, sizeof fields);
    mix(h, d.shape.data(), d.shape.size() * sizeof(d.shape[0]));
  }
  mix(h, &ns, sizeof ns);
  for (const StateDecl& d : c.states()) {
    mix_str(h, d.fqn);
    const int64_t fields[] = {int64_t(d.dtype), int64_t(d.shape.size())};
    mix(h, fields, sizeof fields);
    mix(h, d.shape.data(), d.shape.size() * sizeof(d.shape[0]));
  }
}

}  // namespace

ReplicaMembers ReplicaMembers::of(std::shared_ptr<Container> c, std::string who) {
  ReplicaMembers r;
  r.who_ = std::move(who);
  r.store_ = c->store();
  r.containers_.push_back(c);
  if (r.store_)
    for (auto& m : r.store_->members())
      if (m != c) r.containers_.push_back(std::move(m));
  for (size_t m = 0; m < r.containers_.size(); ++m) {
    const auto& decls = r.containers_[m]->decls();
    for (size_t i = 0; i < decls.size(); ++i) {
      if (decls[i].derived()) continue;
      auto [it, fresh] = r.index_.emplace(decls[i].fqn, r.weights_.size());
      if (fresh) r.weights_.push_back(Weight{&decls[i], {}});
      r.weights_[it->second].uses.push_back(Use{m, int(i)});
    }
  }
  return r;
}

int ReplicaMembers::find(const std::string& fqn) const {
  auto it = index_.find(fqn);
  return it == index_.end() ? -1 : int(it->second);
}

Status ReplicaMembers::check_alike(const ReplicaMembers& first, const std::function<std::string(size_t)>& name,
                                   const std::function<std::string(size_t)>& first_name) const {
  if (containers_.size() != first.containers_.size())
    return InvalidArgument("replica group: " + who_ + " stands for a weight store of " +
                           std::to_string(containers_.size()) + " containers, " + first.who_ + " for " +
                           std::to_string(first.containers_.size()) +
                           "; the replicas of a group must be declared alike (a grouped store member brings its "
                           "whole store)");
  for (size_t m = 0; m < containers_.size(); ++m) {
    const Container& c = *containers_[m];
    const Container& f = *first.containers_[m];
    auto differ = [&](const std::string& what, const std::string& here, const std::string& there) {
      return InvalidArgument("replica group: " + name(m) + " declares " + what + " as " + here + ", " + first_name(m) +
                             " as " + there + "; the replicas of a group must be declared alike");
    };
    const size_t n = std::min(c.decls().size(), f.decls().size());
    for (size_t i = 0; i < n; ++i) {
      const ConstantDecl& a = c.decls()[i];
      const ConstantDecl& b = f.decls()[i];
      if (a.fqn != b.fqn || a.dtype != b.dtype || a.shape != b.shape || a.placement != b.placement ||
          a.flags != b.flags)
        return differ("constant " + std::to_string(i), describe_constant(a), describe_constant(b));
    }
    if (c.decls().size() != f.decls().size())
      return differ("its constants", std::to_string(c.decls().size()) + " constants", std::to_string(f.decls().size()));
    const size_t ns = std::min(c.states().size(), f.states().size());
    for (size_t i = 0; i < ns; ++i) {
      const StateDecl& a = c.states()[i];
      const StateDecl& b = f.states()[i];
      if (a.fqn != b.fqn || a.dtype != b.dtype || a.shape != b.shape)
        return differ("state " + std::to_string(i), describe_state(a), describe_state(b));
    }
    if (c.states().size() != f.states().size())
      return differ("its states", std::to_string(c.states().size()) + " states", std::to_string(f.states().size()));
  }
  return Status::Ok();
}

uint64_t ReplicaMembers::fingerprint() const {
  uint64_t h = 14695981039346656037ull;
  // One member hashes as before stores could be grouped (a lone container's fingerprint).
  if (containers_.size() > 1) {
    const uint64_t n = containers_.size();
    mix(&h, &n, sizeof n);
  }
  for (const auto& c : containers_) mix_container(&h, *c);
  return h;
}

Status ReplicaMembers::validate(const ConstantMap& map, const UpdateOptions& opts, std::vector<Planned>* plan) const {
  plan->clear();
  plan->reserve(map.size());
  const bool lone = containers_.size() == 1 && !store_;
  if (lone) {  // the container's own checks and messages
    std::vector<Container::Planned> p;
    WHARF_RETURN_IF_ERROR(first().validate_map(map, opts, &p));
    for (const Container::Planned& k : p)
      plan->push_back({size_t(find(first().decls()[size_t(k.index)].fqn)), k.entry});
    return Status::Ok();
  }
  std::vector<bool> seen(weights_.size(), false);
  for (size_t i = 0; i < map.size(); ++i) {
    const MapEntry& e = map.entry(i);
    const int w = find(e.fqn);
    if (w < 0) {
      for (const auto& c : containers_) {
        const int idx = c->find(e.fqn);
        if (idx >= 0)
          return InvalidArgument(quote_name(e.fqn) + " is derived in container " + quote_name(c->name()) +
                                 " (computed by the fold callback); it cannot be supplied by a map");
      }
      return NotFound(quote_name(e.fqn) + " is not declared by any container of " + who_ + "'s weight store");
    }
    WHARF_RETURN_IF_ERROR(validate_constant_source(first().runtime(), *weights_[size_t(w)].decl, e.meta, e.source()));
    seen[size_t(w)] = true;
    plan->push_back({size_t(w), &e});
  }
  if (opts.require_full)
    for (size_t w = 0; w < weights_.size(); ++w)
      if (!seen[w])
        return InvalidArgument("require_full: the map has no " + quote_name(weights_[w].decl->fqn) + " (" +
                               std::to_string(plan->size()) + " of the weight store's " +
                               std::to_string(weights_.size()) + " weights given)");
  if (!opts.fold)
    for (const Planned& p : *plan)
      for (const Use& u : weights_[p.weight].uses)
        if (containers_[u.member]->has_derived())
          return InvalidArgument("container " + quote_name(containers_[u.member]->name()) +
                                 " declares derived constants; an update needs a fold callback to recompute them");
  return Status::Ok();
}

Status ReplicaMembers::allocate(size_t w, std::shared_ptr<Slot>* out) const {
  return allocate_constant_slot(first().runtime(), *weights_[w].decl, out);
}

Status ReplicaMembers::read_sources(const std::vector<Planned>& batch, Writes* writes,
                                    const std::vector<Event*>& wait_for, Progress* progress, uint64_t base,
                                    std::vector<std::shared_ptr<Slot>>* slots) const {
  slots->assign(batch.size(), nullptr);
  // Through each weight's first user: one copy per member that is some weight's first user
  // (a lone container, or a store whose first member declares everything: one copy).
  for (size_t m = 0; m < containers_.size(); ++m) {
    std::vector<Container::Planned> mine;
    std::vector<size_t> which;
    uint64_t bytes = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      const Use& u = weights_[batch[k].weight].uses[0];
      if (u.member != m) continue;
      mine.push_back({u.index, batch[k].entry});
      which.push_back(k);
      bytes += weights_[batch[k].weight].decl->nbytes;
    }
    if (mine.empty()) continue;
    const std::shared_ptr<Generation>& gen = (*writes)[m].gen;
    WHARF_RETURN_IF_ERROR(containers_[m]->allocate_and_copy(gen, mine, wait_for, progress, base));
    base += bytes;
    for (size_t j = 0; j < mine.size(); ++j) (*slots)[which[j]] = gen->slots[size_t(mine[j].index)];
  }
  return Status::Ok();
}

void ReplicaMembers::assign(Writes* writes, size_t w, const std::shared_ptr<Slot>& slot) const {
  for (const Use& u : weights_[w].uses) (*writes)[u.member].gen->slots[size_t(u.index)] = slot;
}

Status ReplicaMembers::fold(Writes* writes, const std::vector<size_t>& written, const UpdateOptions& opts,
                            bool complete) const {
  const bool lone = containers_.size() == 1 && !store_;
  for (size_t m = 0; m < containers_.size(); ++m) {
    Container& c = *containers_[m];
    std::vector<int> mine;  // the member's constants this update wrote
    for (size_t w : written)
      for (const Use& u : weights_[w].uses)
        if (u.member == m) mine.push_back(u.index);
    if (!mine.empty() && c.has_derived()) {
      if (!opts.fold)
        return InvalidArgument(who_ + ": container " + quote_name(c.name()) +
                               " declares derived constants; an update needs a fold callback to recompute them");
      // A store's weights are shared by its members: only derived constants may be written
      // (as in a weight store update's fold); a lone container may also write what it got fresh.
      WHARF_RETURN_IF_ERROR(c.fold_into((*writes)[m].gen, opts, lone ? mine : std::vector<int>{}).with_context(who_));
    }
    if (!complete) continue;
    const auto& slots = (*writes)[m].gen->slots;
    for (size_t i = 0; i < slots.size(); ++i)
      if (!slots[i])
        return FailedPrecondition(who_ + ": container " + quote_name(c.name()) + " has no weights for constant " +
                                  quote_name(c.decls()[i].fqn) +
                                  " yet, so this update would publish an incomplete generation there; the first "
                                  "update of a group must write every constant (require_full)");
  }
  return Status::Ok();
}

void ReplicaMembers::remember(const std::vector<size_t>& written, const std::vector<std::shared_ptr<Slot>>& slots) {
  if (!store_) return;
  for (size_t k = 0; k < written.size(); ++k) {
    const std::string& fqn = weights_[written[k]].decl->fqn;
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p.first == fqn; });
    if (it != pending_.end())
      it->second = slots[k];
    else
      pending_.emplace_back(fqn, slots[k]);
  }
}

void ReplicaMembers::publish_entries() {
  if (store_)
    for (auto& p : pending_)
      if (auto s = p.second.lock()) store_->set_entry_slot(p.first, s);
  pending_.clear();
}

}  // namespace wharf
