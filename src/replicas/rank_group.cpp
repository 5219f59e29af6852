// SPDX-License-Identifier: Apache-2.0
#include "replicas/rank_group.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "constants/weight_store.h"
#include "core/test_hooks.h"
#include "core/text.h"
#include "replicas/rank_protocol.h"
#include "replicas/update_batches.h"

namespace wharf {

namespace {

// Rank 0's step 3 (RankTransport::broadcast_async, flush, finish) from a thread of its own,
// one per update, so that issuing batch k overlaps reading batch k+1 instead of following
// it: on NCCL each group of kRankGroupPieces pieces is launched by NCCL's own thread and
// polled until it is (~50 us), about 6 ms per 8 GiB that the reading thread would otherwise
// spend between its reads. Every transport call of step 3 is made on that one thread:
// NCCL's group state (ncclGroupStart ... ncclGroupEnd) is per thread, and one thread at a
// time uses a transport (the reader makes no transport call until finish() has joined).
// One batch is handed over at a time: send() waits while the previous one is still being
// issued (each transport call is bounded by the deadline, so that wait is too). A transport
// failure (the transport has then aborted itself) ends the thread; the reader gets it from
// its next send() or finish() and stops reading.
class BatchSender {
 public:
  struct Piece {
    void* src;  // null: zeros (this rank failed locally)
    uint64_t bytes;
  };
  BatchSender(RankTransport* transport, std::function<RankClock::time_point()> deadline,
              std::function<void(uint64_t)> sent)
      : transport_(transport), deadline_(std::move(deadline)), sent_(std::move(sent)) {}
  // An early return of the reader (a transport failure) stops the thread without finish().
  ~BatchSender() { (void)stop(false); }
  BatchSender(const BatchSender&) = delete;
  BatchSender& operator=(const BatchSender&) = delete;

  // Hands `batch` to the thread (started at the first); the transport's failure instead, if
  // it has failed.
  Status send(std::vector<Piece> batch) WHARF_EXCLUDES(mu_) {
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    UniqueLock lock(mu_);
    lock.wait(cv_, [&]() WHARF_REQUIRES(mu_) { return !has_batch_ || !failed_.ok(); });
    if (!failed_.ok()) return failed_;
    batch_ = std::move(batch);
    has_batch_ = true;
    cv_.notify_all();
    return Status::Ok();
  }
  // The end of step 3: the thread issues what it holds, then finish() (closing the open
  // NCCL group and waiting for every broadcast), and is joined. Nothing sent: nothing to do.
  Status finish() WHARF_EXCLUDES(mu_) { return stop(true); }

 private:
  Status stop(bool finish) WHARF_EXCLUDES(mu_) {
    if (!thread_.joinable()) return Status::Ok();
    {
      MutexLock lock(mu_);
      stopping_ = true;
      finish_ = finish;
      cv_.notify_all();
    }
    thread_.join();
    MutexLock lock(mu_);
    return failed_;
  }

  void loop() WHARF_EXCLUDES(mu_) {
    bool issued = false;
    UniqueLock lock(mu_);
    for (;;) {
      lock.wait(cv_, [&]() WHARF_REQUIRES(mu_) { return has_batch_ || stopping_; });
      if (!has_batch_) break;  // stopping, everything handed over was issued
      std::vector<Piece> batch = std::move(batch_);
      lock.unlock();
      // The previous batch's broadcasts first (one host wait per batch), then this one's.
      Status st = issued ? transport_->flush(deadline_()) : Status::Ok();
      issued = true;
      for (size_t j = 0; j < batch.size() && st.ok(); ++j) {
        st = transport_->broadcast_async(batch[j].src, batch[j].bytes, deadline_());
        if (!st.ok()) break;
        sent_(batch[j].bytes);
        test_hook("replica.rank.sent");
      }
      lock.lock();
      has_batch_ = false;
      if (!st.ok()) failed_ = st;
      cv_.notify_all();
      if (!st.ok()) return;
    }
    const bool finish = finish_;
    lock.unlock();
    Status st;
    if (issued && finish) {
      st = transport_->finish(deadline_());
    } else if (issued) {
      // Stopped mid-step without a transport failure (not a path the reader takes): the
      // ranks are out of step, so the group ends here, from this thread (which may hold
      // step 3's open NCCL group).
      st = Internal("replica group rank 0 stopped sending in the middle of an update");
      transport_->abort(0, st.message());
    }
    lock.lock();
    if (!st.ok()) failed_ = st;
  }

