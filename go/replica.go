// SPDX-License-Identifier: Apache-2.0

package wharf

// Replica groups: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is defined in this
// file's preamble only); every declaration here may change in any minor release.

/*
#define WHARF_EXPERIMENTAL
#include <stdlib.h>
#include <string.h>
#include "helpers.h"

static wharf_status* wharf_go_replica_update(wharf_replica_group* g, const wharf_constant_map* map,
                                             const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_replica_group_update(g, map, &o);
}

static wharf_status* wharf_go_replica_update_ranks(wharf_replica_group* g, const wharf_constant_map* map,
                                                   const wharf_go_update_args* args) {
  wharf_update_options o;
  wharf_go_update_options(&o, args);
  return wharf_replica_group_update_ranks(g, map, &o);
}

static wharf_status* wharf_go_replica_create_rank(wharf_container* c, const unsigned char* id, uint32_t rank,
                                                  uint32_t size, uint32_t timeout_ms, wharf_replica_group** out) {
  wharf_replica_group_id gid;
  memcpy(gid.internal, id, sizeof gid.internal);
  wharf_replica_group_rank_options o;
  wharf_replica_group_rank_options_init(&o);
  o.timeout_ms = timeout_ms;
  return wharf_replica_group_create_rank(c, &gid, rank, size, &o, out);
}
*/
import "C"

import (
	"context"
	"math"
	"runtime"
	"time"
	"unsafe"
)

// ReplicaGroup is the same model on several devices of one host (data-parallel replicas,
// wharf_replica_group): one Container per device, each on a Runtime of its own, updated
// together (the sources are read once: copied into replica 0, then broadcast with NCCL on
// CUDA, copied between replicas on the host backend) and swapped together: a run begun on
// any replica after Swap returns sees the new weights, and no run sees old weights on one
// replica beside new ones on another. A failure anywhere stages nothing on any replica.
//
// While a container is in a group it is written only through the group: its own Update,
// UpdateFromFile, BindTensor, Swap and FreeInactive fail with ErrFailedPrecondition. Runs
// and sessions of each replica are used as usual. Close the group to let the containers
// go their own ways again. A ReplicaGroup is safe for concurrent use (group calls run one
// at a time). It keeps its containers alive.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ReplicaGroup struct {
	h        handle
	replicas []*Container
}

// ReplicaGroupStats are a group's counters (wharf_replica_group_stats).
type ReplicaGroupStats struct {
	NumReplicas    int
	NCCLVersion    int    // ncclGetVersion when the group broadcasts with NCCL; 0 otherwise
	NumUpdates     uint64 // group updates that staged
	NumSwaps       uint64 // group swaps, rollbacks included
	SourceBytes    uint64 // bytes read from update sources (once per update)
	BroadcastBytes uint64 // bytes written into replicas 1..N-1 from replica 0
	NumBroadcasts  uint64 // broadcast rounds (NCCL group calls, or host copies)
}

// NewReplicaGroup groups containers (at least one), each on its own runtime (on CUDA, each
// on a different GPU), declared alike: the same constants in the same order with the same
// FQN, dtype, shape and placement, and the same states. They should hold the same weights,
// or none (an update with RequireFull makes them equal). Errors: ErrInvalidArgument (no
// containers, one given twice, two on one runtime, mixed backends, declarations that
// differ: the first difference is named), ErrUnsupported (NCCL cannot be loaded for a CUDA
// group of two or more), ErrFailedPrecondition
// (a container already in a group, or with an update staged and not swapped), ErrBusy (a
// container is being updated), ErrDeviceError. Nothing changes on error.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func NewReplicaGroup(containers ...*Container) (*ReplicaGroup, error) {
	const what = "NewReplicaGroup"
	if len(containers) == 0 {
		return nil, invalidArgument("%s: no containers", what)
	}
	mem := C.calloc(C.size_t(len(containers)), C.size_t(unsafe.Sizeof(uintptr(0))))
	if mem == nil {
		return nil, &Error{Code: CodeOutOfMemory, Message: what + ": the container array"}
	}
	defer C.free(mem)
	ptrs := unsafe.Slice((**C.wharf_container)(mem), len(containers))
	for i, c := range containers {
		if c == nil {
			for _, held := range containers[:i] {
				held.h.release()
			}
			return nil, invalidArgument("%s: container %d is nil", what, i)
		}
		p, err := c.h.acquire(what)
		if err != nil {
			for _, held := range containers[:i] {
				held.h.release()
			}
			return nil, err
		}
		ptrs[i] = (*C.wharf_container)(p)
	}
	var out *C.wharf_replica_group
	err := statusError(C.wharf_replica_group_create(&ptrs[0], C.size_t(len(containers)), &out))
	// The C group holds its own references to the containers.
	for _, c := range containers {
		c.h.release()
		runtime.KeepAlive(c)
	}
	if err != nil {
		return nil, err
	}
	g := &ReplicaGroup{replicas: append([]*Container{}, containers...)}
	g.h.init("replica group", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		C.wharf_replica_group_free((*C.wharf_replica_group)(p))
		return nil
	})
	runtime.SetFinalizer(g, func(g *ReplicaGroup) { leaked(&g.h, "Close") })
	return g, nil
}

