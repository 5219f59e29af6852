// SPDX-License-Identifier: Apache-2.0
#include "replicas/replica_group.h"

#include <algorithm>
#include <string>
#include <utility>

#include "constants/weight_store.h"
#include "core/logging.h"
#include "core/test_hooks.h"
#include "core/text.h"
#include "device/transfer.h"

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

}  // namespace

std::string ReplicaGroup::replica_name(size_t r) const {
  return "replica " + std::to_string(r) + " (container " + quote_name(replicas_[r]->name()) + ")";
}

Status ReplicaGroup::check_declarations() const {
  const Container& first = *replicas_[0];
  auto differ = [&](size_t r, const std::string& what, const std::string& here, const std::string& there) {
    return InvalidArgument("replica group: " + replica_name(r) + " declares " + what + " as " + here + ", " +
                           replica_name(0) + " as " + there + "; the replicas of a group must be declared alike");
  };
  for (size_t r = 1; r < replicas_.size(); ++r) {
    const Container& c = *replicas_[r];
    const size_t n = std::min(c.decls().size(), first.decls().size());
    for (size_t i = 0; i < n; ++i) {
      const ConstantDecl& a = c.decls()[i];
      const ConstantDecl& b = first.decls()[i];
      if (a.fqn != b.fqn || a.dtype != b.dtype || a.shape != b.shape || a.placement != b.placement ||
          a.flags != b.flags)
        return differ(r, "constant " + std::to_string(i), describe_constant(a), describe_constant(b));
    }
    if (c.decls().size() != first.decls().size())
      return differ(r, "its constants", std::to_string(c.decls().size()) + " constants",
                    std::to_string(first.decls().size()));
    const size_t ns = std::min(c.states().size(), first.states().size());
    for (size_t i = 0; i < ns; ++i) {
      const StateDecl& a = c.states()[i];
      const StateDecl& b = first.states()[i];
      if (a.fqn != b.fqn || a.dtype != b.dtype || a.shape != b.shape)
        return differ(r, "state " + std::to_string(i), describe_state(a), describe_state(b));
    }
    if (c.states().size() != first.states().size())
      return differ(r, "its states", std::to_string(c.states().size()) + " states",
                    std::to_string(first.states().size()));
  }
  return Status::Ok();
}

Status ReplicaGroup::create(std::vector<std::shared_ptr<Container>> replicas, std::unique_ptr<Broadcaster> broadcaster,
                            std::shared_ptr<ReplicaGroup>* out) {
  if (replicas.empty()) return InvalidArgument("replica group: no containers (a group needs at least one)");
  std::shared_ptr<ReplicaGroup> g(new ReplicaGroup());
  g->replicas_ = std::move(replicas);
  const size_t n = g->replicas_.size();
  for (size_t r = 0; r < n; ++r) {
    if (!g->replicas_[r]) return InvalidArgument("replica group: container " + std::to_string(r) + " is NULL");
    Container& c = *g->replicas_[r];
    for (size_t q = 0; q < r; ++q) {
      Container& p = *g->replicas_[q];
      if (&p == &c)
        return InvalidArgument("replica group: containers " + std::to_string(q) + " and " + std::to_string(r) +
                               " are the same container " + quote_name(c.name()) +
                               " (each replica is its own container)");
      if (p.runtime().backend() != c.runtime().backend())
        return InvalidArgument("replica group: " + g->replica_name(r) + " uses the " +
                               backend_name(c.runtime().backend()) + " backend, " + g->replica_name(q) + " the " +
                               backend_name(p.runtime().backend()) + " backend; all replicas use one backend");
      if (p.runtime_ptr() == c.runtime_ptr())
        return InvalidArgument("replica group: " + g->replica_name(q) + " and " + g->replica_name(r) +
                               " share one runtime; each replica has a runtime (and device) of its own");
      if (c.runtime().backend() == Backend::kCuda && p.runtime().device().index() == c.runtime().device().index())
        return InvalidArgument("replica group: " + g->replica_name(q) + " and " + g->replica_name(r) +
                               " are both on CUDA device " + std::to_string(c.runtime().device().index()) +
                               "; a group has one replica per GPU (NCCL takes one rank per device)");
    }
    if (c.has_derived())
      return Unsupported("replica group: " + g->replica_name(r) +
                         " declares derived constants; replica groups do not run fold callbacks yet");
    if (c.store())
      return Unsupported("replica group: " + g->replica_name(r) +
                         " belongs to a weight store; a store update would reach one replica only, so store members "
                         "cannot be grouped yet");
  }
  WHARF_RETURN_IF_ERROR(g->check_declarations());

  // No member update may run while the group forms (one started earlier would stage into a
  // replica behind the group's back): hold every admission until the group has joined.
  g->members_ = MemberSet(g->replicas_);
  MemberSet::Admission admitted;
  WHARF_RETURN_IF_ERROR(g->members_.admit(
      [&](size_t r) { return "replica group: " + g->replica_name(r) + " is being updated; retry when it returns"; },
      &admitted));

  std::vector<std::shared_ptr<Runtime>> runtimes;
  for (const auto& c : g->replicas_) runtimes.push_back(c->runtime_ptr());
  if (broadcaster) {
    g->broadcaster_ = std::move(broadcaster);
  } else if (runtimes[0]->backend() == Backend::kHost) {
    g->broadcaster_ = make_host_broadcaster(runtimes);
  } else {
    std::shared_ptr<const NcclApi> nccl;
    Status st = nccl_api(&nccl);
    if (st.ok()) {
      WHARF_RETURN_IF_ERROR(make_nccl_broadcaster(nccl, runtimes, &g->broadcaster_).with_context("replica group"));
    } else if (n >= 2) {
      return Unsupported("replica group of " + std::to_string(n) +
                         " CUDA replicas: the broadcast needs NCCL: " + st.message());
    } else {
      WHARF_LOG(kInfo, "replica group of one CUDA replica without NCCL (nothing to broadcast): " + st.message());
    }
  }

  WHARF_RETURN_IF_ERROR(g->members_.join_group(g.get(), [&](size_t r) { return g->replica_name(r); }));
  *out = std::move(g);
  return Status::Ok();
}