  RankTransport* const transport_;
  const std::function<RankClock::time_point()> deadline_;
  const std::function<void(uint64_t)> sent_;
  std::thread thread_;  // the reader's only (started by send, joined by stop)
  Mutex mu_;
  std::condition_variable cv_;  // a batch handed over or taken, a failure, stopping
  std::vector<Piece> batch_ WHARF_GUARDED_BY(mu_);
  bool has_batch_ WHARF_GUARDED_BY(mu_) = false;  // batch_ is handed over and not yet issued
  bool stopping_ WHARF_GUARDED_BY(mu_) = false;
  bool finish_ WHARF_GUARDED_BY(mu_) = false;  // stopping: close step 3 (finish) first
  Status failed_ WHARF_GUARDED_BY(mu_);        // the transport's failure (it aborted itself)
};

}  // namespace

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

  std::shared_ptr<RankGroup> g(new RankGroup());
  g->container_ = std::move(container);
  g->rank_ = rank;
  g->size_ = size;
  g->timeout_ = timeout;
  g->set_ = ReplicaMembers::of(g->container_, g->where());
  g->members_ = MemberSet(g->set_.containers());
  auto name = [&](size_t m) {
    return m == 0 ? who : who + "'s store member (container " + quote_name(g->members_[m].name()) + ")";
  };
  // Hold the members' admission while the group forms (a member update begun meanwhile
  // would stage behind the group's back), and mark them first so a refusal costs no peer wait.
  MemberSet::Admission admitted;
  WHARF_RETURN_IF_ERROR(
      g->members_.admit([&](size_t m) { return name(m) + " is being updated; retry when it returns"; }, &admitted));
  WHARF_RETURN_IF_ERROR(g->members_.join_group(g.get(), name, [&](size_t) { return size_t(rank); }));
  const auto deadline = RankClock::now() + (rank == 0 ? timeout : 2 * timeout);
  const uint64_t fingerprint = g->set_.fingerprint();
  Status st = cuda ? make_nccl_rank_transport(id, g->container_->runtime_ptr(), rank, size, fingerprint, deadline,
                                              &g->transport_)
                   : make_host_rank_transport(id, rank, size, fingerprint, deadline, &g->transport_);
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
  WHARF_RETURN_IF_ERROR(owner_.check(where() + ": update", "rank group"));
  MutexLock serial(op_mu_);
  UpdateOwner::Scope inside(owner_);
  return update_serialised(map, opts, refused);
}

Status RankGroup::update_serialised(const ConstantMap* map, const UpdateOptions& opts, const Status& refused) {
  if (!transport_->aborted().empty())
    return FailedPrecondition(where() + ": the group was aborted by an earlier failure (" + transport_->aborted() +
                              "); it still serves its last committed weights; free it and form a new group");
  const std::string what = where() + ": update";
  DeadList dead;  // destroyed last
  // Every member's next generation starts as its current one (members refuse writes of
  // their own, so the base cannot move before the stage).
  ReplicaMembers::Writes writes(members_.size());
  for (size_t m = 0; m < members_.size(); ++m) {
    MemberSet::Base base = members_.base(m, &dead);
    writes[m].gen = std::move(base.gen);
    writes[m].base_version = base.version;
  }
  Status local = refused;
  Received got;
  uint64_t source_bytes = 0;
  Status st = rank_ == 0 ? send(map, opts, &writes, &local, &got, &source_bytes) : receive(&local, &got);
  if (!st.ok()) return st.with_context(what + " (nothing changed on this rank)");
  // A refusal by rank 0 before anything was sent (a bad map): every rank returns it.
  if (got.refused_by_rank0) return local;
  // Every member takes the new storage and folds its derived constants on this rank's
  // device, before the vote: a fold failing here fails the update on every rank.
  if (local.ok()) {
    for (size_t k = 0; k < got.weights.size(); ++k) set_.assign(&writes, got.weights[k], got.slots[k]);
    local = set_.fold(&writes, got.weights, opts, true);
  }

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
  // Phase two: every rank staged; publish (and point a grouped store at the new storage).
  // Members refuse writes of their own, so neither call can be refused here (an Internal
  // error would mean a broken invariant).
  set_.remember(got.weights, got.slots);
  st = members_.stage_all(&writes, MemberSet::Staging::kLockstep, what, &dead);
  if (st.ok())
    st = members_.swap_all(
        false, [&](size_t) { return what + ": swap"; }, [&] { set_.publish_entries(); }, &dead);
  if (!st.ok()) {
    set_.forget_entries();
    return Internal(what + ": every rank staged, but this rank could not publish (" + st.message() +
                    "); the ranks may now serve different generations");
  }
  updates_.fetch_add(1);
  swaps_.fetch_add(1);
  source_bytes_.fetch_add(source_bytes);
  return Status::Ok();
}

