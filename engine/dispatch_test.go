package engine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

// fieldNode is a delivery node with two teams in zone north and a webhook wanting every
// event name.
type fieldNode struct {
	*deliveryNode
	alpha, bravo *engine.Team
}

func newFieldNode(t *testing.T) *fieldNode {
	t.Helper()
	n := &fieldNode{deliveryNode: newDeliveryNode(t, true, true)}
	lat, lng := 45.5, 4.5
	MustUpdate(t, n.e, func(tx engine.Tx) error {
		teams, err := tx.Teams(n.p.TenantID)
		if err != nil {
			return err
		}
		n.alpha = &teams[0]
		n.alpha.Members[0].Lat, n.alpha.Members[0].Lng = &lat, &lng
		if err := tx.PutTeam(n.p.TenantID, n.alpha); err != nil {
			return err
		}
		far := 45.6 // about 11 km from alpha
		n.bravo, err = n.e.CreateTeam(tx, n.p.TenantID, engine.TeamInput{Name: "Bravo", ZoneCode: "north",
			Verticals: []string{"emergency"}, Members: []engine.MemberInput{{Name: "Bo", Phone: "+33600000002", Lat: &far, Lng: &lng}}})
		return err
	})
	return n
}

func (n *fieldNode) settings(t *testing.T, mode bool, threshold float64, timeout int) {
	t.Helper()
	MustUpdate(t, n.e, func(tx engine.Tx) error {
		_, err := n.e.UpdateDispatchSettings(tx, n.p, engine.DispatchSettingsInput{DispatchMode: &mode,
			DispatchThreshold: &threshold, ReinforcementTimeoutMin: &timeout})
		return err
	})
}

func (n *fieldNode) dispatch(t *testing.T, in engine.DispatchInput) (*engine.Dispatch, error) {
	t.Helper()
	var d *engine.Dispatch
	err := n.e.Update(context.Background(), func(tx engine.Tx) (err error) {
		d, err = n.e.DispatchTeam(tx, n.p, in)
		return err
	})
	return d, err
}

