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
#include "replicas/slot_allocators.h"
#include "replicas/update_batches.h"

namespace wharf {

std::string ReplicaGroup::replica_name(size_t r) const {
  return "replica " + std::to_string(r) + " (container " + quote_name(replicas_[r]->name()) + ")";
}

std::string ReplicaGroup::member_name(size_t r, size_t m) const {
  if (m == 0) return replica_name(r);
  return "replica " + std::to_string(r) + "'s store member " + std::to_string(m) + " (container " +
         quote_name(members_[offsets_[r] + m].name()) + ")";
}

Status ReplicaGroup::check_declarations() const {
  for (size_t r = 1; r < sets_.size(); ++r)
    WHARF_RETURN_IF_ERROR(sets_[r].check_alike(
        sets_[0], [&](size_t m) { return member_name(r, m); }, [&](size_t m) { return member_name(0, m); }));
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
  }
  // Each replica with what it stands for (a store member: its whole store), all members in
  // one set: staged and swapped as one. (Replicas never share a store: a store belongs to one
  // runtime, and each replica has its own.)
  std::vector<std::shared_ptr<Container>> all;
  std::vector<size_t> replica_of;
  for (size_t r = 0; r < n; ++r) {
    g->sets_.push_back(ReplicaMembers::of(g->replicas_[r], g->replica_name(r)));
    g->offsets_.push_back(all.size());
    for (const auto& c : g->sets_.back().containers()) {
      all.push_back(c);
      replica_of.push_back(r);
    }
  }
  g->members_ = MemberSet(all);
  WHARF_RETURN_IF_ERROR(g->check_declarations());

  // No member update may run while the group forms (one started earlier would stage into a
  // replica behind the group's back): hold every admission until the group has joined.
  auto name = [&](size_t k) { return g->member_name(replica_of[k], k - g->offsets_[replica_of[k]]); };
  MemberSet::Admission admitted;
  WHARF_RETURN_IF_ERROR(g->members_.admit(
      [&](size_t k) { return "replica group: " + name(k) + " is being updated; retry when it returns"; }, &admitted));

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

  WHARF_RETURN_IF_ERROR(g->members_.join_group(g.get(), name, [&](size_t k) { return replica_of[k]; }));
  *out = std::move(g);
  return Status::Ok();
}

ReplicaGroup::~ReplicaGroup() { members_.leave_group(this); }

Status ReplicaGroup::update(const ConstantMap& map, const UpdateOptions& opts) {
  WHARF_RETURN_IF_ERROR(owner_.check("replica group update", "replica group"));
  if (opts.in_place)
    return Unsupported(
        "replica group update: only the inactive target is supported (an in-place write cannot be "
        "published on every replica at once)");
  MutexLock serial(op_mu_);
  UpdateOwner::Scope inside(owner_);
  return update_serialised(map, opts);
}

Status ReplicaGroup::update_serialised(const ConstantMap& map, const UpdateOptions& opts) {
  std::vector<ReplicaMembers::Planned> plan;
  WHARF_RETURN_IF_ERROR(sets_[0].validate(map, opts, &plan).with_context("replica group update"));
  Container& first = *replicas_[0];
  std::unique_ptr<Event> source_ready;
  WHARF_RETURN_IF_ERROR(record_wait_stream(first.runtime(), opts.wait_stream, "replica group update", &source_ready));

  const size_t n = replicas_.size();
  DeadList dead;  // destroyed last, after every lock is released
  // 1. Every member's next generation, built outside the locks. Group calls are serialised
  //    and members refuse writes of their own, so the bases cannot change until the stage.
  std::vector<ReplicaMembers::Writes> writes(n);
  for (size_t r = 0; r < n; ++r) {
    writes[r].resize(sets_[r].containers().size());
    for (size_t m = 0; m < writes[r].size(); ++m) {
      MemberSet::Base base = members_.base(offsets_[r] + m, &dead);
      writes[r][m].gen = std::move(base.gen);
      writes[r][m].base_version = base.version;
    }
  }
  // 2. Fresh storage for every written weight on every replica (copy-on-write): the extra
  //    memory per replica is the updated bytes. Out of memory anywhere: nothing staged.
  //    Replica 0's is allocated while its copy runs (fill); the others' by a thread per
  //    replica meanwhile (slot_allocators.h says why), joined before `slots` goes.
  std::vector<std::vector<std::shared_ptr<Slot>>> slots(n, std::vector<std::shared_ptr<Slot>>(plan.size()));
  SlotAllocators allocators(n, plan.size(), &slots, [&](size_t r, size_t k, std::shared_ptr<Slot>* out) {
    return sets_[r].allocate(plan[k].weight, out).with_context("replica group update: " + replica_name(r));
  });
  // 3-4. The sources are read once, into replica 0, and sent on from there.
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready.get());
  uint64_t broadcast_bytes = 0;
  uint64_t source_bytes = 0;
  for (const auto& p : plan) source_bytes += sets_[0].weights()[p.weight].decl->nbytes;
  Progress progress(opts.progress, source_bytes, "replica group update");
  WHARF_RETURN_IF_ERROR(fill(plan, &writes, &slots, &allocators, wait_for, &progress, &broadcast_bytes));
  allocators.stop();  // all done (fill waited for the last): the threads are joined
  // 5. Every replica's members take the new storage, and fold their derived constants on
  //    their own device: a fold failing anywhere stages nothing anywhere.
  std::vector<size_t> written;
  for (const auto& p : plan) written.push_back(p.weight);
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < plan.size(); ++k) sets_[r].assign(&writes[r], plan[k].weight, slots[r][k]);
    WHARF_RETURN_IF_ERROR(sets_[r].fold(&writes[r], written, opts, false).with_context("replica group update"));
  }
  WHARF_RETURN_IF_ERROR(progress.finish());  // the last chance to cancel: nothing is staged yet
  test_hook("replica.update.before_stage");

  // 6. Stage everywhere at once. Members refuse writes of their own, so no base moved and
  //    the rebase rule (the only reader of Write::written) never applies here.
  std::vector<MemberSet::Write> all;
  for (auto& w : writes)
    for (auto& m : w) all.push_back(std::move(m));
  WHARF_RETURN_IF_ERROR(members_.stage_all(&all, MemberSet::Staging::kLockstep, "replica group update", &dead));
  for (size_t r = 0; r < n; ++r) sets_[r].remember(written, slots[r]);
  updates_.fetch_add(1);
  source_bytes_.fetch_add(source_bytes);
  broadcast_bytes_.fetch_add(broadcast_bytes);
  return Status::Ok();
}