ReplicaGroup::~ReplicaGroup() { members_.leave_group(this); }

Status ReplicaGroup::update(const ConstantMap& map, const UpdateOptions& opts) {
  if (opts.in_place)
    return Unsupported(
        "replica group update: only the inactive target is supported (an in-place write cannot be "
        "published on every replica at once)");
  Container& first = *replicas_[0];
  std::vector<Container::Planned> plan;
  WHARF_RETURN_IF_ERROR(first.validate_map(map, opts, &plan).with_context("replica group update"));
  MutexLock serial(op_mu_);
  std::unique_ptr<Event> source_ready;
  WHARF_RETURN_IF_ERROR(record_wait_stream(first.runtime(), opts.wait_stream, "replica group update", &source_ready));

  const size_t n = replicas_.size();
  DeadList dead;  // destroyed last, after every lock is released
  // 1. Every replica's next generation, built outside the locks. Group calls are serialised
  //    and members refuse writes of their own, so the bases cannot change until the stage.
  std::vector<std::shared_ptr<Generation>> gens(n);
  std::vector<MemberSet::Write> writes(n);
  for (size_t r = 0; r < n; ++r) {
    MemberSet::Base base = members_.base(r, &dead);
    gens[r] = std::move(base.gen);
    writes[r].base_version = base.version;
  }
  // 2. Fresh storage for every written constant on every replica (copy-on-write): the extra
  //    memory per replica is the updated bytes. Out of memory anywhere: nothing staged.
  //    Replica 0's is allocated while its copy runs (fill); the others' first, so a replica
  //    short of memory fails the update before any source is read.
  for (size_t r = 1; r < n; ++r)
    for (const Container::Planned& p : plan)
      WHARF_RETURN_IF_ERROR(replicas_[r]
                                ->allocate_slot(p.index, &gens[r]->slots[size_t(p.index)])
                                .with_context("replica group update: " + replica_name(r)));
  // 3-4. The sources are read once, into replica 0, and sent on from there.
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready.get());
  uint64_t broadcast_bytes = 0;
  uint64_t source_bytes = 0;
  for (const Container::Planned& p : plan) source_bytes += first.decls()[size_t(p.index)].nbytes;
  Progress progress(opts.progress, source_bytes, "replica group update");
  WHARF_RETURN_IF_ERROR(fill(plan, gens, wait_for, &progress, &broadcast_bytes));
  WHARF_RETURN_IF_ERROR(progress.finish());  // the last chance to cancel: nothing is staged yet
  test_hook("replica.update.before_stage");

  // 5. Stage everywhere at once. Members refuse writes of their own, so no base moved and
  //    the rebase rule (the only reader of Write::written) never applies here.
  for (size_t r = 0; r < n; ++r) writes[r].gen = std::move(gens[r]);
  WHARF_RETURN_IF_ERROR(members_.stage_all(&writes, MemberSet::Staging::kLockstep, "replica group update", &dead));
  updates_.fetch_add(1);
  source_bytes_.fetch_add(source_bytes);
  broadcast_bytes_.fetch_add(broadcast_bytes);
  return Status::Ok();
}

