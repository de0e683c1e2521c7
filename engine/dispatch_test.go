package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// fieldNode is a delivery node with two teams in zone north and a webhook wanting every
// event name.
type fieldNode struct {
	*deliveryNode
	alpha, bravo *model.Team
}

func newFieldNode(t *testing.T) *fieldNode {
	t.Helper()
	n := &fieldNode{deliveryNode: newDeliveryNode(t, true, true)}
	lat, lng := 45.5, 4.5
	MustUpdate(t, n.e, func(tx model.Tx) error {
		teams, err := tx.Teams(n.p.TenantID)
		if err != nil {
			return err
		}
		n.alpha = &teams[0]
		n.alpha.Members[0].Lat, n.alpha.Members[0].Lng = &lat, &lng
		return tx.PutTeam(n.p.TenantID, n.alpha)
	})
	far := 45.6 // about 11 km from alpha
	var err error
	n.bravo, err = n.e.CreateTeam(context.Background(), tenantAdmin(n.p.TenantID), model.TeamInput{Name: "Bravo", ZoneCode: "north",
		Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "Bo", Phone: "+33600000002", Lat: &far, Lng: &lng}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *fieldNode) settings(t *testing.T, mode bool, threshold float64, timeout int) {
	t.Helper()
	mustDo(t, func() error {
		minutes := model.Int(timeout)
		_, err := n.e.UpdateDispatchSettings(context.Background(), n.p, model.DispatchSettingsInput{DispatchMode: &mode,
			DispatchThreshold: &threshold, ReinforcementTimeoutMin: &minutes}, nil)
		return err
	})
}

func (n *fieldNode) dispatch(t *testing.T, in model.DispatchInput) (*model.Dispatch, error) {
	t.Helper()
	var d *model.Dispatch
	err := func() (err error) {
		d, err = n.e.DispatchTeam(context.Background(), n.p, in, nil)
		return err
	}()
	return d, err
}

func (n *fieldNode) mission(t *testing.T, id string) *model.Mission {
	t.Helper()
	var m *model.Mission
	if err := n.e.View(context.Background(), func(tx model.Tx) (err error) {
		m, err = tx.Mission(n.p.TenantID, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func (n *fieldNode) team(t *testing.T, id string) *model.Team {
	t.Helper()
	var tm *model.Team
	if err := n.e.View(context.Background(), func(tx model.Tx) (err error) {
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
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID, Notes: "gate B",
		EventLat: &lat, EventLng: &lng})
	if err != nil {
		t.Fatal(err)
	}
	if d.MissionID == "" || d.DispatchedBy != n.p.ActorID() || d.TenantID != n.p.TenantID || d.Notes != "gate B" {
		t.Fatalf("dispatch record: %+v", d)
	}
	m := n.mission(t, d.MissionID)
	if m.Status != model.MissionCreated || m.Notes != "gate B" || *m.EventLat != 45.6 || m.DispatchID != d.ID || len(m.History) != 1 {
		t.Fatalf("mission: %+v", m)
	}
	if tm := n.team(t, n.alpha.ID); tm.Status != engine.TeamOnMission {
		t.Fatalf("team status %s", tm.Status)
	}
	// A busy team: 409; another team on the same event: a backup mission.
	if _, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID}); !model.IsKind(err, model.KindTeamUnavailable) {
		t.Fatalf("busy team: %v", err)
	}
	backup, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.bravo.ID})
	if err != nil || backup.MissionID == d.MissionID {
		t.Fatalf("backup dispatch: %+v %v", backup, err)
	}
	if m := n.mission(t, backup.MissionID); m.EventLat != nil {
		t.Fatalf("coordinates not given are absent: %+v", m)
	}
	// The team.dispatched webhook reaches the team: the mission is SENT.
	n.e.RunDue(ctx)
	if m := n.mission(t, d.MissionID); m.Status != model.MissionSent || m.ChannelUsed == nil {
		t.Fatalf("after the notification: %+v", m)
	}
	// Unknown event or team: 404; bad input: 400.
	other := model.NewID()
	for _, in := range []model.DispatchInput{{EventID: other, TeamID: n.bravo.ID}, {EventID: acc.EventID, TeamID: other}} {
		if _, err := n.dispatch(t, in); !model.IsKind(err, model.KindNotFound) {
			t.Fatalf("unknown ids %+v: %v", in, err)
		}
	}
	for _, in := range []model.DispatchInput{{}, {EventID: "x", TeamID: n.bravo.ID}, {EventID: acc.EventID},
		{EventID: acc.EventID, TeamID: n.bravo.ID, EventLat: &lat}, {EventID: acc.EventID, TeamID: n.bravo.ID, EventLat: &lng, EventLng: &[]float64{200}[0]}} {
		if _, err := n.dispatch(t, in); !model.IsKind(err, model.KindValidation) {
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
			_, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case model.IsKind(err, model.KindTeamUnavailable):
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
		in := model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: key,
			Payload: json.RawMessage(`{"lat":45.5,"lng":4.5}`)}
		reply, err := n.e.IngestEvent(context.Background(), n.p, in, func(v any) (model.Reply, error) {
			b, err := json.Marshal(v)
			return model.Reply{Status: 201, Body: b}, err
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
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
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
	var missions []model.Mission
	_ = n.e.View(ctx, func(tx model.Tx) (err error) {
		missions, err = tx.MissionsOfEvent(n.p.TenantID, acc.EventID)
		return err
	})
	if len(missions) != 2 || missions[1].ReinforcementOf == nil || *missions[1].ReinforcementOf != d.MissionID {
		t.Fatalf("missions of the event: %d", len(missions))
	}
}

// TestDispatch_ReinforcementTimeoutInForce: the timeout that decides is the tenant's
// setting when the per-mission check runs, not the one at dispatch (docs/rules.md, Dispatch score: a check
// every minute against reinforcement_timeout_min, 0 disabling it). Each case dispatches
// with the first timeout, changes it a minute later, and checks the mission is left alone
// one second before the reinforcement time and reinforced at it, exactly once.
func TestDispatch_ReinforcementTimeoutInForce(t *testing.T) {
	for _, c := range []struct {
		name          string
		atDispatch    int
		changedTo     int
		reinforceAtMn int // minutes after dispatch; 0: never
	}{
		{"SwitchedOffAfterDispatch", 5, 0, 0},
		{"SwitchedOnAfterDispatch", 0, 3, 3},
		{"SwitchedOnPastTheTimeout", 0, 1, 1}, // the mission is already 1 min old: at once
		{"Lengthened", 2, 10, 10},
		{"Shortened", 10, 4, 4},
		{"Unchanged", 5, 5, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := newFieldNode(t)
			n.settings(t, false, 0.0, c.atDispatch)
			n.sender.webhook = failing // the team never hears of it: no ACK
			acc := n.post(t, "high", "north")
			d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
			if err != nil {
				t.Fatal(err)
			}
			n.clock.Advance(time.Minute)
			n.e.RunDue(ctx)
			n.settings(t, false, 0.0, c.changedTo)
			n.e.RunDue(ctx)
			if c.reinforceAtMn > 1 {
				n.clock.Advance(time.Duration(c.reinforceAtMn-1)*time.Minute - time.Second)
				n.e.RunDue(ctx)
				if n.mission(t, d.MissionID).Reinforced {
					t.Fatal("reinforced a second before the timeout in force")
				}
				n.clock.Advance(time.Second)
				n.e.RunDue(ctx)
			}
			n.clock.Advance(time.Hour) // every check armed so far has run
			n.e.RunDue(ctx)
			got := n.sender.hooks(t, engine.HookMissionReinforced)
			switch {
			case c.reinforceAtMn == 0 && (len(got) != 0 || n.mission(t, d.MissionID).Reinforced):
				t.Fatalf("reinforced with reinforcement switched off: %v", got)
			case c.reinforceAtMn > 0 && len(got) != 1:
				t.Fatalf("mission.reinforced webhooks: %v, want one", got)
			}
			if c.reinforceAtMn > 1 {
				// The backup's dispatch time says when the check ran.
				var missions []model.Mission
				_ = n.e.View(ctx, func(tx model.Tx) (err error) {
					missions, err = tx.MissionsOfEvent(n.p.TenantID, acc.EventID)
					return err
				})
				want := n.mission(t, d.MissionID).DispatchedAt.Add(time.Duration(c.reinforceAtMn) * time.Minute)
				if len(missions) != 2 || !missions[1].DispatchedAt.Equal(want) {
					t.Fatalf("backup dispatched at %v, want %v", missions[len(missions)-1].DispatchedAt, want)
				}
			}
		})
	}
}

// hooks returns the payloads of the webhook calls named name made so far, one per
// message (retries of a message counted once).
func (f *fakeSender) hooks(t *testing.T, name string) []map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []map[string]any
	for _, c := range f.calls {
		if c.kind != "webhook" || seen[c.id] {
			continue
		}
		var env struct {
			Event   string         `json:"event"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(c.body), &env); err != nil {
			t.Fatalf("webhook body %q: %v", c.body, err)
		}
		if env.Event == name {
			seen[c.id] = true
			out = append(out, env.Payload)
		}
	}
	return out
}

func TestDispatch_ReinforcementOnceAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 5)
	n.sender.webhook = func(_ int, m model.WebhookMessage) model.SendResult {
		if strings.Contains(string(m.Body), `"event":"team.dispatched"`) {
			return model.SendResult{StatusCode: 500} // the team never hears of it: no ACK
		}
		return model.SendResult{StatusCode: 200}
	}
	acc := n.post(t, "high", "north")
	d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(5 * time.Minute)
	n.e.RunDue(ctx)
	if !n.mission(t, d.MissionID).Reinforced {
		t.Fatal("not reinforced at the timeout")
	}
	// Restarts after the reinforcement, and time goes on: no second backup.
	for range 3 {
		n.open(t)
		n.clock.Advance(10 * time.Minute)
		n.e.RunDue(ctx)
	}
	var missions []model.Mission
	_ = n.e.View(ctx, func(tx model.Tx) (err error) {
		missions, err = tx.MissionsOfEvent(n.p.TenantID, acc.EventID)
		return err
	})
	if len(missions) != 2 {
		t.Fatalf("the event has %d missions, want the original and one backup", len(missions))
	}
	got := n.sender.hooks(t, engine.HookMissionReinforced)
	if len(got) != 1 || got[0]["mission_id"] != d.MissionID || got[0]["team_id"] != n.bravo.ID ||
		got[0]["reinforcement_mission_id"] != missions[1].ID || got[0]["event_id"] != acc.EventID {
		t.Fatalf("mission.reinforced webhooks: %v", got)
	}
}

func TestDispatch_ReinforcementWithNoTeamAlertsSupervisors(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, false, 0.0, 5)
	n.sender.webhook = func(_ int, m model.WebhookMessage) model.SendResult {
		if strings.Contains(string(m.Body), `"event":"team.dispatched"`) {
			return model.SendResult{StatusCode: 500}
		}
		return model.SendResult{StatusCode: 200}
	}
	first := n.post(t, "high", "north")
	d, err := n.dispatch(t, model.DispatchInput{EventID: first.EventID, TeamID: n.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Bravo is busy elsewhere: nobody is left to reinforce alpha.
	other := n.post(t, "high", "north")
	if _, err := n.dispatch(t, model.DispatchInput{EventID: other.EventID, TeamID: n.bravo.ID}); err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(5*time.Minute - time.Second)
	n.e.RunDue(ctx)
	if got := n.sender.hooks(t, engine.HookDispatchRequiresMn); len(got) != 0 {
		t.Fatalf("alerted before the timeout: %v", got)
	}
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	n.clock.Advance(time.Hour)
	n.e.RunDue(ctx)
	got := n.sender.hooks(t, engine.HookDispatchRequiresMn)
	if len(got) != 2 { // one for each mission: alpha's and bravo's
		t.Fatalf("dispatch.requires_manual webhooks: %v", got)
	}
	var alpha map[string]any
	for _, p := range got {
		if p["mission_id"] == d.MissionID {
			alpha = p
		}
	}
	if alpha == nil || alpha["event_id"] != first.EventID || alpha["threshold"] != 0.0 {
		t.Fatalf("no alert for alpha's mission: %v", got)
	}
	if ms := n.sender.hooks(t, engine.HookMissionReinforced); len(ms) != 0 {
		t.Fatalf("reinforced with no team: %v", ms)
	}
}

func TestDispatch_AutoWithNoTeamAlertsSupervisors(t *testing.T) {
	ctx := context.Background()
	n := newFieldNode(t)
	n.settings(t, true, 0.99, 0) // no team scores 0.99: both are kilometres away
	acc := n.post(t, "high", "north")
	if !acc.RequiresManual || acc.Dispatch != nil {
		t.Fatalf("accepted: %+v", acc)
	}
	n.e.RunDue(ctx)
	got := n.sender.hooks(t, engine.HookDispatchRequiresMn)
	if len(got) != 1 || got[0]["event_id"] != acc.EventID || got[0]["threshold"] != 0.99 ||
		got[0]["best_team_id"] == nil || got[0]["best_score"].(float64) >= 0.99 {
		t.Fatalf("dispatch.requires_manual webhooks: %v", got)
	}
}

// TestDispatch_TeamsNobodyCanReceive holds the rule of
// docs/decisions/0076-score-teams-nobody-receives.md in
// auto-dispatch, reinforcement and manual dispatch. Before
// it, a team with no members (or none located) scored proximity 0.5, beat every staffed
// team more than ~10 km away, passed the 0.40 threshold and was auto-dispatched.
func TestDispatch_TeamsNobodyCanReceive(t *testing.T) {
	ctx := context.Background()
	// alpha is at 45.5, 4.5 and bravo 11 km north of it (newFieldNode); "Empty" has no
	// members and "No fix" one member without a position, neither of them in a zone.
	setup := func(t *testing.T) (n *fieldNode, empty, nofix *model.Team) {
		n = newFieldNode(t)
		mustDo(t, func() (err error) {
			if empty, err = n.e.CreateTeam(context.Background(), tenantAdmin(n.p.TenantID), model.TeamInput{Name: "Empty",
				Verticals: []string{"emergency"}}, nil); err != nil {
				return err
			}
			nofix, err = n.e.CreateTeam(context.Background(), tenantAdmin(n.p.TenantID), model.TeamInput{Name: "No fix", Verticals: []string{"emergency"},
				Members: []model.MemberInput{{Name: "Nils", Phone: "+33600000003"}}}, nil)
			return err
		})
		return n, empty, nofix
	}
	// postAt ingests an event at lat, 4.5: 20 km south of alpha scores alpha 1/3.
	postAt := func(t *testing.T, n *fieldNode, lat float64) model.EventAccepted {
		t.Helper()
		in := model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: model.NewID(),
			Payload: json.RawMessage(fmt.Sprintf(`{"lat":%v,"lng":4.5}`, lat))}
		return mustIngest(t, n.e, n.p, in)
	}
	south20 := 45.5 - 20/111.19508

	t.Run("AutoDispatchAtHighThreshold", func(t *testing.T) {
		n, _, _ := setup(t)
		n.settings(t, true, 0.40, 0)
		acc := postAt(t, n, south20)
		if !acc.RequiresManual || acc.Dispatch != nil {
			t.Fatalf("auto-dispatch at 0.40 with the nearest staffed team 20 km away: %+v", acc)
		}
		n.e.RunDue(ctx)
		got := n.sender.hooks(t, engine.HookDispatchRequiresMn)
		if len(got) != 1 || got[0]["best_team_id"] != n.alpha.ID {
			t.Fatalf("dispatch.requires_manual names the best located team: %v", got)
		}
	})

	t.Run("AutoDispatchPicksTheStaffedTeam", func(t *testing.T) {
		n, _, _ := setup(t)
		n.settings(t, true, 0.10, 0)
		if acc := postAt(t, n, south20); acc.Dispatch == nil || acc.Dispatch.TeamID != n.alpha.ID {
			t.Fatalf("first event: %+v", acc)
		}
		if acc := postAt(t, n, south20); acc.Dispatch == nil || acc.Dispatch.TeamID != n.bravo.ID {
			t.Fatalf("second event: %+v", acc)
		}
		// Only Empty and No fix are left: neither is ever sent automatically.
		if acc := postAt(t, n, south20); !acc.RequiresManual || acc.Dispatch != nil {
			t.Fatalf("third event: %+v", acc)
		}
	})

	t.Run("ReinforcementSkipsThem", func(t *testing.T) {
		n, _, _ := setup(t)
		n.settings(t, false, 0.0, 5)
		n.sender.webhook = failing // no ACK: alpha's mission is reinforced at the timeout
		first := postAt(t, n, south20)
		d, err := n.dispatch(t, model.DispatchInput{EventID: first.EventID, TeamID: n.alpha.ID})
		if err != nil {
			t.Fatal(err)
		}
		other := postAt(t, n, south20)
		if _, err := n.dispatch(t, model.DispatchInput{EventID: other.EventID, TeamID: n.bravo.ID}); err != nil {
			t.Fatal(err)
		}
		n.clock.Advance(5 * time.Minute)
		n.e.RunDue(ctx)
		if !n.mission(t, d.MissionID).Reinforced {
			t.Fatal("the reinforcement check did not run")
		}
		if ms := n.sender.hooks(t, engine.HookMissionReinforced); len(ms) != 0 {
			t.Fatalf("reinforced with a team nobody can receive: %v", ms)
		}
		var alerted bool
		for _, p := range n.sender.hooks(t, engine.HookDispatchRequiresMn) {
			alerted = alerted || p["mission_id"] == d.MissionID
		}
		if !alerted {
			t.Fatal("supervisors were not alerted")
		}
	})

	t.Run("ManualNeedsConfirmation", func(t *testing.T) {
		n, empty, nofix := setup(t)
		acc := postAt(t, n, south20)
		_, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: empty.ID})
		AssertKind(t, err, model.KindTeamEmpty)
		if tm := n.team(t, empty.ID); tm.Status != engine.TeamAvailable {
			t.Fatalf("a refused dispatch changed the team: %s", tm.Status)
		}
		d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: empty.ID, ConfirmEmptyTeam: true})
		if err != nil || d.TeamID != empty.ID {
			t.Fatalf("confirmed dispatch: %+v %v", d, err)
		}
		// A team whose members have no position has someone to receive: no confirmation.
		if _, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: nofix.ID}); err != nil {
			t.Fatalf("team without positions: %v", err)
		}
	})

	t.Run("ScoreSaysWhy", func(t *testing.T) {
		n, empty, nofix := setup(t)
		acc := postAt(t, n, south20)
		scores, err := n.e.ScoreTeams(ctx, n.p, model.ScoreInput{EventID: acc.EventID})
		if err != nil {
			t.Fatal(err)
		}
		why := map[string]model.TeamScore{}
		for _, s := range scores {
			why[s.TeamID] = s
		}
		if s := why[empty.ID]; s.Eligible || s.Reason != engine.ReasonNoMembers || s.Factors.Availability != 0 {
			t.Fatalf("empty: %+v", s)
		}
		if s := why[nofix.ID]; s.Eligible || s.Reason != engine.ReasonNoPosition || s.Factors.PositionSource != engine.PositionUnknown {
			t.Fatalf("no fix: %+v", s)
		}
		if scores[0].TeamID != n.alpha.ID || scores[0].Factors.PositionSource != engine.PositionMember {
			t.Fatalf("ranking: %+v", scores)
		}
	})

	t.Run("ZoneCentroidStandsInForMembers", func(t *testing.T) {
		n, _, nofix := setup(t)
		// No fix joins zone north, whose centroid (45.5, 4.5) is alpha's spot.
		mustDo(t, func() error {
			zone := "north"
			_, err := n.e.UpdateTeam(context.Background(), n.p, nofix.ID, model.TeamPatch{ZoneCode: &zone}, nil)
			return err
		})
		acc := postAt(t, n, south20)
		scores, err := n.e.ScoreTeams(ctx, n.p, model.ScoreInput{EventID: acc.EventID})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scores {
			if s.TeamID == nofix.ID && (s.Factors.PositionSource != engine.PositionZoneCentroid ||
				s.Factors.DistanceKm == nil || !approx(*s.Factors.DistanceKm, 20, 0.5) || !s.Eligible) {
				t.Fatalf("no fix in zone north: %+v", s)
			}
		}
	})
}