Status ReplicaGroup::fill(const std::vector<ReplicaMembers::Planned>& plan, std::vector<ReplicaMembers::Writes>* writes,
                          std::vector<std::vector<std::shared_ptr<Slot>>>* slots, SlotAllocators* allocators,
                          const std::vector<Event*>& wait_for, Progress* progress, uint64_t* broadcast_bytes) {
  const size_t n = replicas_.size();
  const ReplicaMembers& first = sets_[0];
  // In batches of about batch_bytes_, so that the broadcast of one batch (NCCL over NVLink,
  // on the replicas' streams) overlaps the host-to-device copy of the next (the copy engine
  // and the staging ring): the update takes about one GPU's copy time plus one batch's
  // broadcast. Every batch's buffers stay alive until finish() has waited for them.
  std::vector<std::vector<BroadcastBuffer>> issued;
  std::vector<std::vector<CopyRequest>> host_copies(n);
  Status st;            // the copies into replica 0
  Status sent;          // the broadcaster's
  uint64_t copied = 0;  // source bytes of the batches before this one (progress)
  std::vector<uint64_t> sizes;
  for (const auto& p : plan) sizes.push_back(first.weights()[p.weight].decl->nbytes);
  // Shrinking toward the end (update_batches.h). One replica has nothing to broadcast: one
  // batch, one drain.
  const std::vector<size_t> ends = update_batches(sizes, n > 1 ? batch_bytes_ : UINT64_MAX);
  for (size_t b = 0, begin = 0; b < ends.size() && st.ok() && sent.ok(); ++b) {
    const size_t batch_begin = begin;
    const std::vector<ReplicaMembers::Planned> batch(plan.begin() + ptrdiff_t(begin),
                                                     plan.begin() + ptrdiff_t(ends[b]));
    uint64_t bytes = 0;
    for (; begin < ends[b]; ++begin) bytes += sizes[begin];
    // Replica 0's slots are allocated while earlier ones are copied, and pageable sources go
    // through its staging ring, as in a container update; returns when the batch is in place.
    std::vector<std::shared_ptr<Slot>> got;
    st = first.read_sources(batch, &(*writes)[0], wait_for, progress, copied, &got);
    if (!st.ok()) {
      if (st.code() != Code::kCancelled) st = st.with_context("replica group update: " + replica_name(0));
      break;
    }
    for (size_t j = 0; j < batch.size(); ++j) (*slots)[0][batch_begin + j] = got[j];
    copied += bytes;
    // The other replicas' storage for this batch (allocated meanwhile, usually long done).
    st = allocators->wait(ends[b]);
    if (!st.ok()) break;
    // Replica 0 -> the others: device constants through the broadcaster, host-placed ones
    // (pinned host memory) by each replica's own copy engine from replica 0's copy.
    std::vector<BroadcastBuffer> buffers;
    for (size_t j = 0; j < batch.size(); ++j) {
      const size_t k = batch_begin + j;
      const ConstantDecl& d = *first.weights()[plan[k].weight].decl;
      if (d.nbytes == 0) continue;
      *broadcast_bytes += d.nbytes * (n - 1);
      if (d.placement == Placement::kHost) {
        for (size_t r = 1; r < n; ++r) host_copies[r].push_back({(*slots)[r][k]->data(), got[j]->data(), d.nbytes});
        continue;
      }
      BroadcastBuffer b;
      b.bytes = d.nbytes;
      for (size_t r = 0; r < n; ++r) b.ptrs.push_back((*slots)[r][k]->data());
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
  WHARF_RETURN_IF_ERROR(owner_.check("replica group swap", "replica group"));
  MutexLock serial(op_mu_);
  DeadList dead;
  // All replicas' locks at once: run_begin on any of them waits for the whole swap, so no
  // run begun after it returns sees old weights on one replica and new ones on another. A
  // grouped store's entries move under the same locks (as a store swap moves them).
  auto replica_of = [&](size_t k) {
    size_t r = 0;
    while (r + 1 < offsets_.size() && offsets_[r + 1] <= k) ++r;
    return r;
  };
  WHARF_RETURN_IF_ERROR(members_.swap_all(
      false,
      [&](size_t k) {
        const size_t r = replica_of(k);
        return "replica group swap: " + member_name(r, k - offsets_[r]) + " (nothing was swapped)";
      },
      [&] {
        for (ReplicaMembers& set : sets_) set.publish_entries();
      },
      &dead));
  swaps_.fetch_add(1);
  return Status::Ok();
}

Status ReplicaGroup::free_inactive() {
  WHARF_RETURN_IF_ERROR(owner_.check("replica group free_inactive", "replica group"));
  MutexLock serial(op_mu_);
  DeadList dead;
  members_.drop_inactive_all(&dead);
  for (ReplicaMembers& set : sets_) set.forget_entries();
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