Status RankGroup::send(const ConstantMap* map, const UpdateOptions& opts, ReplicaMembers::Writes* writes, Status* local,
                       Received* got, uint64_t* source_bytes) {
  Container& c = *container_;
  std::vector<ReplicaMembers::Planned> plan;
  Status verdict = *local;  // an argument error of the caller's, or a store that gained a member
  if (verdict.ok() && !map)
    verdict = InvalidArgument(where() + ": update: map is NULL on rank 0 (the source rank passes the weights)");
  else if (verdict.ok() && opts.in_place)
    verdict = Unsupported(where() +
                          ": update: only the inactive target is supported (an in-place write cannot be "
                          "published on every rank at once)");
  else if (verdict.ok())
    verdict = set_.validate(*map, opts, &plan).with_context(where() + ": update");
  std::unique_ptr<Event> source_ready;
  if (verdict.ok()) verdict = record_wait_stream(c.runtime(), opts.wait_stream, where() + ": update", &source_ready);
  RankHeader h;
  std::vector<unsigned char> blob;
  if (verdict.ok()) {
    std::vector<RankPlanEntry> entries;
    for (const ReplicaMembers::Planned& p : plan) {
      const ConstantDecl& d = *set_.weights()[p.weight].decl;
      entries.push_back({d.fqn, d.dtype, d.shape, d.nbytes});
      h.total_bytes += d.nbytes;
    }
    blob = encode_rank_plan(entries);
    h.count = uint32_t(entries.size());
    h.plan_bytes = blob.size();
  } else {
    h.code = uint32_t(verdict.code());
    std::strncpy(h.text, verdict.message().c_str(), sizeof h.text - 1);
  }
  WHARF_RETURN_IF_ERROR(transport_->broadcast(&h, sizeof h, deadline()));
  if (!verdict.ok()) {
    *local = verdict;
    got->refused_by_rank0 = true;  // nothing was sent: no vote follows
    return Status::Ok();
  }
  if (!blob.empty()) WHARF_RETURN_IF_ERROR(transport_->broadcast(blob.data(), blob.size(), deadline()));
  for (const ReplicaMembers::Planned& p : plan) got->weights.push_back(p.weight);
  got->slots.assign(plan.size(), nullptr);

  // Batches (update_batches.h: shrinking toward the end, so the last broadcast, which no
  // read overlaps, is short): each is read into this rank's fresh storage (pageable sources
  // through the staging ring), then sent on weight by weight by the BatchSender's thread
  // while this thread reads the next batch. A local failure sends zeros for the rest. A
  // batch's broadcasts are only issued; the sender waits for them before it issues the next
  // batch, so the copy of batch k+1 overlaps the broadcast of batch k (and the host waits
  // once per batch, not once per constant). The batches are rank 0's own: the wire (pieces,
  // and NCCL groups counted in pieces) does not depend on them, and receivers wait on a rule
  // of their own (receive).
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready.get());
  Progress progress(opts.progress, h.total_bytes, where() + ": update");
  std::vector<uint64_t> sizes;
  for (const ReplicaMembers::Planned& p : plan) sizes.push_back(set_.weights()[p.weight].decl->nbytes);
  const std::vector<size_t> ends = update_batches(sizes, batch_bytes_);
  uint64_t copied = 0;
  BatchSender sender(
      transport_.get(), [this] { return deadline(); },
      [this](uint64_t n) {
        broadcasts_.fetch_add(1);
        broadcast_bytes_.fetch_add(n * (size_ - 1));
      });
  for (size_t b = 0, begin = 0; b < ends.size(); ++b) {
    const size_t first = begin;
    const std::vector<ReplicaMembers::Planned> batch(plan.begin() + ptrdiff_t(begin),
                                                     plan.begin() + ptrdiff_t(ends[b]));
    uint64_t bytes = 0;
    for (; begin < ends[b]; ++begin) bytes += sizes[begin];
    test_hook("replica.rank.batch");
    std::vector<std::shared_ptr<Slot>> slots;
    if (local->ok())
      *local = set_.read_sources(batch, writes, wait_for, &progress, copied, &slots).with_context(where());
    copied += bytes;
    std::vector<BatchSender::Piece> pieces;
    for (size_t j = 0; j < batch.size(); ++j) {
      void* src = nullptr;
      if (local->ok()) {
        got->slots[first + j] = slots[j];
        src = slots[j]->data();
      }
      pieces.push_back({src, set_.weights()[batch[j].weight].decl->nbytes});
    }
    WHARF_RETURN_IF_ERROR(sender.send(std::move(pieces)));
  }
  WHARF_RETURN_IF_ERROR(sender.finish());
  if (local->ok()) *local = progress.finish();  // the last chance to cancel: nothing is staged
  *source_bytes = h.total_bytes;
  return Status::Ok();
}