func (n *fieldNode) mission(t *testing.T, id string) *engine.Mission {
	t.Helper()
	var m *engine.Mission
	if err := n.e.View(context.Background(), func(tx engine.Tx) (err error) {
		m, err = tx.Mission(n.p.TenantID, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func (n *fieldNode) team(t *testing.T, id string) *engine.Team {
	t.Helper()
	var tm *engine.Team
	if err := n.e.View(context.Background(), func(tx engine.Tx) (err error) {
		tm, err = tx.Team(n.p.TenantID, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestDispatch_Manual(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	acc := n.post(t, "high", "north")
	lat, lng := 45.6, 4.6
	d, err := n.dispatch(t, engine.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID, Notes: "gate B",
		EventLat: &lat, EventLng: &lng})
	if err != nil {
		t.Fatal(err)
	}
	if d.MissionID == "" || d.DispatchedBy != n.p.ActorID() || d.TenantID != n.p.TenantID || d.Notes != "gate B" {
		t.Fatalf("dispatch record: %+v", d)
	}
	m := n.mission(t, d.MissionID)
	if m.Status != engine.MissionCreated || m.Notes != "gate B" || *m.EventLat != 45.6 || m.DispatchID != d.ID || len(m.History) != 1 {
		t.Fatalf("mission: %+v", m)
	}
	if tm := n.team(t, n.alpha.ID); tm.Status != engine.TeamOnMission {
		t.Fatalf("team status %s", tm.Status)
	}
	// A busy team: 409; another team on the same event: a backup mission.
	if _, err := n.dispatch(t, engine.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID}); !engine.IsKind(err, engine.KindTeamUnavailable) {
		t.Fatalf("busy team: %v", err)
	}
	backup, err := n.dispatch(t, engine.DispatchInput{EventID: acc.EventID, TeamID: n.bravo.ID})
	if err != nil || backup.MissionID == d.MissionID {
		t.Fatalf("backup dispatch: %+v %v", backup, err)
	}
	if m := n.mission(t, backup.MissionID); m.EventLat != nil {
		t.Fatalf("coordinates not given are absent: %+v", m)
	}
	// The team.dispatched webhook reaches the team: the mission is SENT.
	n.e.RunDue(ctx)
	if m := n.mission(t, d.MissionID); m.Status != engine.MissionSent || m.ChannelUsed == nil {
		t.Fatalf("after the notification: %+v", m)
	}
	// Unknown event or team: 404; bad input: 400.
	other := engine.NewID()
	for _, in := range []engine.DispatchInput{{EventID: other, TeamID: n.bravo.ID}, {EventID: acc.EventID, TeamID: other}} {
		if _, err := n.dispatch(t, in); !engine.IsKind(err, engine.KindNotFound) {
			t.Fatalf("unknown ids %+v: %v", in, err)
		}
	}
	for _, in := range []engine.DispatchInput{{}, {EventID: "x", TeamID: n.bravo.ID}, {EventID: acc.EventID},
		{EventID: acc.EventID, TeamID: n.bravo.ID, EventLat: &lat}, {EventID: acc.EventID, TeamID: n.bravo.ID, EventLat: &lng, EventLng: &[]float64{200}[0]}} {
		if _, err := n.dispatch(t, in); !engine.IsKind(err, engine.KindValidation) {
			t.Fatalf("bad input %+v: %v", in, err)
		}
	}
}

func TestDispatch_ConcurrentOneTeam(t *testing.T) {
	n := newFieldNode(t)
	acc := n.post(t, "high", "north")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, busy := 0, 0
	for range 20 {
		wg.Go(func() {
			_, err := n.dispatch(t, engine.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case engine.IsKind(err, engine.KindTeamUnavailable):
				busy++
			default:
				t.Errorf("dispatch: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != 1 || busy != 19 {
		t.Fatalf("%d dispatched, %d refused; want 1 and 19", ok, busy)
	}
}

func TestDispatch_Auto(t *testing.T) {
	n := newFieldNode(t)
	n.settings(t, true, 0.10, 0)
	post := func(key string) map[string]any {
		t.Helper()
		in := engine.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: key,
			Payload: json.RawMessage(`{"lat":45.5,"lng":4.5}`)}
		reply, err := n.e.IngestEvent(context.Background(), n.p, in, func(v any) (engine.Reply, error) {
			b, err := json.Marshal(v)
			return engine.Reply{Status: 201, Body: b}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.Unmarshal(reply.Body, &out)
		return out
	}
	first := post("a1")
	d, _ := first["dispatch"].(map[string]any)
	if d == nil || d["team_id"] != n.alpha.ID || d["mission_id"] == "" {
		t.Fatalf("first event: %v", first)
	}
	second := post("a2")
	if d, _ := second["dispatch"].(map[string]any); d == nil || d["team_id"] != n.bravo.ID {
		t.Fatalf("second event: %v", second)
	}
	third := post("a3")
	if third["requires_manual"] != true || third["dispatch"] != nil {
		t.Fatalf("third event with every team busy: %v", third)
	}
}

func TestDispatch_Reinforcement(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 5)
	n.sender.webhook = failing // the team's notification does not arrive: no ACK
	acc := n.post(t, "high", "north")
	d, err := n.dispatch(t, engine.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.e.RunDue(ctx)
	n.clock.Advance(5*time.Minute - time.Second)
	n.e.RunDue(ctx)
	if m := n.mission(t, d.MissionID); m.Reinforced {
		t.Fatal("reinforced before the timeout")
	}
	// The node restarts just before the timeout: the check survives.
	n.open(t)
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	m := n.mission(t, d.MissionID)
	if !m.Reinforced {
		t.Fatal("not reinforced at the timeout")
	}
	if tm := n.team(t, n.bravo.ID); tm.Status != engine.TeamOnMission {
		t.Fatalf("the backup team is %s", tm.Status)
	}
	// Once per mission.
	n.clock.Advance(time.Hour)
	n.e.RunDue(ctx)
	var missions []engine.Mission
	_ = n.e.View(ctx, func(tx engine.Tx) (err error) {
		missions, err = tx.MissionsOfEvent(n.p.TenantID, acc.EventID)
		return err
	})
	if len(missions) != 2 || missions[1].ReinforcementOf == nil || *missions[1].ReinforcementOf != d.MissionID {
		t.Fatalf("missions of the event: %d", len(missions))
	}
}
