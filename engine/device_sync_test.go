package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestDeviceSync_Replay: 2,000 device items of every kind (mission moves of 100 missions,
// events, positions, connectivity reports, some bad ones) are each sent 1 to 4 times in
// shuffled batches, with a restart of the store and the engine half way. After every call
// applied_through is the highest sequence below which everything was received, the gaps
// are exactly the missing sequences, and every first receipt is answered applied,
// rejected or pending as the model says; in the end each item was applied exactly once and
// in sequence order: the moves of each mission form one history with the captured times,
// every event exists once, the last position and report stand.
func TestDeviceSync_Replay(t *testing.T) {
	const total = 2000
	f := newDeviceFix(t)
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.teamA.ID, ZoneCode: "north"})
	rng := rand.New(rand.NewPCG(5, 2026))
	base := epoch.Add(-5 * time.Hour)
	capturedAt := func(seq int64) time.Time { return base.Add(time.Duration(seq) * time.Second) }
	al := f.teamA.Members[1].ID

	// 100 missions of team A, created before anything was captured.
	missions := make([]*model.Mission, 100)
	for i := range missions {
		missions[i] = f.storedMission(t, f.teamA, base.Add(-time.Hour))
	}
	// The server moves on before the device's moves arrive: 0–9 fail at the supervisor's,
	// 10–19 are acknowledged online by the operator now (after every capture).
	for i := range 10 {
		f.move(t, f.sup, missions[i].ID, model.MissionFailed)
		f.move(t, f.opA, missions[10+i].ID, model.MissionAck)
	}

	// The model: what each sequence carries and what must become of it.
	type planned struct {
		body    map[string]any
		outcome string // applied or rejected
		atOnce  bool   // rejected on receipt, whatever the gaps below it
	}
	plan := make([]planned, total+1)
	seqs := rng.Perm(total)[:400]
	for i := range seqs {
		seqs[i]++
	}
	slices.Sort(seqs)
	moves := []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted}
	moveSeq := map[string][4]int64{}
	for step, move := range moves {
		for m := range missions {
			seq := int64(seqs[step*100+m])
			outcome := model.ItemApplied
			if m < 20 {
				outcome = model.ItemRejected
			}
			plan[seq] = planned{body: item(seq, "mission_status", map[string]any{"mission_id": missions[m].ID, "status": move,
				"feedback": map[string]any{"step": move}}, capturedAt(seq)), outcome: outcome}
			s := moveSeq[missions[m].ID]
			s[step] = seq
			moveSeq[missions[m].ID] = s
		}
	}
	eventKeys := map[string]int64{} // idempotency_key → first sequence
	var lastLocation, lastReport int64
	n := 0
	for seq := int64(1); seq <= total; seq++ {
		if plan[seq].body != nil {
			continue
		}
		at := capturedAt(seq)
		p := planned{outcome: model.ItemApplied}
		switch n++; {
		case n%97 == 0: // unknown kind: rejected on receipt
			p.body, p.outcome, p.atOnce = item(seq, "selfie", map[string]any{}, at), model.ItemRejected, true
		case n%89 == 0: // captured in the future: rejected on receipt
			p.body, p.outcome, p.atOnce = item(seq, "location", map[string]any{"member_id": al, "lat": 45.1, "lng": 4.1},
				epoch.Add(10*time.Minute)), model.ItemRejected, true
		case n%83 == 0: // an event without type: rejected when applied
			p.body, p.outcome = item(seq, "event", map[string]any{"priority": "high", "vertical": "emergency",
				"idempotency_key": fmt.Sprintf("bad-%d", seq)}, at), model.ItemRejected
		case n%79 == 0: // another team's member: rejected when applied
			p.body, p.outcome = item(seq, "location", map[string]any{"member_id": f.teamB.Members[0].ID, "lat": 45.1, "lng": 4.1}, at), model.ItemRejected
		case n%61 == 0 && len(eventKeys) > 0: // an event sent again under a new sequence: applied, nothing new
			var key string
			for k := range eventKeys {
				key = k
				break
			}
			p.body = item(seq, "event", map[string]any{"type": "AGAIN", "priority": "low", "vertical": "emergency",
				"idempotency_key": key}, at)
		case n%3 == 0:
			key := fmt.Sprintf("dev-%d", seq)
			eventKeys[key] = seq
			p.body = item(seq, "event", map[string]any{"type": "LEAK", "priority": "normal", "vertical": "emergency",
				"idempotency_key": key, "payload": map[string]any{"seq": seq}}, at)
		case n%3 == 1:
			p.body, lastLocation = item(seq, "location", map[string]any{"member_id": al, "lat": 45 + float64(seq)/10000, "lng": 4.5}, at), seq
		default:
			state := []string{"online", "degraded"}[seq%2]
			p.body, lastReport = item(seq, "connectivity", map[string]any{"zone_code": "north", "state": state, "signal_dbm": -80}, at), seq
		}
		plan[seq] = p
	}

	// Every sequence 1 to 4 times, shuffled, in batches of 1 to 60.
	var sends []int64
	for seq := int64(1); seq <= total; seq++ {
		for range 1 + rng.IntN(4) {
			sends = append(sends, seq)
		}
	}
	rng.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
	var batches [][]int64
	for len(sends) > 0 {
		size := min(1+rng.IntN(60), len(sends))
		batches = append(batches, sends[:size])
		sends = sends[size:]
	}

	received := make([]bool, total+1)
	var applied, highest int64
	// statusOf is what a first receipt (or a duplicate's outcome) must say after a call.
	statusOf := func(seq int64) string {
		if seq <= applied || plan[seq].atOnce {
			return plan[seq].outcome
		}
		return model.ItemPending
	}
	for call, batch := range batches {
		if call == len(batches)/2 {
			f.open(t) // restart
		}
		items := make([]any, len(batch))
		fresh := make([]bool, len(batch))
		freshSeq := map[int64]bool{}
		before := applied
		for i, seq := range batch {
			items[i] = plan[seq].body
			fresh[i] = !received[seq]
			freshSeq[seq] = freshSeq[seq] || fresh[i]
			received[seq] = true
			highest = max(highest, seq)
		}
		for applied < total && received[applied+1] {
			applied++
		}
		res := f.mustSync(t, f.opA, dev.ID, nil, items...)
		if res.AppliedThrough != applied || res.HighestReceived != highest {
			t.Fatalf("call %d: applied_through %d highest %d, want %d %d", call, res.AppliedThrough, res.HighestReceived, applied, highest)
		}
		var gaps []int64
		for seq := applied + 1; seq < highest; seq++ {
			if !received[seq] {
				gaps = append(gaps, seq)
			}
		}
		if int(res.GapCount) != len(gaps) || !slices.Equal(res.Gaps, gaps[:min(len(gaps), model.MaxGaps)]) && len(gaps)+len(res.Gaps) > 0 {
			t.Fatalf("call %d: gaps %v (%d), want %v", call, res.Gaps, res.GapCount, gaps)
		}
		if len(res.Results) != len(batch) {
			t.Fatalf("call %d: %d results for %d items", call, len(res.Results), len(batch))
		}
		for i, r := range res.Results {
			seq := batch[i]
			if r.SequenceNumber == nil || *r.SequenceNumber != seq || r.Index == nil || *r.Index != i {
				t.Fatalf("call %d: result %d names %v", call, i, r)
			}
			want, got := statusOf(seq), r.Status
			if !fresh[i] {
				want, got = model.ItemDuplicate+"/"+want, r.Status+"/"+r.Outcome
			}
			if got != want {
				t.Fatalf("call %d: seq %d is %s (%s %s), want %s", call, seq, got, r.Error, r.Message, want)
			}
			if r.Status == model.ItemRejected && (r.Error == "" || r.Message == "") {
				t.Fatalf("call %d: seq %d rejected without a reason: %+v", call, seq, r)
			}
		}
		// The released items: those of earlier calls that this one processed.
		var released []int64
		for seq := before + 1; seq <= applied; seq++ {
			if !freshSeq[seq] && !plan[seq].atOnce {
				released = append(released, seq)
			}
		}
		var got []int64
		for _, r := range res.Released {
			got = append(got, *r.SequenceNumber)
			if r.Status != plan[*r.SequenceNumber].outcome {
				t.Fatalf("call %d: released %d is %s, want %s", call, *r.SequenceNumber, r.Status, plan[*r.SequenceNumber].outcome)
			}
		}
		if !slices.Equal(got, released) {
			t.Fatalf("call %d: released %v, want %v", call, got, released)
		}
	}
	if applied != total {
		t.Fatalf("applied through %d", applied)
	}

	// Missions: each move once, at its captured time, in order; the rejected ones left
	// the server's state as it was.
	for i, m := range missions {
		got := f.mission(t, m.ID)
		s := moveSeq[m.ID]
		switch {
		case i < 10:
			if got.Status != model.MissionFailed || len(got.History) != 2 {
				t.Fatalf("mission %d: %s %d moves", i, got.Status, len(got.History))
			}
		case i < 20:
			if got.Status != model.MissionAck || len(got.History) != 3 || got.OnRouteAt != nil {
				t.Fatalf("mission %d: %s %d moves", i, got.Status, len(got.History))
			}
		default:
			want := []string{model.MissionCreated, model.MissionSent, model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted}
			if got.Status != model.MissionCompleted || len(got.History) != len(want) {
				t.Fatalf("mission %d: %s %+v", i, got.Status, got.History)
			}
			for j, mv := range got.History {
				if mv.To != want[j] || j > 0 && (mv.Source != engine.MoveSourceDevice || mv.Actor != f.opA.UserID) {
					t.Fatalf("mission %d move %d: %+v", i, j, mv)
				}
			}
			for j, ts := range []*model.Time{got.AckAt, got.OnRouteAt, got.OnSiteAt, got.CompletedAt} {
				if ts == nil || !ts.Equal(model.At(capturedAt(s[j])).Time) {
					t.Fatalf("mission %d: %s at %v, want %v", i, moves[j], ts, capturedAt(s[j]))
				}
			}
		}
	}

	// Events: one per key, captured when the device captured it.
	var events []model.Event
	_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
		events, _, err = tx.Events(f.tenant.ID, model.EventFilter{}, model.Page{Limit: 10000})
		return err
	})
	byKey := map[string]int{}
	for _, ev := range events {
		if ev.Source != engine.SourceDevice {
			continue
		}
		byKey[ev.IdempotencyKey]++
		seq, ok := eventKeys[ev.IdempotencyKey]
		if !ok || ev.DeviceID == nil || *ev.DeviceID != dev.ID || ev.CapturedAt == nil || !ev.CapturedAt.Equal(model.At(capturedAt(seq)).Time) {
			t.Fatalf("event %+v", ev)
		}
	}
	if len(byKey) != len(eventKeys) {
		t.Fatalf("%d device events, want %d", len(byKey), len(eventKeys))
	}
	for k, c := range byKey {
		if c != 1 {
			t.Fatalf("event %s stored %d times", k, c)
		}
	}

	// The last position and the last report stand.
	var team *model.Team
	var zone *model.Zone
	_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
		if team, err = tx.Team(f.tenant.ID, f.teamA.ID); err != nil {
			return err
		}
		zone, err = tx.Zone(f.tenant.ID, "north")
		return err
	})
	mem := team.Member(al)
	if mem.LocationUpdatedAt == nil || !mem.LocationUpdatedAt.Equal(model.At(capturedAt(lastLocation)).Time) ||
		*mem.Lat != 45+float64(lastLocation)/10000 {
		t.Fatalf("position %+v, want that of %d", mem, lastLocation)
	}
	c := zone.Connectivity
	if c.LastReportAt == nil || !c.LastReportAt.Equal(model.At(capturedAt(lastReport)).Time) || c.DeviceID != dev.ID ||
		c.State != []string{"online", "degraded"}[lastReport%2] {
		t.Fatalf("connectivity %+v, want the report of %d", c, lastReport)
	}

	// Everything once more: all duplicates, nothing moves.
	var all []any
	for seq := int64(1); seq <= total; seq++ {
		all = append(all, plan[seq].body)
	}
	res := f.mustSync(t, f.opA, dev.ID, nil, all...)
	for _, r := range res.Results {
		if r.Status != model.ItemDuplicate || r.Outcome != plan[*r.SequenceNumber].outcome {
			t.Fatalf("resend: %+v", r)
		}
	}
}

