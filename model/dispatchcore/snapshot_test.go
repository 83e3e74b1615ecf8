package dispatchcore

import (
	"math/rand/v2"
	"testing"
	"time"
)

// SnapshotGroups counts what Snapshot counts and finds each group's
// oldest queued delivery as a walk of Each does, groups empty, partly
// queued and past the last group included.
func TestSnapshotGroupsAgreesWithEach(t *testing.T) {
	const n = 12
	c := mustNew(t, Config{Workers: 3, Partners: partners(n, 0, flatPolicy(time.Second, 0))})
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 200; k++ {
		p := int32(rng.IntN(n - 1)) // partner 11 stays empty
		it := &Item{Partner: p, FirstSeen: at(time.Duration(rng.IntN(1000)) * time.Millisecond).UnixNano(),
			RunAt: at(time.Duration(rng.IntN(2000)) * time.Millisecond).UnixNano()}
		if err := c.Offer(it, t0.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	startAll(t, c, at(time.Second)) // three in flight: not queued, not counted
	now := at(time.Second)
	// Groups: partners 0-3, none, 4-5, 6-8 and 9; partners 10 (queued)
	// and 11 (empty) are past the last group.
	groupLo := []int32{0, 4, 4, 6, 9, 10}
	oldest := make([]int64, len(groupLo)-1)
	for i := range oldest {
		oldest[i] = -1 // overwritten, also for a group with nothing queued
	}
	got := c.SnapshotGroups(now, groupLo, oldest)
	if want := c.Snapshot(now); got != want {
		t.Errorf("SnapshotGroups %+v, Snapshot %+v", got, want)
	}
	want := make([]int64, len(oldest))
	c.Each(func(partner int32, first int64, _ *Item) {
		if partner >= groupLo[len(groupLo)-1] {
			return
		}
		g := 0
		for partner >= groupLo[g+1] {
			g++
		}
		if want[g] == 0 || first < want[g] {
			want[g] = first
		}
	})
	for g := range want {
		if oldest[g] != want[g] {
			t.Errorf("group %d: oldest %d, want %d", g, oldest[g], want[g])
		}
	}
	if want[1] != 0 || want[0] == 0 || want[4] == 0 {
		t.Fatalf("groups %v: want the empty one 0 and the others not", want)
	}
}
