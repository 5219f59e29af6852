/* SPDX-License-Identifier: Apache-2.0 */
// ReplicaGroup: the same container on several devices of a host (data-parallel replicas),
// updated from one set of sources and swapped together.
//
// An update reads its sources once: they go through replica 0's transfer engine (the
// staging ring for pageable memory) into fresh slots of replica 0's next generation; a
// broadcaster (NCCL on CUDA) then fills the same constants' fresh slots on every other
// replica. Only when every replica's generation is complete are they staged, all under all
// replicas' `mu_`s; a swap publishes them the same way. So a run begun (on any replica)
// after a group swap returns sees the new weights, a run begun before keeps the generation
// it pinned, no run sees a mix, and a failure anywhere (out of memory on one replica, a
// broadcast error) stages nothing on any replica: the fresh slots are dropped.
//
// Members are written only through the group: a member's own update, bind, swap and
// free_inactive answer FAILED_PRECONDITION while it is in a group (Container checks
// `replica_group_`), so the replicas move in lockstep and the group needs no admission lock
// on them beyond its own serialisation.
//
// Weight stores and derived constants (src/replicas/replica_members.h): a grouped store
// member brings its whole store (replica r is every member of container r's store), and the
// fold callback runs on every replica over its own next generation, after the broadcast and
// before anything is staged.
//
// Locking: `op_mu_` serialises group calls (they wait for each other, as store calls do);
// under it, MemberSet takes the members' `mu_`s as one lock set (address order), only for
// pointer operations (and, at a swap, each grouped store's `mu_` after them, to move its
// entries). A group call from inside the group's own update (a fold callback on the
// updating thread) answers FAILED_PRECONDITION instead of waiting for itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
#include "constants/member_set.h"
#include "core/sync.h"
#include "core/update_owner.h"
#include "replicas/broadcaster.h"
#include "replicas/replica_members.h"

namespace wharf {

struct ReplicaGroupStats {
  uint32_t num_replicas = 0;
  int nccl_version = 0;          // NCCL's version when the group broadcasts with it, else 0
  uint64_t updates = 0;          // group updates that staged
  uint64_t swaps = 0;            // group swaps (rollbacks included)
  uint64_t source_bytes = 0;     // bytes read from update sources (once per update)
  uint64_t broadcast_bytes = 0;  // bytes written into replicas 1..N-1 from replica 0
  uint64_t broadcasts = 0;       // broadcaster calls (NCCL groups, or host copies)
};

class SlotAllocators;

class ReplicaGroup {
 public:
  // Groups `replicas` (>= 1 containers, each on its own runtime and device, declared alike:
  // the same constants in the same order with the same dtype, shape and placement, and the
  // same states). `broadcaster`: null chooses by backend (host copies; NCCL for CUDA, which
  // a group of one CUDA replica uses when it can be loaded and does without otherwise).
  // A store member stands for its whole store (replica_members.h): the stores must have as
  // many members, declared alike member by member.
  // Errors: INVALID_ARGUMENT (no replicas, a container twice, two on one device or runtime,
  // mixed backends, declarations or store sizes that differ: the first difference named),
  // UNSUPPORTED (NCCL missing for N >= 2 CUDA replicas), FAILED_PRECONDITION (a container
  // already in a group, or with an update staged), BUSY (a container is being updated).
  // Nothing changes on error.
  static Status create(std::vector<std::shared_ptr<Container>> replicas, std::unique_ptr<Broadcaster> broadcaster,
                       std::shared_ptr<ReplicaGroup>* out);
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // Stages `map` in every replica (see above). Validated against the declarations first;
  // only the inactive target (in place: UNSUPPORTED); `wait_stream` orders the reads of
  // replica 0's copy. Updates accumulate until the group swap.
  Status update(const ConstantMap& map, const UpdateOptions& opts) WHARF_EXCLUDES(op_mu_);
  // Swaps every replica at once (publishes what a group update staged, or rolls back to the
  // previous generation when nothing is staged); refused everywhere if any replica cannot.
  Status swap() WHARF_EXCLUDES(op_mu_);
  // Drops every replica's inactive generation (a staged update, or the rollback one).
  Status free_inactive() WHARF_EXCLUDES(op_mu_);

  ReplicaGroupStats stats() const;
  // For tests: the bytes per full broadcast batch (update_batches.h; several batches
  // exercise the pipeline).
  void set_broadcast_batch_bytes_for_test(uint64_t bytes) { batch_bytes_ = bytes; }
  size_t size() const { return replicas_.size(); }
  const std::shared_ptr<Container>& replica(size_t i) const { return replicas_[i]; }

 private:
  ReplicaGroup() = default;
  Status check_declarations() const;
  std::string replica_name(size_t r) const;
  std::string member_name(size_t r, size_t m) const;
  Status update_serialised(const ConstantMap& map, const UpdateOptions& opts) WHARF_REQUIRES(op_mu_);
  // Copies the planned sources into replica 0's fresh storage and from there into every
  // other replica's (update_batches(batch_bytes_), broadcast overlapping the next copy);
  // (*slots)[r][k] is plan[k]'s storage on replica r (for r >= 1 allocated meanwhile by
  // `allocators`: a batch waits for its own).
  Status fill(const std::vector<ReplicaMembers::Planned>& plan, std::vector<ReplicaMembers::Writes>* writes,
              std::vector<std::vector<std::shared_ptr<Slot>>>* slots, SlotAllocators* allocators,
              const std::vector<Event*>& wait_for, Progress* progress, uint64_t* broadcast_bytes)
      WHARF_REQUIRES(op_mu_);

  std::vector<std::shared_ptr<Container>> replicas_;  // the grouped containers, one per replica
  // What each replica stands for (its container, or its weight store's members). Fixed at
  // create, except the store entries it keeps for the next swap: those change only under
  // op_mu_ (not annotated: the swap's publish runs in a callback under the members' locks).
  std::vector<ReplicaMembers> sets_;
  std::vector<size_t> offsets_;               // replica r's members start at members_[offsets_[r]]
  MemberSet members_;                         // every replica's members, staged and swapped as one
  std::unique_ptr<Broadcaster> broadcaster_;  // null: one replica, nothing to broadcast
  Mutex op_mu_;                               // one group call at a time
  UpdateOwner owner_;                         // the thread inside update (a fold callback's calls are refused)
  // Full broadcast batch (see fill). Each batch's copy into replica 0 ends by draining the
  // copy engine, so fewer, larger batches lose less (on 2 x H200, 256 MiB batches made a
  // group update 1.205x one GPU's update); the last batch's broadcast is the tail the copy
  // cannot hide, so the batches shrink toward the end (update_batches.h).
  uint64_t batch_bytes_ = 1ull << 30;
  std::atomic<uint64_t> updates_{0}, swaps_{0}, source_bytes_{0}, broadcast_bytes_{0}, broadcasts_{0};
};

}  // namespace wharf