// TestDeviceSync_OfflineMoveRejected: moves captured offline that the server has passed
// are rejected, each with the mission's own error, and the items after them apply.
func TestDeviceSync_OfflineMoveRejected(t *testing.T) {
	f := newDeviceFix(t)
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.teamA.ID})
	m := f.storedMission(t, f.teamA, epoch.Add(-time.Hour))
	closed := f.storedMission(t, f.teamA, epoch.Add(-time.Hour))
	f.move(t, f.opA, m.ID, model.MissionAck) // online, now
	f.move(t, f.opA, m.ID, model.MissionOnRoute)
	f.move(t, f.sup, closed.ID, model.MissionFailed)
	at := epoch.Add(-30 * time.Minute)
	res := f.mustSync(t, f.opA, dev.ID, nil,
		item(1, "mission_status", map[string]any{"mission_id": m.ID, "status": "ACK"}, at),
		item(2, "mission_status", map[string]any{"mission_id": m.ID, "status": "ON_SITE"}, at.Add(time.Minute)),
		item(3, "mission_status", map[string]any{"mission_id": closed.ID, "status": "ACK"}, at),
		item(4, "mission_status", map[string]any{"mission_id": model.NewID(), "status": "ACK"}, at),
		item(5, "mission_status", map[string]any{"mission_id": m.ID, "status": "SLEEPING"}, at),
		item(6, "location", map[string]any{"member_id": f.teamA.Members[0].ID, "lat": 45.5, "lng": 4.5}, at.Add(2*time.Minute)),
	)
	want := []struct {
		status string
		err    model.Kind
		field  string
	}{
		{model.ItemRejected, model.KindInvalidTransition, ""},
		{model.ItemRejected, model.KindInvalidTransition, ""},
		{model.ItemRejected, model.KindMissionClosed, ""},
		{model.ItemRejected, model.KindNotFound, ""},
		{model.ItemRejected, model.KindValidation, "payload.status"},
		{model.ItemApplied, "", ""},
	}
	for i, r := range res.Results {
		if r.Status != want[i].status || r.Error != want[i].err || r.Field != want[i].field {
			t.Fatalf("item %d: %+v, want %+v", i+1, r, want[i])
		}
	}
	if res.AppliedThrough != 6 {
		t.Fatalf("applied_through %d", res.AppliedThrough)
	}
	if got := f.mission(t, m.ID); got.Status != model.MissionOnRoute || len(got.History) != 4 {
		t.Fatalf("the server's moves stand: %+v", got)
	}
	// On ON_SITE then captured in the field after the server's last move: applied.
	res = f.mustSync(t, f.opA, dev.ID, nil, item(7, "mission_status", map[string]any{"mission_id": m.ID, "status": "ON_SITE"}, epoch))
	if res.Results[0].Status != model.ItemApplied {
		t.Fatalf("a later move: %+v", res.Results[0])
	}
	// Another team's mission is not the device's.
	other := f.storedMission(t, f.teamB, epoch.Add(-time.Hour))
	res = f.mustSync(t, f.tech, dev.ID, nil, item(8, "mission_status", map[string]any{"mission_id": other.ID, "status": "ACK"}, epoch))
	if r := res.Results[0]; r.Status != model.ItemRejected || r.Error != model.KindForbidden {
		// company_tech holds no missions:receive: refused on receipt.
		t.Fatalf("company_tech's move: %+v", r)
	}
	res = f.mustSync(t, f.opA, dev.ID, nil, item(9, "mission_status", map[string]any{"mission_id": other.ID, "status": "ACK"}, epoch))
	if r := res.Results[0]; r.Status != model.ItemRejected || r.Error != model.KindNotFound {
		t.Fatalf("another team's mission: %+v", r)
	}
}