Status ReplicaGroup::fill(const std::vector<Container::Planned>& plan,
                          const std::vector<std::shared_ptr<Generation>>& gens, const std::vector<Event*>& wait_for,
                          Progress* progress, uint64_t* broadcast_bytes) {
  const size_t n = replicas_.size();
  Container& first = *replicas_[0];
  // In batches of about batch_bytes_, so that the broadcast of one batch (NCCL over NVLink,
  // on the replicas' streams) overlaps the host-to-device copy of the next (the copy engine
  // and the staging ring): the update takes about one GPU's copy time plus one batch's
  // broadcast. Every batch's buffers stay alive until finish() has waited for them.
  std::vector<std::vector<BroadcastBuffer>> issued;
  std::vector<std::vector<CopyRequest>> host_copies(n);
  Status st;            // the copies into replica 0
  Status sent;          // the broadcaster's
  uint64_t copied = 0;  // source bytes of the batches before this one (progress)
  for (size_t begin = 0; begin < plan.size() && st.ok() && sent.ok();) {
    std::vector<Container::Planned> batch;
    uint64_t bytes = 0;
    // One replica has nothing to broadcast: one batch, one drain.
    const uint64_t limit = n > 1 ? batch_bytes_ : UINT64_MAX;
    for (; begin < plan.size() && (batch.empty() || bytes < limit); ++begin) {
      batch.push_back(plan[begin]);
      bytes += first.decls()[size_t(plan[begin].index)].nbytes;
    }
    // Replica 0's slots are allocated while earlier ones are copied, and pageable sources go
    // through its staging ring, as in a container update; returns when the batch is in place.
    st = first.allocate_and_copy(gens[0], batch, wait_for, progress, copied);
    if (!st.ok()) {
      if (st.code() != Code::kCancelled) st = st.with_context("replica group update: " + replica_name(0));
      break;
    }
    copied += bytes;
    // Replica 0 -> the others: device constants through the broadcaster, host-placed ones
    // (pinned host memory) by each replica's own copy engine from replica 0's copy.
    std::vector<BroadcastBuffer> buffers;
    for (const Container::Planned& p : batch) {
      const ConstantDecl& d = first.decls()[size_t(p.index)];
      if (d.nbytes == 0) continue;
      *broadcast_bytes += d.nbytes * (n - 1);
      if (d.placement == Placement::kHost) {
        for (size_t r = 1; r < n; ++r)
          host_copies[r].push_back(
              {gens[r]->slots[size_t(p.index)]->data(), gens[0]->slots[size_t(p.index)]->data(), d.nbytes});
        continue;
      }
      BroadcastBuffer b;
      b.bytes = d.nbytes;
      for (size_t r = 0; r < n; ++r) b.ptrs.push_back(gens[r]->slots[size_t(p.index)]->data());
      buffers.push_back(std::move(b));
    }
    if (!broadcaster_ || buffers.empty()) continue;
    test_hook("replica.broadcast.before");
    issued.push_back(std::move(buffers));
    broadcasts_.fetch_add(1);
    sent = broadcaster_->enqueue(issued.back());
  }
  // Always wait for what was issued (also after a failure: the slots are dropped on return).
  if (!issued.empty()) {
    Status done = broadcaster_->finish();
    if (sent.ok()) sent = done;
  }
  WHARF_RETURN_IF_ERROR(st);
  // (A group of one CUDA replica without NCCL has no broadcaster, and nothing was sent.)
  if (!sent.ok())
    return sent.with_context(std::string("replica group update: ") + (broadcaster_ ? broadcaster_->kind() : "no") +
                             " broadcast from " + replica_name(0) + " (nothing was staged)");
  for (size_t r = 1; r < n; ++r) {
    if (host_copies[r].empty()) continue;
    TransferEngine* engine = nullptr;
    WHARF_RETURN_IF_ERROR(replicas_[r]->runtime().transfers(&engine));
    WHARF_RETURN_IF_ERROR(
        engine->copy(host_copies[r], {})
            .with_context("replica group update: " + replica_name(r) + ": copying host-placed constants"));
  }
  return Status::Ok();
}

Status ReplicaGroup::swap() {
  MutexLock serial(op_mu_);
  DeadList dead;
  // All replicas' locks at once: run_begin on any of them waits for the whole swap, so no
  // run begun after it returns sees old weights on one replica and new ones on another.
  WHARF_RETURN_IF_ERROR(members_.swap_all(
      false, [&](size_t r) { return "replica group swap: " + replica_name(r) + " (nothing was swapped)"; }, nullptr,
      &dead));
  swaps_.fetch_add(1);
  return Status::Ok();
}

Status ReplicaGroup::free_inactive() {
  MutexLock serial(op_mu_);
  DeadList dead;
  members_.drop_inactive_all(&dead);
  return Status::Ok();
}

ReplicaGroupStats ReplicaGroup::stats() const {
  ReplicaGroupStats s;
  s.num_replicas = uint32_t(replicas_.size());
  s.nccl_version = broadcaster_ ? broadcaster_->nccl_version() : 0;
  s.updates = updates_.load();
  s.swaps = swaps_.load();
  s.source_bytes = source_bytes_.load();
  s.broadcast_bytes = broadcast_bytes_.load();
  s.broadcasts = broadcasts_.load();
  return s;
}

}  // namespace wharf
