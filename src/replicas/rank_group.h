/* SPDX-License-Identifier: Apache-2.0 */
// RankGroup: a replica group spanning processes, one container (this process's replica)
// per rank, formed from a RankId the caller distributed (rank_transport.h).
//
// An update is one collective every rank calls (rank 0 with the map, the others without):
//  1. rank 0 validates the map and broadcasts its verdict and the plan (constant indices and
//     sizes); a refusal ends the update on every rank with rank 0's error;
//  2. every rank builds its next generation outside the locks (copy-on-write: fresh slots
//     for the planned constants only); rank 0 reads the caller's sources once, in batches,
//     into its slots, and broadcasts each constant from there; receivers write the bytes
//     into their fresh slots. A rank that fails locally (out of memory, a plan unlike its
//     declarations, a cancelled progress callback on rank 0) keeps receiving (discarding)
//     or sending zeros, so the ranks stay in step;
//  3. the vote (phase one): every rank reports staged-OK or its failure; the minimum over
//     the ranks is the decision (the lowest failing rank and its status code);
//  4. phase two: on a commit every rank stages and swaps under its container's lock (runs
//     begun after see the new weights, runs begun before keep theirs); on an abort every
//     rank drops its fresh slots: nothing changed anywhere.
// A transport failure (a peer that closed, a wait past the timeout) aborts the transport,
// fails the update on this rank naming the rank at fault, and drops the fresh slots; the
// group then refuses further updates (FAILED_PRECONDITION) and serves the old generation.
//
// The container refuses writes of its own while it is a rank (as in-process replicas), and
// runs never wait for the update: the container's lock is taken only for the stage and swap.
// A container in a weight store brings its whole store, and derived constants are folded on
// every rank after its bytes arrived and before the vote (replica_members.h), so a fold that
// fails anywhere fails the update everywhere with nothing changed. The bytes on the wire are
// rank_protocol.h's.
// Threads: `op_mu_` serialises the group's calls; a group call from inside the group's own
// update (a fold callback on the updating thread) answers FAILED_PRECONDITION. On rank 0 an
// update makes its step-2 broadcasts from a sending thread of its own (rank_group.cpp's
// BatchSender), joined before the update goes on to the vote.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
#include "constants/member_set.h"
#include "core/sync.h"
#include "core/update_owner.h"
#include "replicas/rank_transport.h"
#include "replicas/replica_group.h"
#include "replicas/replica_members.h"

namespace wharf {

class RankGroup {
 public:
  // Forms rank `rank` of a group of `size` processes from `id` (every rank passes the same id
  // and size). Blocks until every rank joined or `timeout` passed. Errors: INVALID_ARGUMENT
  // (size 0, rank >= size, an id not made for this backend, mismatched sizes/declarations or
  // a rank given twice: the rank named where the transport can), UNSUPPORTED (CUDA without
  // a usable NCCL), FAILED_PRECONDITION (the container (or a member of its store) is in
  // a group already or has an update staged), BUSY (the container is being updated),
  // ALREADY_EXISTS (rank 0: the id is in use), IO_ERROR (a rank missing at the timeout).
  static Status create(std::shared_ptr<Container> container, const RankId& id, uint32_t rank, uint32_t size,
                       std::chrono::milliseconds timeout, std::shared_ptr<RankGroup>* out);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  // The update and two-phase swap above. `map`: rank 0's sources (required there), null on
  // every other rank. Only the inactive target; `wait_stream` and `progress` apply on rank 0.
  // `refused`: this rank's argument error, found before the call; it takes part as a rank
  // that failed (so the others fail at once naming it) and returns that error.
  Status update(const ConstantMap* map, const UpdateOptions& opts, const Status& refused = Status::Ok())
      WHARF_EXCLUDES(op_mu_);
  // Drops this rank's inactive generation (the rollback one a committed update left).
  Status free_inactive() WHARF_EXCLUDES(op_mu_);

  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  ReplicaGroupStats stats() const;
  // For tests: bytes per batch rank 0 copies before it broadcasts them.
  void set_batch_bytes_for_test(uint64_t bytes) { batch_bytes_ = bytes; }

 private:
  RankGroup() = default;
  // What steps 1-2 produced on this rank: the weights written and their fresh storage here.
  struct Received {
    bool refused_by_rank0 = false;  // rank 0 refused before sending anything: no vote follows
    std::vector<size_t> weights;    // ReplicaMembers weight indices, in plan order
    std::vector<std::shared_ptr<Slot>> slots;
  };
  Status update_serialised(const ConstantMap* map, const UpdateOptions& opts, const Status& refused)
      WHARF_REQUIRES(op_mu_);
  // Steps 1-2 on rank 0 / on a receiver: *local is this rank's own failure (the ranks go on).
  Status send(const ConstantMap* map, const UpdateOptions& opts, ReplicaMembers::Writes* writes, Status* local,
              Received* got, uint64_t* source_bytes) WHARF_REQUIRES(op_mu_);
  Status receive(Status* local, Received* got) WHARF_REQUIRES(op_mu_);
  // Rank 0 waits `timeout_` for a peer; a peer waits twice that for rank 0, which may itself
  // have waited `timeout_` for a stuck rank before it relays that rank's name (so every
  // survivor names the rank at fault, not rank 0).
  RankClock::time_point deadline() const { return RankClock::now() + (rank_ == 0 ? timeout_ : 2 * timeout_); }
  std::string where() const;

  std::shared_ptr<Container> container_;
  ReplicaMembers set_;  // the container, or its weight store's members (store entries: under op_mu_)
  MemberSet members_;   // set_'s containers, staged and swapped through it
  std::unique_ptr<RankTransport> transport_;
  uint32_t rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_{30000};
  Mutex op_mu_;
  UpdateOwner owner_;                  // the thread inside update (a fold callback's calls are refused)
  uint64_t batch_bytes_ = 1ull << 30;  // as ReplicaGroup's (its comment says why)
  std::atomic<uint64_t> updates_{0}, swaps_{0}, source_bytes_{0}, broadcast_bytes_{0}, broadcasts_{0};
};

}  // namespace wharf
