package model

import (
	"slices"
	"testing"
	"time"
)

// TestMergeMoves_Converges: two copies of a mission that each recorded moves converge to
// the same status, times, history and implied states whichever merges first; a fact is
// kept once; COMPLETED against FAILED picks the earlier field time on both, keeps both
// facts and marks the conflict.
func TestMergeMoves_Converges(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(min int) Time { return At(t0.Add(time.Duration(min) * time.Minute)) }
	base := func() *Mission {
		return &Mission{ID: "m", Status: MissionCreated, History: []MissionMove{{To: MissionCreated, At: at(0), Actor: "d", Source: "api"}}}
	}
	site, central := base(), base()
	siteMoves := []MissionMove{{From: MissionCreated, To: MissionSent, At: at(1), Actor: "s", Source: "system"},
		{From: MissionSent, To: MissionAck, At: at(2), Actor: "crew", Source: "device"},
		{From: MissionAck, To: MissionOnRoute, At: at(4), Actor: "crew", Source: "device"}}
	centralMoves := []MissionMove{{From: MissionCreated, To: MissionOnSite, At: at(3), Actor: "sms", Source: "sms", Node: "central"}}
	MergeMoves(site, siteMoves)
	MergeMoves(central, centralMoves)
	if central.Status != MissionOnSite || !slices.Equal(central.Implied, []string{MissionSent, MissionAck, MissionOnRoute}) {
		t.Fatalf("central alone: %s implied %v", central.Status, central.Implied)
	}
	// Either order, and again (a repeat changes nothing).
	a, b := *site, *central
	a.History, b.History = slices.Clone(site.History), slices.Clone(central.History)
	MergeMoves(&a, central.History)
	MergeMoves(&b, site.History)
	if added := MergeMoves(&a, b.History); len(added) != 0 {
		t.Fatalf("a repeat added %v", added)
	}
	for _, m := range []*Mission{&a, &b} {
		if m.Status != MissionOnSite || len(m.History) != 5 || m.Implied != nil || !m.OnRouteAt.Equal(at(4).Time) ||
			!m.OnSiteAt.Equal(at(3).Time) || !m.AckAt.Equal(at(2).Time) {
			t.Fatalf("merged: %+v", m)
		}
	}
	if factKeys(a.History) != factKeys(b.History) {
		t.Fatalf("histories differ:\n%v\n%v", a.History, b.History)
	}
	// COMPLETED on the site at 6, FAILED centrally at 5: FAILED on both, both kept.
	MergeMoves(&a, []MissionMove{{From: MissionOnSite, To: MissionCompleted, At: at(6), Actor: "crew", Source: "device"}})
	MergeMoves(&b, []MissionMove{{From: MissionOnSite, To: MissionFailed, At: at(5), Actor: "sup", Source: "api", Node: "central"}})
	if a.Status != MissionCompleted || a.TerminalConflict != nil {
		t.Fatalf("before the exchange: %s %+v", a.Status, a.TerminalConflict)
	}
	MergeMoves(&a, b.History)
	MergeMoves(&b, a.History)
	for _, m := range []*Mission{&a, &b} {
		tc := m.TerminalConflict
		if m.Status != MissionFailed || tc == nil || tc.Chosen != MissionFailed || tc.Other != MissionCompleted ||
			m.CompletedAt == nil || m.FailedAt == nil || len(m.History) != 7 {
			t.Fatalf("terminal conflict: %s %+v %d moves", m.Status, tc, len(m.History))
		}
	}
	// The same field time: the smaller node wins, on both.
	x, y := base(), base()
	MergeMoves(x, []MissionMove{{To: MissionCompleted, At: at(7), Actor: "a", Source: "api", Node: "b-node"}})
	MergeMoves(y, []MissionMove{{To: MissionFailed, At: at(7), Actor: "a", Source: "api", Node: "a-node"}})
	MergeMoves(x, y.History)
	MergeMoves(y, x.History)
	if x.Status != MissionFailed || y.Status != MissionFailed {
		t.Fatalf("a tie: %s, %s", x.Status, y.Status)
	}
}

func factKeys(h []MissionMove) string {
	s := ""
	for i := range h {
		s += factKey(&h[i]) + "\n"
	}
	return s
}