Status RankGroup::receive(Status* local, Received* got) {
  RankHeader h;
  WHARF_RETURN_IF_ERROR(transport_->broadcast(&h, sizeof h, deadline()));
  if (h.code != 0) {
    h.text[sizeof h.text - 1] = '\0';
    *local = Status(Code(h.code), where() + ": rank 0 refused the update (nothing changed on any rank): " + h.text);
    got->refused_by_rank0 = true;
    return Status::Ok();
  }
  std::vector<unsigned char> blob(h.count ? size_t(h.plan_bytes) : 0);
  if (!blob.empty()) WHARF_RETURN_IF_ERROR(transport_->broadcast(blob.data(), blob.size(), deadline()));
  std::vector<RankPlanEntry> entries;
  Status decoded = decode_rank_plan(blob.data(), blob.size(), h.count, &entries);
  if (!decoded.ok()) {
    // The sizes of what follows are unknown: this rank cannot stay in step.
    transport_->abort(rank_, decoded.message());
    return decoded;
  }
  // Fresh storage first: a rank short of memory knows before any byte arrives (and then
  // discards what it receives, to stay in step).
  got->weights.assign(entries.size(), 0);
  got->slots.assign(entries.size(), nullptr);
  for (size_t k = 0; k < entries.size() && local->ok(); ++k) {
    const RankPlanEntry& e = entries[k];
    const int w = set_.find(e.fqn);
    const ConstantDecl* d = w < 0 ? nullptr : set_.weights()[size_t(w)].decl;
    if (!d) {
      *local = NotFound(where() + ": rank 0 sent weight " + quote_name(e.fqn) + ", which this rank does not declare");
    } else if (d->dtype != e.dtype || d->shape != e.shape || d->nbytes != e.nbytes) {
      *local = InvalidArgument(where() + ": rank 0 sent weight " + quote_name(e.fqn) + " as " + dtype_name(e.dtype) +
                               " " + shape_string(e.shape) + " (" + std::to_string(e.nbytes) +
                               " bytes), this rank declares it " + dtype_name(d->dtype) + " " + shape_string(d->shape));
    } else {
      got->weights[k] = size_t(w);
      *local = set_.allocate(size_t(w), &got->slots[k]).with_context(where());
    }
  }
  // Issued without a wait per constant; the host waits once per batch_bytes_ or more issued
  // (not rank 0's batches, which need not match: a wait here only lets NCCL's queue drain),
  // and for the last one before the fold reads the bytes.
  uint64_t pending = 0;
  for (size_t k = 0; k < entries.size(); ++k) {
    void* dst = local->ok() ? got->slots[k]->data() : nullptr;
    WHARF_RETURN_IF_ERROR(transport_->broadcast_async(dst, entries[k].nbytes, deadline()));
    broadcasts_.fetch_add(1);
    broadcast_bytes_.fetch_add(entries[k].nbytes);
    test_hook("replica.rank.received");
    pending += entries[k].nbytes;
    if (pending >= batch_bytes_) {
      WHARF_RETURN_IF_ERROR(transport_->flush(deadline()));
      pending = 0;
    }
  }
  return transport_->finish(deadline());
}

Status RankGroup::free_inactive() {
  WHARF_RETURN_IF_ERROR(owner_.check(where() + ": free_inactive", "rank group"));
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