// Close frees the group: its containers leave it and may be updated and swapped on their
// own again (their handles stay valid). Close is idempotent (and a no-op on a nil
// *ReplicaGroup) and waits for no call: the group is freed when the last call in progress
// returns.
func (g *ReplicaGroup) Close() error {
	if g == nil {
		return nil
	}
	_, err := g.h.close()
	return err
}

// NumReplicas returns the number of replicas (0 once closed).
func (g *ReplicaGroup) NumReplicas() int {
	p, err := g.h.acquire("ReplicaGroup.NumReplicas")
	if err != nil {
		return 0
	}
	defer g.h.release()
	return int(C.wharf_replica_group_num_replicas((*C.wharf_replica_group)(p)))
}

// Replicas returns the containers, in the order given to NewReplicaGroup (replica 0 first).
func (g *ReplicaGroup) Replicas() []*Container { return append([]*Container{}, g.replicas...) }

// Update stages m in the inactive generation of every replica, as Container.Update would on
// each (validation first: a bad map changes nothing), reading the sources once; Swap
// publishes. Only TargetInactive is supported (ErrUnsupported otherwise). Fold is required
// where a written weight reaches a container with derived constants, and runs on every
// replica (a store member brings its whole store: see wharf.h). Errors: those of Container.Update, the replica
// named; ErrDeviceError (NCCL). On any error no replica changes.
func (g *ReplicaGroup) Update(m *ConstantMap, opts *UpdateOptions) error {
	return g.update("ReplicaGroup.Update", context.Background(), m, opts)
}

// UpdateContext is Update that ctx can cancel (see Container.UpdateContext): a cancelled
// group update stages nothing on any replica. Progress counts each source byte once,
// however many replicas.
func (g *ReplicaGroup) UpdateContext(ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	return g.update("ReplicaGroup.UpdateContext", ctx, m, opts)
}

