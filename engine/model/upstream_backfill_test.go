package model

import (
	"testing"
	"time"
)

// TestUpstreamBackfill_Covers: a walk covers the kinds before its own, and the records
// of its own kind up to the last it logged; nothing else. A finished walk or none covers
// everything.
func TestUpstreamBackfill_Covers(t *testing.T) {
	t0 := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	older, last, newer := NewIDAt(t0), NewIDAt(t0.Add(time.Second)), NewIDAt(t0.Add(2*time.Second))
	b := NewUpstreamBackfill(At(t0))
	for _, c := range []struct {
		kind, id string
		want     bool
	}{{ChangeEvent, older, false}, {ChangeDispatch, older, false}, {ChangeMission, older, false}} {
		if got := b.Covers(c.kind, c.id); got != c.want {
			t.Errorf("fresh walk: Covers(%s, %s) = %v", c.kind, c.id, got)
		}
	}
	b.Kind, b.After = ChangeDispatch, last
	for _, c := range []struct {
		kind, id string
		want     bool
	}{{ChangeEvent, newer, true}, {ChangeDispatch, older, true}, {ChangeDispatch, last, true},
		{ChangeDispatch, newer, false}, {ChangeMission, older, false}} {
		if got := b.Covers(c.kind, c.id); got != c.want {
			t.Errorf("walking dispatches after %s: Covers(%s, %s) = %v, want %v", last, c.kind, c.id, got, c.want)
		}
	}
	b.NextKind()
	if b.Kind != ChangeMission || b.After != "" || b.Covers(ChangeMission, older) || !b.Covers(ChangeDispatch, newer) {
		t.Fatalf("after NextKind: %+v", b)
	}
	b.NextKind()
	var none *UpstreamBackfill
	if b.Walking() || !b.Covers(ChangeMission, newer) || none.Walking() || !none.Covers(ChangeEvent, older) {
		t.Fatalf("a finished walk, or none, must cover everything: %+v", b)
	}
	b.Through = 7
	if s := b.Status(6); s.State != BackfillSending {
		t.Fatalf("walked, not acknowledged: %+v", s)
	}
	if s := b.Status(7); s.State != BackfillDone || s.Kind != nil || none.Status(0) != nil {
		t.Fatalf("status: %+v", s)
	}
}
