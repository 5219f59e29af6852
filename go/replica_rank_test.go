// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// ---- replica groups across processes (host backend; two ranks in one process, each with
// its own runtime and container, meeting over the host transport's Unix socket) ----------

func TestReplicaGroupIDRoundTripsThroughBytes(t *testing.T) {
	rt := hostRuntime(t)
	id, err := NewReplicaGroupID(rt)
	must(t, err)
	b := id.Bytes()
	if len(b) != ReplicaGroupIDSize || bytes.Equal(b, make([]byte, ReplicaGroupIDSize)) {
		t.Fatalf("id bytes: %d, all zero %v", len(b), bytes.Equal(b, make([]byte, ReplicaGroupIDSize)))
	}
	back, err := ReplicaGroupIDFromBytes(b)
	must(t, err)
	if back != id {
		t.Fatal("the id did not round-trip through its bytes")
	}
	b[0] ^= 0xff // Bytes is a copy
	if back != id {
		t.Fatal("Bytes aliases the id")
	}
	other, err := NewReplicaGroupID(rt)
	must(t, err)
	if other == id {
		t.Fatal("two ids are equal")
	}
	for _, n := range []int{0, 255, 257} {
		_, err = ReplicaGroupIDFromBytes(make([]byte, n))
		wantCode(t, err, ErrInvalidArgument, "256 bytes")
	}
}

func TestReplicaGroupRankArgumentErrors(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainerFromMap(rt, replicaMap(t, 1), "solo")
	must(t, err)
	defer c.Close()
	id, err := NewReplicaGroupID(rt)
	must(t, err)

	_, err = NewReplicaGroupID(nil)
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewReplicaGroupRank(nil, id, 0, 1, nil)
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewReplicaGroupRank(c, id, -1, 1, nil)
	wantCode(t, err, ErrInvalidArgument, "rank -1")
	_, err = NewReplicaGroupRank(c, id, 0, 0, nil) // the C check
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewReplicaGroupRank(c, id, 2, 2, nil) // the C check
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewReplicaGroupRank(c, ReplicaGroupID{}, 0, 1, nil) // not made by NewReplicaGroupID
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewReplicaGroupRank(c, id, 0, 1, &RankOptions{Timeout: -time.Second})
	wantCode(t, err, ErrInvalidArgument, "negative")
	// Nothing joined: the container still updates on its own.
	must(t, c.Update(replicaMap(t, 1), nil))
	must(t, c.Swap())

	// Rank 0 of two with nobody joining fails within the timeout, naming the missing rank.
	lone, err := NewReplicaGroupID(rt)
	must(t, err)
	_, err = NewReplicaGroupRank(c, lone, 0, 2, &RankOptions{Timeout: 300 * time.Millisecond})
	wantCode(t, err, ErrIOError, "rank(s) 1 of 2")

	// A group of one rank: the in-process calls refuse, UpdateRanks wants a map on rank 0.
	g, err := NewReplicaGroupRank(c, id, 0, 1, nil)
	must(t, err)
	if g.NumReplicas() != 1 {
		t.Fatalf("NumReplicas %d", g.NumReplicas())
	}
	wantCode(t, g.Update(replicaMap(t, 2), nil), ErrFailedPrecondition)
	wantCode(t, g.Swap(), ErrFailedPrecondition)
	wantCode(t, g.UpdateRanks(nil, nil), ErrInvalidArgument)
	wantCode(t, c.Update(replicaMap(t, 2), nil), ErrFailedPrecondition)
	_, err = NewReplicaGroupRank(c, id, 0, 1, nil)
	wantCode(t, err, ErrFailedPrecondition) // in a group already
	must(t, g.UpdateRanks(replicaMap(t, 2), nil))
	if w, _ := readRun[float32](t, c, "w"); w[0] != 2 {
		t.Fatalf("one-rank update: %v", w)
	}
	// A group made by NewReplicaGroup refuses UpdateRanks.
	must(t, g.Close())
	wantClosed(t, g.UpdateRanks(replicaMap(t, 3), nil))
	inproc, err := NewReplicaGroup(c)
	must(t, err)
	defer inproc.Close()
	wantCode(t, inproc.UpdateRanks(replicaMap(t, 3), nil), ErrFailedPrecondition)
	must(t, inproc.Close())

	// A closed container or map.
	closedMap := replicaMap(t, 3)
	must(t, closedMap.Close())
	g, err = NewReplicaGroupRank(c, id, 0, 1, nil)
	must(t, err)
	defer g.Close()
	wantClosed(t, g.UpdateRanks(closedMap, nil))
	must(t, g.Close())
	must(t, c.Close())
	_, err = NewReplicaGroupRank(c, id, 0, 1, nil)
	wantClosed(t, err)
}

func TestReplicaGroupTwoRanksUpdateTogether(t *testing.T) {
	// Each rank on its own runtime and container, as it would be in its own process; the id
	// goes to rank 1 as bytes, as through a control plane.
	c0, err := NewContainerFromMap(hostRuntime(t), replicaMap(t, 1), "rank0")
	must(t, err)
	defer c0.Close()
	c1, err := NewContainerFromMap(hostRuntime(t), replicaMap(t, 1), "rank1")
	must(t, err)
	defer c1.Close()
	id, err := NewReplicaGroupID(hostRuntime(t))
	must(t, err)
	wire := id.Bytes()

	opts := &RankOptions{Timeout: 20 * time.Second}
	type joined struct {
		g   *ReplicaGroup
		err error
	}
	rank1 := make(chan joined, 1)
	update1 := make(chan error, 1)
	go func() {
		id1, err := ReplicaGroupIDFromBytes(wire)
		if err != nil {
			rank1 <- joined{nil, err}
			return
		}
		g, err := NewReplicaGroupRank(c1, id1, 1, 2, opts)
		rank1 <- joined{g, err}
	}()
	g0, err := NewReplicaGroupRank(c0, id, 0, 2, opts)
	must(t, err)
	defer g0.Close()
	j := <-rank1
	must(t, j.err)
	defer j.g.Close()
	if g0.NumReplicas() != 2 || j.g.NumReplicas() != 2 {
		t.Fatalf("sizes %d, %d", g0.NumReplicas(), j.g.NumReplicas())
	}
	go func() { update1 <- j.g.UpdateRanksContext(context.Background(), nil, nil) }()

	must(t, g0.UpdateRanks(replicaMap(t, 2), &UpdateOptions{RequireFull: true}))
	must(t, <-update1)
	for _, c := range []*Container{c0, c1} {
		if w, _ := readRun[float32](t, c, "w"); w[0] != 2 || w[3] != 2 {
			t.Fatalf("%s serves w = %v after the rank update", c.Name(), w)
		}
		if n, _ := readRun[int32](t, c, "n"); n[1] != -2 {
			t.Fatalf("%s serves n = %v after the rank update", c.Name(), n)
		}
	}
	s0, err := g0.Stats()
	must(t, err)
	s1, err := j.g.Stats()
	must(t, err)
	if s0.NumReplicas != 2 || s0.SourceBytes != 24 || s0.BroadcastBytes == 0 || s1.BroadcastBytes != s0.BroadcastBytes {
		t.Fatalf("stats: rank 0 %+v, rank 1 %+v", s0, s1)
	}
}
