// SPDX-License-Identifier: Apache-2.0
#include "replicas/rank_group.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "constants/weight_store.h"
#include "core/test_hooks.h"
#include "core/text.h"

namespace wharf {
namespace {

// What rank 0 broadcasts first: its verdict on the map, and how many plan entries follow.
struct Header {
  uint32_t code = 0;  // rank 0's Status code (0: the update goes ahead)
  uint32_t count = 0;
  uint64_t total_bytes = 0;
  char text[1008] = {};  // rank 0's error message (truncated)
};
static_assert(sizeof(Header) == 1024, "the header is a fixed 1 KiB on every rank");

struct PlanEntry {
  uint32_t index = 0;
  uint32_t reserved = 0;
  uint64_t nbytes = 0;
};

// The vote: size << 32 for "staged", rank << 32 | code for a failure; the minimum names the
// lowest failing rank.
uint64_t encode_vote(uint32_t rank, uint32_t size, const Status& st) {
  return st.ok() ? uint64_t(size) << 32 : (uint64_t(rank) << 32) | uint32_t(st.code());
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

}  // namespace

uint64_t RankGroup::fingerprint(const Container& c) {
  uint64_t h = 14695981039346656037ull;
  const uint64_t nc = c.decls().size(), ns = c.states().size();
  mix(&h, &nc, sizeof nc);
  for (const ConstantDecl& d : c.decls()) {
    mix_str(&h, d.fqn);
    const int64_t fields[] = {int64_t(d.dtype), int64_t(d.placement), int64_t(d.flags), int64_t(d.shape.size())};
    mix(&h, fields, sizeof fields);
    mix(&h, d.shape.data(), d.shape.size() * sizeof(d.shape[0]));
  }
  mix(&h, &ns, sizeof ns);
  for (const StateDecl& d : c.states()) {
    mix_str(&h, d.fqn);
    const int64_t fields[] = {int64_t(d.dtype), int64_t(d.shape.size())};
    mix(&h, fields, sizeof fields);
    mix(&h, d.shape.data(), d.shape.size() * sizeof(d.shape[0]));
  }
  return h;
}

std::string RankGroup::where() const {
  return "replica group rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (container " +
         quote_name(container_->name()) + ")";
}

Status RankGroup::create(std::shared_ptr<Container> container, const RankId& id, uint32_t rank, uint32_t size,
                         std::chrono::milliseconds timeout, std::shared_ptr<RankGroup>* out) {
  if (!container) return InvalidArgument("replica group: container is NULL");
  if (size == 0) return InvalidArgument("replica group: size is 0 (a group has at least one rank)");
  if (rank >= size)
    return InvalidArgument("replica group: rank " + std::to_string(rank) + " is not below the size " +
                           std::to_string(size));
  Container& c = *container;
  const std::string who = "replica group rank " + std::to_string(rank) + " (container " + quote_name(c.name()) + ")";
  const bool cuda = c.runtime().backend() != Backend::kHost;
  if (cuda ? !is_nccl_rank_id(id) : !is_host_rank_id(id))
    return InvalidArgument(who + ": the id was not made by wharf_replica_group_get_unique_id for the " +
                           backend_name(c.runtime().backend()) + " backend");
  if (c.has_derived())
    return Unsupported(who + " declares derived constants; replica groups do not run fold callbacks yet");
  if (c.store()) return Unsupported(who + " belongs to a weight store; store members cannot be grouped yet");

  std::shared_ptr<RankGroup> g(new RankGroup());
  g->container_ = std::move(container);
  g->rank_ = rank;
  g->size_ = size;
  g->timeout_ = timeout;
  g->members_ = MemberSet({g->container_});
  // Hold the container's admission while the group forms (a member update begun meanwhile
  // would stage behind the group's back), and mark it first so a refusal costs no peer wait.
  MemberSet::Admission admitted;
  WHARF_RETURN_IF_ERROR(
      g->members_.admit([&](size_t) { return who + " is being updated; retry when it returns"; }, &admitted));
  WHARF_RETURN_IF_ERROR(g->members_.join_group(g.get(), [&](size_t) { return who; }));
  const auto deadline = RankClock::now() + (rank == 0 ? timeout : 2 * timeout);
  Status st = cuda ? make_nccl_rank_transport(id, g->container_->runtime_ptr(), rank, size, fingerprint(*g->container_),
                                              deadline, &g->transport_)
                   : make_host_rank_transport(id, rank, size, fingerprint(*g->container_), deadline, &g->transport_);
  if (!st.ok()) {
    g->members_.leave_group(g.get());
    return st.with_context(who);
  }
  *out = std::move(g);
  return Status::Ok();
}

RankGroup::~RankGroup() {
  transport_.reset();  // closes the connections: peers still in a call fail at once, naming this rank
  members_.leave_group(this);
}

Status RankGroup::update(const ConstantMap* map, const UpdateOptions& opts, const Status& refused) {
  MutexLock serial(op_mu_);
  if (!transport_->aborted().empty())
    return FailedPrecondition(where() + ": the group was aborted by an earlier failure (" + transport_->aborted() +
                              "); it still serves its last committed weights; free it and form a new group");
  const std::string what = where() + ": update";
  DeadList dead;  // destroyed last
  // Every rank's next generation starts as its current one (members refuse writes of their
  // own, so the base cannot move before the stage).
  MemberSet::Base base = members_.base(0, &dead);
  std::shared_ptr<Generation> gen = std::move(base.gen);
  Status local = refused;
  uint64_t source_bytes = 0;
  Status st = rank_ == 0 ? send(map, opts, gen, &local, &source_bytes) : receive(gen, &local);
  if (!st.ok()) return st.with_context(what + " (nothing changed on this rank)");
  // A refusal by rank 0 before anything was sent (a bad map): every rank returns it.
  if (local.code() != Code::kOk && gen == nullptr) return local;

  // Phase one: the vote.
  test_hook("replica.rank.before_vote");
  uint64_t decision = 0;
  st = transport_->vote(encode_vote(rank_, size_, local), deadline(), &decision);
  if (!st.ok()) return st.with_context(what + ": the vote failed (nothing changed on this rank)");
  const uint32_t failed = uint32_t(decision >> 32);
  if (failed < size_) {
    if (!local.ok()) return local.with_context(what + " (nothing changed on any rank)");
    return Status(Code(uint32_t(decision)), what + ": rank " + std::to_string(failed) +
                                                " could not stage the update (its own error says why: " +
                                                code_name(Code(uint32_t(decision))) + "); nothing changed on any rank");
  }
  // Phase two: every rank staged; publish. Members refuse writes of their own, so neither
  // call can be refused here (an Internal error would mean a broken invariant).
  std::vector<MemberSet::Write> writes(1);
  writes[0].gen = std::move(gen);
  writes[0].base_version = base.version;
  st = members_.stage_all(&writes, MemberSet::Staging::kLockstep, what, &dead);
  if (st.ok())
    st = members_.swap_all(
        false, [&](size_t) { return what + ": swap"; }, nullptr, &dead);
  if (!st.ok())
    return Internal(what + ": every rank staged, but this rank could not publish (" + st.message() +
                    "); the ranks may now serve different generations");
  updates_.fetch_add(1);
  swaps_.fetch_add(1);
  source_bytes_.fetch_add(source_bytes);
  return Status::Ok();
}

Status RankGroup::send(const ConstantMap* map, const UpdateOptions& opts, std::shared_ptr<Generation>& gen,
                       Status* local, uint64_t* source_bytes) {
  Container& c = *container_;
  std::vector<Container::Planned> plan;
  Status verdict = *local;  // an argument error of the caller's
  if (verdict.ok() && !map)
    verdict = InvalidArgument(where() + ": update: map is NULL on rank 0 (the source rank passes the weights)");
  else if (verdict.ok() && opts.in_place)
    verdict = Unsupported(where() +
                          ": update: only the inactive target is supported (an in-place write cannot be "
                          "published on every rank at once)");
  else if (verdict.ok())
    verdict = c.validate_map(*map, opts, &plan).with_context(where() + ": update");
  std::unique_ptr<Event> source_ready;
  if (verdict.ok()) verdict = record_wait_stream(c.runtime(), opts.wait_stream, where() + ": update", &source_ready);
  Header h;
  std::vector<PlanEntry> entries;
  if (verdict.ok()) {
    for (const Container::Planned& p : plan) {
      PlanEntry e;
      e.index = uint32_t(p.index);
      e.nbytes = c.decls()[size_t(p.index)].nbytes;
      h.total_bytes += e.nbytes;
      entries.push_back(e);
    }
    h.count = uint32_t(entries.size());
  } else {
    h.code = uint32_t(verdict.code());
    std::strncpy(h.text, verdict.message().c_str(), sizeof h.text - 1);
  }
  WHARF_RETURN_IF_ERROR(transport_->broadcast(&h, sizeof h, deadline()));
  if (!verdict.ok()) {
    *local = verdict;
    gen.reset();  // nothing was sent: no vote follows
    return Status::Ok();
  }
  if (!entries.empty())
    WHARF_RETURN_IF_ERROR(transport_->broadcast(entries.data(), entries.size() * sizeof(PlanEntry), deadline()));

  // Batches: each is read into this rank's fresh slots (pageable sources through the staging
  // ring), then sent on constant by constant. A local failure sends zeros for the rest.
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready.get());
  Progress progress(opts.progress, h.total_bytes, where() + ": update");
  uint64_t copied = 0;
  for (size_t begin = 0; begin < plan.size();) {
    std::vector<Container::Planned> batch;
    uint64_t bytes = 0;
    for (; begin < plan.size() && (batch.empty() || bytes < batch_bytes_); ++begin) {
      batch.push_back(plan[begin]);
      bytes += c.decls()[size_t(plan[begin].index)].nbytes;
    }
    if (local->ok()) *local = c.allocate_and_copy(gen, batch, wait_for, &progress, copied).with_context(where());
    copied += bytes;
    for (const Container::Planned& p : batch) {
      const uint64_t n = c.decls()[size_t(p.index)].nbytes;
      void* src = local->ok() ? gen->slots[size_t(p.index)]->data() : nullptr;
      WHARF_RETURN_IF_ERROR(transport_->broadcast(src, n, deadline()));
      broadcasts_.fetch_add(1);
      broadcast_bytes_.fetch_add(n * (size_ - 1));
      test_hook("replica.rank.sent");
    }
  }
  if (local->ok()) *local = progress.finish();  // the last chance to cancel: nothing is staged
  *source_bytes = h.total_bytes;
  return Status::Ok();
}

Status RankGroup::receive(std::shared_ptr<Generation>& gen, Status* local) {
  Container& c = *container_;
  Header h;
  WHARF_RETURN_IF_ERROR(transport_->broadcast(&h, sizeof h, deadline()));
  if (h.code != 0) {
    h.text[sizeof h.text - 1] = '\0';
    *local = Status(Code(h.code), where() + ": rank 0 refused the update (nothing changed on any rank): " + h.text);
    gen.reset();
    return Status::Ok();
  }
  std::vector<PlanEntry> entries(h.count);
  if (!entries.empty())
    WHARF_RETURN_IF_ERROR(transport_->broadcast(entries.data(), entries.size() * sizeof(PlanEntry), deadline()));
  // Fresh storage first: a rank short of memory knows before any byte arrives (and then
  // discards what it receives, to stay in step).
  for (const PlanEntry& e : entries) {
    if (!local->ok()) break;
    if (e.index >= c.decls().size() || c.decls()[e.index].nbytes != e.nbytes) {
      *local = InvalidArgument(where() + ": rank 0 planned constant " + std::to_string(e.index) + " of " +
                               std::to_string(e.nbytes) + " bytes, which this rank does not declare alike");
      break;
    }
    *local = c.allocate_slot(int(e.index), &gen->slots[e.index]).with_context(where());
  }
  for (const PlanEntry& e : entries) {
    void* dst = local->ok() ? gen->slots[e.index]->data() : nullptr;
    WHARF_RETURN_IF_ERROR(transport_->broadcast(dst, e.nbytes, deadline()));
    broadcasts_.fetch_add(1);
    broadcast_bytes_.fetch_add(e.nbytes);
    test_hook("replica.rank.received");
  }
  return Status::Ok();
}

Status RankGroup::free_inactive() {
  MutexLock serial(op_mu_);
  DeadList dead;
  members_.drop_inactive_all(&dead);
  return Status::Ok();
}

ReplicaGroupStats RankGroup::stats() const {
  ReplicaGroupStats s;
  s.num_replicas = size_;
  s.nccl_version = transport_ ? transport_->nccl_version() : 0;
  s.updates = updates_.load();
  s.swaps = swaps_.load();
  s.source_bytes = source_bytes_.load();
  s.broadcast_bytes = broadcast_bytes_.load();
  s.broadcasts = broadcasts_.load();
  return s;
}

}  // namespace wharf