func (g *ReplicaGroup) update(what string, ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	if err := checkNotInStoreFold(&g.h, what); err != nil {
		return err
	}
	mp, err := m.read(what)
	if err != nil {
		return err
	}
	defer m.done()
	gp, err := g.h.acquire(what)
	if err != nil {
		return err
	}
	defer g.h.release()
	// The group's handle as the fold's "store": group calls from the fold goroutine are
	// refused (checkNotInStoreFold) instead of waiting for the update that runs the fold.
	err = withUpdate(what, ctx, &g.h, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_replica_update((*C.wharf_replica_group)(gp), mp, args)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(g)
	return err
}

// Swap publishes what group updates staged on every replica at once or, when nothing is
// staged, rolls every replica back to its previous generation. Errors:
// ErrFailedPrecondition (nothing to swap in, the replica named; nothing is swapped).
func (g *ReplicaGroup) Swap() error {
	return g.call("ReplicaGroup.Swap", func(p *C.wharf_replica_group) *C.wharf_status {
		return C.wharf_replica_group_swap(p)
	})
}

// FreeInactive frees every replica's inactive generation (a staged update, or the
// rollback generation); runs in flight keep what they pinned.
func (g *ReplicaGroup) FreeInactive() error {
	return g.call("ReplicaGroup.FreeInactive", func(p *C.wharf_replica_group) *C.wharf_status {
		return C.wharf_replica_group_free_inactive(p)
	})
}

func (g *ReplicaGroup) call(what string, fn func(*C.wharf_replica_group) *C.wharf_status) error {
	if err := checkNotInStoreFold(&g.h, what); err != nil {
		return err
	}
	p, err := g.h.acquire(what)
	if err != nil {
		return err
	}
	defer g.h.release()
	err = statusError(fn((*C.wharf_replica_group)(p)))
	runtime.KeepAlive(g)
	return err
}

// Stats returns the group's counters.
func (g *ReplicaGroup) Stats() (ReplicaGroupStats, error) {
	p, err := g.h.acquire("ReplicaGroup.Stats")
	if err != nil {
		return ReplicaGroupStats{}, err
	}
	defer g.h.release()
	s := C.wharf_replica_group_stats{struct_size: C.sizeof_wharf_replica_group_stats}
	err = statusError(C.wharf_replica_group_get_stats((*C.wharf_replica_group)(p), &s))
	runtime.KeepAlive(g)
	if err != nil {
		return ReplicaGroupStats{}, err
	}
	return ReplicaGroupStats{
		NumReplicas:    int(s.num_replicas),
		NCCLVersion:    int(s.nccl_version),
		NumUpdates:     uint64(s.num_updates),
		NumSwaps:       uint64(s.num_swaps),
		SourceBytes:    uint64(s.source_bytes),
		BroadcastBytes: uint64(s.broadcast_bytes),
		NumBroadcasts:  uint64(s.num_broadcasts),
	}, nil
}

// ---- groups across processes: one rank per process (wharf_replica_group_create_rank) ----

// ReplicaGroupIDSize is the size of a ReplicaGroupID in bytes (wharf_replica_group_id).
const ReplicaGroupIDSize = 256

// ReplicaGroupID is the opaque id a group spanning processes is formed from: plain bytes the
// caller sends to every rank through its own control plane (Wharf runs no rendezvous
// service). One id forms one group.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ReplicaGroupID [ReplicaGroupIDSize]byte

// NewReplicaGroupID makes a fresh id for a group whose ranks use rt's backend (call it in
// one process, usually rank 0's, and send Bytes to the others). On the host backend the id
// names an abstract Unix-domain socket rank 0 listens on (a test stand-in for NCCL between
// processes of one host); on CUDA it carries an ncclUniqueId. Errors: ErrUnsupported (CUDA:
// NCCL cannot be loaded or is too old), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func NewReplicaGroupID(rt *Runtime) (ReplicaGroupID, error) {
	const what = "NewReplicaGroupID"
	if rt == nil {
		return ReplicaGroupID{}, invalidArgument("%s: runtime is nil", what)
	}
	p, err := rt.h.acquire(what)
	if err != nil {
		return ReplicaGroupID{}, err
	}
	defer rt.h.release()
	var out C.wharf_replica_group_id
	err = statusError(C.wharf_replica_group_get_unique_id((*C.wharf_runtime)(p), &out))
	runtime.KeepAlive(rt)
	if err != nil {
		return ReplicaGroupID{}, err
	}
	var id ReplicaGroupID
	copy(id[:], C.GoBytes(unsafe.Pointer(&out.internal[0]), ReplicaGroupIDSize))
	return id, nil
}

// ReplicaGroupIDFromBytes rebuilds an id from the bytes another rank sent (Bytes). Errors:
// ErrInvalidArgument (b is not ReplicaGroupIDSize bytes long). Whether the bytes are an id
// is checked by NewReplicaGroupRank.
func ReplicaGroupIDFromBytes(b []byte) (ReplicaGroupID, error) {
	var id ReplicaGroupID
	if len(b) != ReplicaGroupIDSize {
		return id, invalidArgument("ReplicaGroupIDFromBytes: an id is %d bytes, got %d", ReplicaGroupIDSize, len(b))
	}
	copy(id[:], b)
	return id, nil
}

// Bytes returns a copy of the id's bytes, to send to the other ranks.
func (id ReplicaGroupID) Bytes() []byte { return append([]byte(nil), id[:]...) }

// RankOptions are the options of NewReplicaGroupRank (wharf_replica_group_rank_options).
type RankOptions struct {
	// Timeout bounds forming the group and every wait of an update (whole milliseconds,
	// rounded up); 0 means the default, 30 s.
	Timeout time.Duration
}