// TestDeviceSync_BadItems: every malformed item is rejected with the field it gets
// wrong, an item without a readable sequence number is answered without taking one, and
// none of them stops the good items.
func TestDeviceSync_BadItems(t *testing.T) {
	f := newDeviceFix(t)
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.teamA.ID})
	at := epoch.Add(-time.Minute).Format(model.TimeLayout)
	loc := `{"member_id":"` + f.teamA.Members[1].ID + `","lat":45.2,"lng":4.2}`
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		body   string
		seq    int64 // 0: no sequence taken
		status string
		field  string
	}{
		{`{"sequence_number":1,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 1, model.ItemApplied, ""},
		{`{"sequence_number":1.5,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"sequence_number":"3","kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"sequence_number":0,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"sequence_number":-4,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"sequence_number":99999999999999999999,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`"not an object"`, 0, model.ItemRejected, "items"},
		{`{"sequence_number":2,"payload":` + loc + `,"captured_at":"` + at + `"}`, 2, model.ItemRejected, "kind"},
		{`{"sequence_number":3,"kind":7,"payload":` + loc + `,"captured_at":"` + at + `"}`, 3, model.ItemRejected, "kind"},
		{`{"sequence_number":4,"kind":"photo","payload":` + loc + `,"captured_at":"` + at + `"}`, 4, model.ItemRejected, "kind"},
		{`{"sequence_number":5,"kind":"location","captured_at":"` + at + `"}`, 5, model.ItemRejected, "payload"},
		{`{"sequence_number":6,"kind":"location","payload":[1],"captured_at":"` + at + `"}`, 6, model.ItemRejected, "payload"},
		{`{"sequence_number":7,"kind":"location","payload":` + loc + `}`, 7, model.ItemRejected, "captured_at"},
		{`{"sequence_number":8,"kind":"location","payload":` + loc + `,"captured_at":"yesterday"}`, 8, model.ItemRejected, "captured_at"},
		{`{"sequence_number":9,"kind":"location","payload":` + loc + `,"captured_at":12}`, 9, model.ItemRejected, "captured_at"},
		{`{"sequence_number":10,"kind":"location","payload":` + loc + `,"captured_at":"` + epoch.Add(3*time.Minute).Format(model.TimeLayout) + `"}`, 10, model.ItemRejected, "captured_at"},
		{`{"sequence_number":11,"kind":"location","payload":{"member_id":"x","lat":"45","lng":4},"captured_at":"` + at + `"}`, 11, model.ItemRejected, "payload.lat"},
		// No member_id: the sender's own position (TestDeviceSync_OwnPosition).
		{`{"sequence_number":12,"kind":"location","payload":{"lat":45,"lng":4},"captured_at":"` + at + `"}`, 12, model.ItemApplied, ""},
		{`{"sequence_number":13,"kind":"location","payload":{"member_id":"` + f.teamA.Members[1].ID + `","lat":95,"lng":4},"captured_at":"` + at + `"}`, 13, model.ItemRejected, "payload.lat"},
		{`{"sequence_number":14,"kind":"event","payload":{"type":"X","priority":"urgent","vertical":"emergency","idempotency_key":"k"},"captured_at":"` + at + `"}`, 14, model.ItemRejected, "payload.priority"},
		{`{"sequence_number":15,"kind":"event","payload":{"type":"X","priority":"high","vertical":"emergency"},"captured_at":"` + at + `"}`, 15, model.ItemRejected, "payload.idempotency_key"},
		{`{"sequence_number":16,"kind":"connectivity","payload":{"zone_code":"north","state":"sunny"},"captured_at":"` + at + `"}`, 16, model.ItemRejected, "payload.state"},
		{`{"sequence_number":17,"kind":"mission_status","payload":{"status":"ACK"},"captured_at":"` + at + `"}`, 17, model.ItemRejected, "payload.mission_id"},
		{`{"sequence_number":18,"kind":"event","payload":{"type":"X","priority":"high","vertical":"emergency","idempotency_key":"good"},"captured_at":"` + at + `"}`, 18, model.ItemApplied, ""},
		// A number with an integral value is an integer, however written (JSON Schema).
		{`{"sequence_number":19.0,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 19, model.ItemApplied, ""},
		{`{"sequence_number":2e1,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 20, model.ItemApplied, ""},
		{`{"sequence_number":1e400,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
		{`{"sequence_number":20.5,"kind":"location","payload":` + loc + `,"captured_at":"` + at + `"}`, 0, model.ItemRejected, "sequence_number"},
	}
	items := make([]any, len(cases))
	for i, c := range cases {
		items[i] = raw(c.body)
	}
	res := f.mustSync(t, f.opA, dev.ID, nil, items...)
	for i, c := range cases {
		r := res.Results[i]
		gotSeq := int64(0)
		if r.SequenceNumber != nil {
			gotSeq = *r.SequenceNumber
		}
		if r.Status != c.status || r.Field != c.field || gotSeq != c.seq || *r.Index != i ||
			(c.status == model.ItemRejected && (r.Error != model.KindValidation || r.Message == "")) {
			t.Fatalf("item %d %s: %+v", i, c.body, r)
		}
	}
	event := 0 // the result of the good event item, sequence 18
	for i, c := range cases {
		if c.seq == 18 {
			event = i
		}
	}
	if res.AppliedThrough != 20 || len(res.Gaps) != 0 || res.Results[event].EventID == "" {
		t.Fatalf("answer: %+v", res)
	}
}

// TestDeviceSync_OwnPosition: a location item without member_id is the sender's own
// position, the member of the device's team that the user is (the field app does not know
// its member id); a sender that is no member of the team, or an API key, must name one.
func TestDeviceSync_OwnPosition(t *testing.T) {
	f := newDeviceFix(t)
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "phone", Platform: "web", TeamID: f.teamA.ID})
	at := epoch.Add(-time.Minute)
	res := f.mustSync(t, f.opA, dev.ID, nil, item(1, "location", map[string]any{"lat": 45.25, "lng": 4.75}, at))
	if r := res.Results[0]; r.Status != model.ItemApplied {
		t.Fatalf("own position: %+v", r)
	}
	team, err := f.e.Team(context.Background(), f.sup, f.teamA.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range team.Members {
		own := m.UserID == f.opA.UserID
		if moved := m.Lat != nil && *m.Lat == 45.25; moved != own {
			t.Fatalf("member %+v: moved %v, the sender %v", m, moved, own)
		}
	}
	admin := model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: model.NewID(), Role: model.RoleCompanyAdmin}
	res = f.mustSync(t, admin, dev.ID, nil, item(2, "location", map[string]any{"lat": 45.3, "lng": 4.8}, at))
	if r := res.Results[0]; r.Status != model.ItemRejected || r.Field != "payload.member_id" {
		t.Fatalf("a sender who is no member: %+v", r)
	}
}