// NewReplicaGroupRank makes c (this process's replica; the group keeps it alive) rank rank
// of a group of size processes formed from id (the same id and size on every rank; opts may
// be nil). It blocks until every rank has joined, or fails after the timeout. The ranks'
// containers must be declared alike. While in the group c refuses writes of its own; runs
// on it are used as usual. Of the group's methods, UpdateRanks, UpdateRanksContext,
// FreeInactive, NumReplicas (the size), Stats (this rank's) and Close apply; Update and
// Swap fail with ErrFailedPrecondition. Close the group to leave it (peers still in an
// update fail naming this rank). Errors (nothing changes): ErrInvalidArgument (nil c, a
// negative rank, size 0, rank >= size, an id not made for this backend, sizes that differ
// between ranks, a rank given twice, declarations unlike rank 0's), ErrUnsupported (CUDA
// without a usable NCCL), ErrFailedPrecondition (c is
// in a group already, or has an update staged), ErrBusy, ErrAlreadyExists (rank 0: the id
// is in use), ErrIOError (a rank did not join within the timeout, named), ErrDeviceError.
//
// Two ranks may live in one process (each with its own runtime and container): call
// NewReplicaGroupRank of each from its own goroutine, since each blocks until all joined.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func NewReplicaGroupRank(c *Container, id ReplicaGroupID, rank, size int, opts *RankOptions) (*ReplicaGroup, error) {
	const what = "NewReplicaGroupRank"
	if c == nil {
		return nil, invalidArgument("%s: container is nil", what)
	}
	if rank < 0 || uint64(rank) > math.MaxUint32 {
		return nil, invalidArgument("%s: rank %d is out of range", what, rank)
	}
	if size < 0 || uint64(size) > math.MaxUint32 {
		return nil, invalidArgument("%s: size %d is out of range", what, size)
	}
	var timeoutMs uint64
	if opts != nil {
		if opts.Timeout < 0 {
			return nil, invalidArgument("%s: timeout %v is negative", what, opts.Timeout)
		}
		timeoutMs = uint64((opts.Timeout + time.Millisecond - 1) / time.Millisecond)
		if timeoutMs > math.MaxUint32 {
			return nil, invalidArgument("%s: timeout %v is over %d ms", what, opts.Timeout, uint32(math.MaxUint32))
		}
	}
	p, err := c.h.acquire(what)
	if err != nil {
		return nil, err
	}
	// The id goes by C memory: cgocheck=2 wants no Go pointer kept, and C copies it anyway.
	cid := C.CBytes(id[:])
	defer C.free(cid)
	var out *C.wharf_replica_group
	err = statusError(C.wharf_go_replica_create_rank((*C.wharf_container)(p), (*C.uchar)(cid), C.uint32_t(rank),
		C.uint32_t(size), C.uint32_t(timeoutMs), &out))
	// The C group holds its own reference to the container.
	c.h.release()
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	g := &ReplicaGroup{replicas: []*Container{c}}
	g.h.init("replica group", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		C.wharf_replica_group_free((*C.wharf_replica_group)(p))
		return nil
	})
	runtime.SetFinalizer(g, func(g *ReplicaGroup) { leaked(&g.h, "Close") })
	return g, nil
}

// UpdateRanks is one update of every rank of a group made by NewReplicaGroupRank, with a
// two-phase swap: every rank calls it, rank 0 with m (its sources, read once), every other
// rank with m nil (they receive). Only TargetInactive applies; RequireFull, WaitStream and
// Progress apply on rank 0. It returns nil on every rank once the new weights are published
// everywhere (runs begun after see them). On failure nothing changes anywhere: a refused
// map fails every rank with rank 0's code; a rank that fails to stage fails with its own
// error and the others with the same code naming it; a rank that dies or times out fails
// every survivor with ErrIOError naming it, and the group is aborted (later calls fail with
// ErrFailedPrecondition; close it and form a new one). Other errors: ErrInvalidArgument (m
// not nil on a rank other than 0; nil on rank 0), ErrFailedPrecondition (a group made by
// NewReplicaGroup).
func (g *ReplicaGroup) UpdateRanks(m *ConstantMap, opts *UpdateOptions) error {
	return g.updateRanks("ReplicaGroup.UpdateRanks", context.Background(), m, opts)
}

// UpdateRanksContext is UpdateRanks that ctx can cancel (on rank 0, through the progress
// callback: every rank then fails with ErrCancelled and nothing changes anywhere).
func (g *ReplicaGroup) UpdateRanksContext(ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	return g.updateRanks("ReplicaGroup.UpdateRanksContext", ctx, m, opts)
}

func (g *ReplicaGroup) updateRanks(what string, ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	if err := checkNotInStoreFold(&g.h, what); err != nil {
		return err
	}
	var mp *C.wharf_constant_map
	if m != nil {
		var err error
		if mp, err = m.read(what); err != nil {
			return err
		}
		defer m.done()
	}
	gp, err := g.h.acquire(what)
	if err != nil {
		return err
	}
	defer g.h.release()
	err = withUpdate(what, ctx, &g.h, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_replica_update_ranks((*C.wharf_replica_group)(gp), mp, args)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(g)
	return err
}
