package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// nodeE is the node id of the edge node whose records the tests replicate.
const nodeE = "0190d5a0-1111-7000-8000-00000000e001"

// upstreamFix is a central node: a tenant whose every local event would be delivered,
// auto-dispatched and reinforced (a webhook subscribed to everything, a team with a phone
// and SMS available, dispatch_mode on at threshold 0, reinforcement after 5 minutes, a
// field device in zone north), a node device registered by an API key, and a second
// tenant. Its store can be closed and opened again with the same clock.
type upstreamFix struct {
	dir      string
	db       interface{ Close() error }
	e        *engine.Engine
	clock    *model.FakeClock
	sender   *fakeSender
	tenant   *model.Tenant
	other    *model.Tenant
	key      model.Principal // devices:manage and devices:sync
	otherKey model.Principal
	op       model.Principal // a field operator, member of team
	team     *model.Team
	node     *model.Device // platform fieldrelay-node, hardware_id nodeE
	field    *model.Device // android, zone north, team
}

func newUpstreamFix(t *testing.T) *upstreamFix {
	t.Helper()
	f := &upstreamFix{dir: t.TempDir(), clock: model.NewFakeClock(epoch), sender: newFakeSender(true)}
	f.open(t)
	f.tenant = MustCreateTenant(t, f.e, "central").Tenant
	f.other = MustCreateTenant(t, f.e, "other").Tenant
	scopes := []string{model.PermDevicesManage, model.PermDevicesSync}
	f.key = model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: scopes}
	f.otherKey = model.Principal{TenantID: f.other.ID, TenantActive: true, KeyID: model.NewID(), Scopes: scopes}
	u := MustCreateUser(t, f.e, "central", "op@central.example", model.RoleFieldOperator)
	f.op = model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: u.ID, Role: model.RoleFieldOperator}
	admin := model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	mustDo(t, func() (err error) {
		if _, err := f.e.CreateZone(context.Background(), tenantAdmin(f.tenant.ID), model.ZoneInput{Code: "north", Name: "North",
			Boundary: polygon(square(4, 45, 1))}, nil); err != nil {
			return err
		}
		if f.team, err = f.e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", ZoneCode: "north",
			Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "Ann", UserID: u.ID, Phone: "+33600000001"}}}, nil); err != nil {
			return err
		}
		if _, err := f.e.CreateWebhook(context.Background(), admin, model.WebhookInput{URL: "https://hooks.example/all"}, nil); err != nil {
			return err
		}
		_, err = f.e.UpdateDispatchSettings(context.Background(), admin, model.DispatchSettingsInput{DispatchMode: ptr(true),
			DispatchThreshold: ptr(0.0), ReinforcementTimeoutMin: ptr[model.Int](5)}, nil)
		return err
	})
	f.node = f.register(t, f.key, model.DeviceInput{Name: "fieldrelay node " + nodeE, Platform: engine.PlatformNode, HardwareID: nodeE})
	f.field = f.register(t, f.key, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.team.ID, ZoneCode: "north",
		HardwareID: "imei-1"})
	return f
}

// open (re)opens the store with a fresh engine: a restart.
func (f *upstreamFix) open(t *testing.T) {
	t.Helper()
	f.db, f.e = reopen(t, f.dir, f.db, engine.Options{Clock: f.clock, Sender: f.sender})
}

func (f *upstreamFix) register(t *testing.T, p model.Principal, in model.DeviceInput) *model.Device {
	t.Helper()
	var d *model.Device
	mustDo(t, func() (err error) {
		d, _, err = f.e.RegisterDevice(context.Background(), p, in, nil)
		return err
	})
	return d
}

// sync sends items (marshalled unless json.RawMessage) and decodes the answer.
func (f *upstreamFix) sync(t *testing.T, p model.Principal, deviceID string, items ...any) *model.DeviceSyncResult {
	t.Helper()
	raws := rawItems(t, items...)
	reply, err := f.e.SyncDevice(context.Background(), p, nil, model.DeviceSyncInput{DeviceID: deviceID, Items: raws},
		model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)})
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	var res model.DeviceSyncResult
	if err := json.Unmarshal(reply.Body, &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// statuses returns the status of each result, in order.
func statuses(res *model.DeviceSyncResult) []string {
	out := make([]string, len(res.Results))
	for i, r := range res.Results {
		out[i] = r.Status
		if r.Error != "" {
			out[i] += ":" + string(r.Error) + ":" + r.Field
		}
	}
	return out
}

func wantStatuses(t *testing.T, res *model.DeviceSyncResult, want ...string) {
	t.Helper()
	got := statuses(res)
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("results %v, want %v (%+v)", got, want, res.Results)
		}
	}
}

// edgeEvent is an event as an edge node stores it, created at at.
func edgeEvent(at time.Time, status string) *model.Event {
	now := model.At(at)
	return &model.Event{ID: model.NewIDAt(at), Type: "FIRE", Priority: "critical", Vertical: "emergency",
		IdempotencyKey: "edge-" + model.NewID(), Payload: json.RawMessage(`{"lat":45.5,"lng":4.5}`),
		ZoneCode: ptr("north"), Lat: ptr(45.5), Lng: ptr(4.5), Status: status, ChannelSelected: model.ChannelREST,
		ChannelsAttempted: []string{model.ChannelREST}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now,
		Delivery: model.DeliveryState{Plan: []string{model.ChannelREST}, Started: 1, Outstanding: 1}}
}

// edgeMission is a mission of the edge, CREATED at at, for an event and a team of the edge.
func edgeMission(at time.Time, eventID, teamID string) *model.Mission {
	now := model.At(at)
	return &model.Mission{ID: model.NewIDAt(at), EventID: eventID, TeamID: teamID, Status: model.MissionCreated,
		Code: "ABCDE", Vertical: "emergency", Priority: "critical", Notes: "go", DispatchedAt: now,
		DispatchID: model.NewID(), DispatchedBy: model.NilID,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: model.NilID, Source: engine.MoveSourceSystem}},
		CreatedAt: now, UpdatedAt: now}
}

// moved returns a copy of m moved to status at at (ACK from CREATED records SENT first).
func moved(m *model.Mission, status string, at time.Time, feedback string) *model.Mission {
	c := *m
	c.History = append([]model.MissionMove(nil), m.History...)
	now := model.At(at)
	from := c.Status
	if from == model.MissionCreated && status == model.MissionAck {
		c.History = append(c.History, model.MissionMove{From: from, To: model.MissionSent, At: now, Actor: model.NilID, Source: engine.MoveSourceSystem})
		from = model.MissionSent
	}
	mv := model.MissionMove{From: from, To: status, At: now, Actor: model.NilID, Source: engine.MoveSourceDevice}
	if feedback != "" {
		mv.Feedback = json.RawMessage(feedback)
		c.Feedback = json.RawMessage(feedback)
	}
	c.History = append(c.History, mv)
	c.Status, c.UpdatedAt = status, now
	switch status {
	case model.MissionAck:
		c.AckAt = &now
	case model.MissionCompleted:
		c.CompletedAt = &now
	case model.MissionFailed:
		c.FailedAt = &now
	}
	return &c
}

func (f *upstreamFix) event(t *testing.T, tenantID, id string) (*model.Event, error) {
	t.Helper()
	var ev *model.Event
	err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		ev, err = tx.Event(tenantID, id)
		return err
	})
	return ev, err
}

func (f *upstreamFix) mission(t *testing.T, id string) *model.Mission {
	t.Helper()
	var m *model.Mission
	if err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		m, err = tx.Mission(f.tenant.ID, id)
		return err
	}); err != nil {
		t.Fatalf("mission %s: %v", id, err)
	}
	return m
}

// assertNothingTriggered checks that the central tenant has no trace of any work: no
// outbox entry (and so no webhook, SMS or reinforcement check), nothing the fake sender
// was asked after running what is due, no device queue item, no parked event, no usage
// counter, no ledger entry, the team still available.
func (f *upstreamFix) assertNothingTriggered(t *testing.T) {
	t.Helper()
	f.clock.Advance(10 * time.Minute)
	if n := f.e.RunDue(context.Background()); n != 0 {
		t.Errorf("RunDue made %d attempts", n)
	}
	if len(f.sender.calls) != 0 {
		t.Errorf("the sender was called: %+v", f.sender.calls)
	}
	err := f.e.View(context.Background(), func(tx model.Tx) error {
		due, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		if len(due) != 0 {
			t.Errorf("outbox: %+v", due)
		}
		q, err := tx.QueueItems(f.tenant.ID, f.field.ID, 0, 100)
		if err != nil {
			return err
		}
		if len(q) != 0 {
			t.Errorf("device queue: %+v", q)
		}
		parked, err := tx.ParkedEvents(f.tenant.ID, nil)
		if err != nil {
			return err
		}
		if len(parked) != 0 {
			t.Errorf("parked: %+v", parked)
		}
		usage, err := tx.UsageCounters(f.tenant.ID, "2000-01-01", "2100-01-01")
		if err != nil {
			return err
		}
		if len(usage) != 0 {
			t.Errorf("usage: %+v", usage)
		}
		n, err := tx.LedgerCount(f.tenant.ID, "dispatch", epoch.Add(-24*time.Hour), epoch.Add(24*time.Hour))
		if err != nil {
			return err
		}
		if n != 0 {
			t.Errorf("ledger: %d dispatches", n)
		}
		tm, err := tx.Team(f.tenant.ID, f.team.ID)
		if err != nil {
			return err
		}
		if tm.Status != engine.TeamAvailable {
			t.Errorf("team %s", tm.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpstream_Event(t *testing.T) {
	f := newUpstreamFix(t)
	e1 := edgeEvent(epoch.Add(-time.Hour), model.EventPending)
	far := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	far.Origin = ptr("0190d5a0-2222-7000-8000-00000000f001") // recorded by a node below E
	at := epoch.Add(-time.Minute)

	// Insert, and the same record again under the next sequence: a duplicate.
	res := f.sync(t, f.key, f.node.ID, item(1, model.ItemUpstreamEvent, e1, at), item(2, model.ItemUpstreamEvent, e1, at),
		item(3, model.ItemUpstreamEvent, far, at))
	wantStatuses(t, res, "applied", "duplicate", "applied")
	if res.AppliedThrough != 3 || res.Results[0].EventID != e1.ID {
		t.Fatalf("answer %+v", res)
	}
	got, err := f.event(t, f.tenant.ID, e1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != engine.SourceUpstream || got.Origin == nil || *got.Origin != nodeE || got.Status != model.EventPending ||
		!got.CreatedAt.Equal(e1.CreatedAt.Time) || !got.UpdatedAt.Equal(e1.UpdatedAt.Time) || got.IdempotencyKey != e1.IdempotencyKey ||
		got.ZoneCode == nil || *got.ZoneCode != "north" || got.Delivery.Outstanding != 0 || len(got.Delivery.Plan) != 0 ||
		string(got.Payload) != `{"lat":45.5,"lng":4.5}` {
		t.Fatalf("stored %+v", got)
	}
	if got, _ := f.event(t, f.tenant.ID, far.ID); got == nil || *got.Origin != *far.Origin {
		t.Fatalf("an event's own origin is kept: %+v", got)
	}

	// Newer updated_at wins; an older copy arriving after it changes nothing.
	closed := *e1
	closed.Status, closed.UpdatedAt, closed.ClosedAt = model.EventClosed, model.At(epoch.Add(-30*time.Minute)), ptr(model.At(epoch.Add(-30*time.Minute)))
	delivered := *e1
	delivered.Status, delivered.UpdatedAt = model.EventDelivered, model.At(epoch.Add(-50*time.Minute))
	res = f.sync(t, f.key, f.node.ID, item(4, model.ItemUpstreamEvent, closed, at), item(5, model.ItemUpstreamEvent, delivered, at),
		item(6, model.ItemUpstreamEvent, e1, at))
	wantStatuses(t, res, "applied", "duplicate", "duplicate")
	if got, _ := f.event(t, f.tenant.ID, e1.ID); got.Status != model.EventClosed || got.ClosedAt == nil {
		t.Fatalf("after newer and older: %+v", got)
	}
	// Its idempotency_key names no event here: keys belong to the node that took them.
	_ = f.e.View(context.Background(), func(tx model.Tx) error {
		if rec, err := tx.EventReply(f.tenant.ID, e1.IdempotencyKey); rec != nil || err != nil {
			t.Errorf("event reply %v %v", rec, err)
		}
		return nil
	})

	// Listed and filtered by origin; another tenant sees nothing.
	list, _, err := f.e.Events(context.Background(), f.key, model.EventFilter{Origin: nodeE}, model.Page{Limit: 50})
	if err != nil || len(list) != 1 || list[0].ID != e1.ID {
		t.Fatalf("events of origin E: %v %+v", err, list)
	}
	if list, _, _ := f.e.Events(context.Background(), f.key, model.EventFilter{ZoneCode: "north", Status: model.EventClosed}, model.Page{Limit: 50}); len(list) != 1 {
		t.Fatalf("events of zone north, closed: %+v", list)
	}
	if _, err := f.event(t, f.other.ID, e1.ID); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("another tenant: %v", err)
	}
	f.assertNothingTriggered(t)

	// The check above would have seen a local event's work.
	if _, err := f.e.IngestEvent(context.Background(), model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin},
		model.EventInput{Type: "FIRE", Priority: "critical", Vertical: "emergency", IdempotencyKey: "local-1", ZoneCode: "north"}, jsonRender(201)); err != nil {
		t.Fatal(err)
	}
	_ = f.e.View(context.Background(), func(tx model.Tx) error {
		due, _ := tx.DueOutbox()
		if len(due) == 0 {
			t.Error("a local event made no outbox entry: the side-effect checks are blind")
		}
		return nil
	})
}

func TestUpstream_EventOfAnotherOrigin(t *testing.T) {
	f := newUpstreamFix(t)
	// A local event of the central node is never replaced by a replica with its id.
	var local string
	reply, err := f.e.IngestEvent(context.Background(), model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin},
		model.EventInput{Type: "FIRE", Priority: "low", Vertical: "emergency", IdempotencyKey: "local-1"}, jsonRender(201))
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		EventID string `json:"event_id"`
	}
	_ = json.Unmarshal(reply.Body, &acc)
	local = acc.EventID
	ev := edgeEvent(epoch, model.EventDelivered)
	ev.ID, ev.UpdatedAt = local, model.At(epoch.Add(time.Hour))
	res := f.sync(t, f.key, f.node.ID, item(1, model.ItemUpstreamEvent, ev, epoch))
	wantStatuses(t, res, "rejected:conflict:payload.event_id")
	if got, _ := f.event(t, f.tenant.ID, local); got.Source != engine.SourceAPI || got.Origin != nil {
		t.Fatalf("local event replaced: %+v", got)
	}
}

func TestUpstream_Dispatch(t *testing.T) {
	f := newUpstreamFix(t)
	edgeTeam := model.NewID()
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	m := edgeMission(epoch.Add(-time.Hour), ev.ID, edgeTeam)
	d := &model.Dispatch{ID: m.DispatchID, TenantID: model.NewID(), EventID: ev.ID, TeamID: edgeTeam,
		DispatchedBy: model.NilID, DispatchedAt: m.DispatchedAt, Notes: "go", MissionID: m.ID}
	again := *d
	again.Notes = "changed"
	at := epoch.Add(-time.Minute)
	res := f.sync(t, f.key, f.node.ID, item(1, model.ItemUpstreamDispatch, d, at), item(2, model.ItemUpstreamDispatch, again, at))
	wantStatuses(t, res, "applied", "duplicate")
	_ = f.e.View(context.Background(), func(tx model.Tx) error {
		got, err := tx.Dispatch(f.tenant.ID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.TenantID != f.tenant.ID || got.Origin == nil || *got.Origin != nodeE || got.Notes != "go" ||
			!got.DispatchedAt.Equal(d.DispatchedAt.Time) || got.MissionID != m.ID {
			t.Errorf("stored %+v", got)
		}
		if _, err := tx.Dispatch(f.other.ID, d.ID); !model.IsKind(err, model.KindNotFound) {
			t.Errorf("another tenant: %v", err)
		}
		return nil
	})
	f.assertNothingTriggered(t)
}

func TestUpstream_Mission(t *testing.T) {
	f := newUpstreamFix(t)
	edgeTeam := model.NewID() // a team the central node does not know
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	created := edgeMission(epoch.Add(-time.Hour), ev.ID, edgeTeam) // its event is never replicated here
	ack := moved(created, model.MissionAck, epoch.Add(-50*time.Minute), "")
	done := moved(moved(moved(ack, model.MissionOnRoute, epoch.Add(-40*time.Minute), ""), model.MissionOnSite,
		epoch.Add(-30*time.Minute), ""), model.MissionCompleted, epoch.Add(-20*time.Minute), `{"note": "ok"}`)
	at := epoch.Add(-time.Minute)

	res := f.sync(t, f.key, f.node.ID,
		item(1, model.ItemUpstreamMission, created, at),
		item(2, model.ItemUpstreamMission, created, at), // equal
		item(3, model.ItemUpstreamMission, ack, at),     // two moves more
		item(4, model.ItemUpstreamMission, created, at), // older, arriving later
		item(5, model.ItemUpstreamMission, ack, at),     // again
	)
	wantStatuses(t, res, "applied", "duplicate", "applied", "duplicate", "duplicate")
	got := f.mission(t, created.ID)
	if got.Status != model.MissionAck || len(got.History) != 3 || got.Origin == nil || *got.Origin != nodeE ||
		got.AckAt == nil || !got.CreatedAt.Equal(created.CreatedAt.Time) || got.TeamID != edgeTeam || got.Code != "ABCDE" {
		t.Fatalf("after ack: %+v", got)
	}

	// To the end, with feedback; the same record with its feedback re-spaced is equal.
	res = f.sync(t, f.key, f.node.ID, item(6, model.ItemUpstreamMission, done, at), item(7, model.ItemUpstreamMission, ack, at))
	wantStatuses(t, res, "applied", "duplicate")
	respaced := *done
	respaced.History = append([]model.MissionMove(nil), done.History...)
	respaced.History[len(respaced.History)-1].Feedback = json.RawMessage(`{ "note" :"ok" }`)
	res = f.sync(t, f.key, f.node.ID, item(8, model.ItemUpstreamMission, &respaced, at))
	wantStatuses(t, res, "duplicate")
	got = f.mission(t, created.ID)
	if got.Status != model.MissionCompleted || len(got.History) != 6 || got.CompletedAt == nil || string(got.Feedback) != `{"note":"ok"}` {
		t.Fatalf("after done: %+v", got)
	}
	// Another event or team under the same id is a conflict.
	other := *done
	other.History = append(append([]model.MissionMove(nil), done.History...), model.MissionMove{From: model.MissionCompleted,
		To: model.MissionCompleted, At: model.At(epoch), Actor: model.NilID, Source: engine.MoveSourceSystem})
	other.TeamID = model.NewID()
	res = f.sync(t, f.key, f.node.ID, item(9, model.ItemUpstreamMission, &other, at))
	wantStatuses(t, res, "rejected:conflict:payload.id")

	// Its own origin is kept; an unknown team's missions are listed by team and by origin.
	far := edgeMission(epoch.Add(-10*time.Minute), ev.ID, edgeTeam)
	far.Origin = ptr("0190d5a0-2222-7000-8000-00000000f001")
	f.sync(t, f.key, f.node.ID, item(10, model.ItemUpstreamMission, far, at))
	if got := f.mission(t, far.ID); *got.Origin != *far.Origin {
		t.Fatalf("origin of far: %v", *got.Origin)
	}
	sup := model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleOperationalSupervisor}
	for _, c := range []struct {
		q    model.MissionQuery
		want int
	}{
		{model.MissionQuery{Origin: nodeE}, 1},
		{model.MissionQuery{Origin: *far.Origin}, 1},
		{model.MissionQuery{TeamID: edgeTeam}, 2},
		{model.MissionQuery{TeamID: edgeTeam, Status: model.MissionCompleted}, 1},
		{model.MissionQuery{EventID: ev.ID}, 2},
		{model.MissionQuery{TeamID: f.team.ID}, 0},
	} {
		list, _, err := f.e.Missions(context.Background(), sup, c.q, model.Page{Limit: 50})
		if err != nil || len(list) != c.want {
			t.Errorf("missions %+v: %v, %d, want %d", c.q, err, len(list), c.want)
		}
	}
	if m, err := f.e.Mission(context.Background(), sup, created.ID); err != nil || m.ID != created.ID {
		t.Fatalf("GET mission: %v", err)
	}
	// A field operator of the central node sees the missions of its own teams only.
	if list, _, _ := f.e.Missions(context.Background(), f.op, model.MissionQuery{}, model.Page{Limit: 50}); len(list) != 0 {
		t.Fatalf("field operator sees %d replicated missions", len(list))
	}
	if _, err := f.e.Mission(context.Background(), f.op, created.ID); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("field operator GET: %v", err)
	}
	otherSup := model.Principal{TenantID: f.other.ID, TenantActive: true, Role: model.RoleOperationalSupervisor}
	if _, err := f.e.Mission(context.Background(), otherSup, created.ID); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("another tenant GET: %v", err)
	}
	// A completed replica holds no code here, freed no team and closed no event.
	_ = f.e.View(context.Background(), func(tx model.Tx) error {
		if id, err := tx.MissionByCode(f.tenant.ID, "ABCDE"); !model.IsKind(err, model.KindNotFound) {
			t.Errorf("code indexed: %s %v", id, err)
		}
		return nil
	})
	f.assertNothingTriggered(t)
}

// TestUpstream_MissionOfAReplicatedEvent: a mission's event replicated first stays as
// the edge sent it when the mission completes (only the edge's event record closes it).
func TestUpstream_MissionOfAReplicatedEvent(t *testing.T) {
	f := newUpstreamFix(t)
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	m := edgeMission(epoch.Add(-time.Hour), ev.ID, f.team.ID) // by chance, a team id the central node knows
	done := moved(moved(moved(moved(m, model.MissionAck, epoch.Add(-50*time.Minute), ""), model.MissionOnRoute,
		epoch.Add(-40*time.Minute), ""), model.MissionOnSite, epoch.Add(-30*time.Minute), ""), model.MissionCompleted,
		epoch.Add(-20*time.Minute), "")
	at := epoch.Add(-time.Minute)
	res := f.sync(t, f.key, f.node.ID, item(1, model.ItemUpstreamEvent, ev, at), item(2, model.ItemUpstreamMission, m, at),
		item(3, model.ItemUpstreamMission, done, at))
	wantStatuses(t, res, "applied", "applied", "applied")
	if got, _ := f.event(t, f.tenant.ID, ev.ID); got.Status != model.EventDelivered || got.ClosedAt != nil {
		t.Fatalf("event changed by its mission: %+v", got)
	}
	// The team's field operator sees it: the existing rule, by team id.
	if list, _, _ := f.e.Missions(context.Background(), f.op, model.MissionQuery{}, model.Page{Limit: 50}); len(list) != 1 {
		t.Fatalf("field operator of the team sees %d", len(list))
	}
	f.assertNothingTriggered(t)
}

func TestUpstream_Forbidden(t *testing.T) {
	f := newUpstreamFix(t)
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	at := epoch.Add(-time.Minute)
	local := map[string]any{"type": "FIRE", "priority": "low", "vertical": "emergency", "idempotency_key": "dev-1"}
	tech := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermDevicesManage, model.PermEventsWrite}}

	// A field device: upstream items forbidden, its event applied.
	res := f.sync(t, tech, f.field.ID, item(1, model.ItemUpstreamEvent, ev, at), item(2, engine.ItemEvent, local, at),
		item(3, model.ItemUpstreamMission, edgeMission(epoch, ev.ID, model.NewID()), at))
	wantStatuses(t, res, "rejected:forbidden:", "applied", "rejected:forbidden:")
	if res.AppliedThrough != 3 {
		t.Fatalf("applied_through %d", res.AppliedThrough)
	}
	// A node device synced by a key without devices:manage.
	syncOnly := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermDevicesSync}}
	wantStatuses(t, f.sync(t, syncOnly, f.node.ID, item(1, model.ItemUpstreamEvent, ev, at)), "rejected:forbidden:")
	// A node device registered without a hardware_id has no node id to give as origin.
	bare := f.register(t, f.key, model.DeviceInput{Name: "node", Platform: engine.PlatformNode})
	wantStatuses(t, f.sync(t, f.key, bare.ID, item(1, model.ItemUpstreamEvent, ev, at)), "rejected:forbidden:")
	if _, err := f.event(t, f.tenant.ID, ev.ID); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("a forbidden replica was stored: %v", err)
	}
	// A node device of another tenant is not this tenant's device.
	if _, err := f.e.SyncDevice(context.Background(), f.otherKey, nil, model.DeviceSyncInput{DeviceID: f.node.ID, Items: []json.RawMessage{}},
		model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)}); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("another tenant's sync: %v", err)
	}
}

// TestUpstream_BadPayloads: each bad record is rejected naming its field; the good ones
// beside it apply.
func TestUpstream_BadPayloads(t *testing.T) {
	f := newUpstreamFix(t)
	at := epoch.Add(-time.Minute)
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	evJSON, _ := json.Marshal(ev)
	m := edgeMission(epoch.Add(-time.Hour), ev.ID, model.NewID())
	mJSON, _ := json.Marshal(m)
	d := &model.Dispatch{ID: m.DispatchID, EventID: ev.ID, TeamID: m.TeamID, DispatchedBy: model.NilID,
		DispatchedAt: m.DispatchedAt, MissionID: m.ID}
	dJSON, _ := json.Marshal(d)
	// with returns raw with fields replaced (nil deletes).
	with := func(raw []byte, set map[string]any) map[string]any {
		var obj map[string]any
		_ = json.Unmarshal(raw, &obj)
		for k, v := range set {
			if v == nil {
				delete(obj, k)
			} else {
				obj[k] = v
			}
		}
		return obj
	}
	badHistory := with(mJSON, map[string]any{"history": []any{map[string]any{"from": "", "to": "CREATED", "at": "2026-06-09T09:00:00.000Z"},
		map[string]any{"from": "CREATED", "to": "LOST", "at": "2026-06-09T09:01:00.000Z"}}})
	badAt := with(mJSON, map[string]any{"history": []any{map[string]any{"from": "", "to": "CREATED", "at": "yesterday"}}})
	cases := []struct {
		kind    string
		payload any
		field   string
	}{
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"event_id": "nope"}), "payload.event_id"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"event_id": nil}), "payload.event_id"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"event_id": "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f"}), "payload.event_id"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"id": "6f1c2a4e-8b3d-4c5e-9f60-7a8b9c0d1e2f"}), "payload.id"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"type": nil}), "payload.type"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"type": 5}), "payload.type"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"priority": "urgent"}), "payload.priority"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"status": "lost"}), "payload.status"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"channel_selected": "pigeon"}), "payload.channel_selected"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"updated_at": nil}), "payload.updated_at"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"created_at": "last tuesday"}), "payload.created_at"},
		{model.ItemUpstreamEvent, with(evJSON, map[string]any{"origin": ""}), "payload.origin"},
		{model.ItemUpstreamDispatch, with(dJSON, map[string]any{"mission_id": nil}), "payload.mission_id"},
		{model.ItemUpstreamDispatch, with(dJSON, map[string]any{"team_id": "x"}), "payload.team_id"},
		{model.ItemUpstreamDispatch, with(dJSON, map[string]any{"dispatched_at": nil}), "payload.dispatched_at"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"status": "LOST"}), "payload.status"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"status": "ACK"}), "payload.status"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"event_id": nil}), "payload.event_id"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"history": []any{}}), "payload.history"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"history": "CREATED"}), "payload.history"},
		{model.ItemUpstreamMission, badHistory, "payload.history[1].to"},
		{model.ItemUpstreamMission, badAt, "payload.history[0].at"},
		{model.ItemUpstreamMission, with(mJSON, map[string]any{"ack_at": 7}), "payload.ack_at"},
	}
	// Good items first and last, the bad ones between.
	items := []any{item(1, model.ItemUpstreamEvent, ev, at)}
	want := []string{"applied"}
	for i, c := range cases {
		items = append(items, item(int64(i+2), c.kind, c.payload, at))
		want = append(want, "rejected:validation_error:"+c.field)
	}
	n := int64(len(cases) + 2)
	items = append(items, item(n, model.ItemUpstreamMission, m, at), item(n+1, model.ItemUpstreamDispatch, d, at))
	want = append(want, "applied", "applied")
	res := f.sync(t, f.key, f.node.ID, items...)
	wantStatuses(t, res, want...)
	if res.AppliedThrough != n+1 || res.GapCount != 0 {
		t.Fatalf("applied_through %d, gaps %d", res.AppliedThrough, res.GapCount)
	}
	for _, r := range res.Results {
		if r.Status == model.ItemRejected && r.Message == "" {
			t.Fatalf("a rejection without a message: %+v", r)
		}
	}
}

// TestUpstream_ReplayAfterRestart: items held above a gap apply when it fills; the same
// items sent again after a restart are duplicates, and nothing changes.
func TestUpstream_ReplayAfterRestart(t *testing.T) {
	f := newUpstreamFix(t)
	at := epoch.Add(-time.Minute)
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	m := edgeMission(epoch.Add(-time.Hour), ev.ID, model.NewID())
	ack := moved(m, model.MissionAck, epoch.Add(-50*time.Minute), "")
	d := &model.Dispatch{ID: m.DispatchID, EventID: ev.ID, TeamID: m.TeamID, DispatchedBy: model.NilID,
		DispatchedAt: m.DispatchedAt, MissionID: m.ID}
	items := []any{item(1, model.ItemUpstreamEvent, ev, at), item(2, model.ItemUpstreamDispatch, d, at),
		item(3, model.ItemUpstreamMission, m, at), item(4, model.ItemUpstreamMission, ack, at)}

	// 3 and 4 first: held above the gap; then 1 and 2 release them, in order.
	res := f.sync(t, f.key, f.node.ID, items[2], items[3])
	wantStatuses(t, res, "pending", "pending")
	if res.AppliedThrough != 0 {
		t.Fatalf("applied_through %d", res.AppliedThrough)
	}
	res = f.sync(t, f.key, f.node.ID, items[0], items[1])
	wantStatuses(t, res, "applied", "applied")
	if res.AppliedThrough != 4 || len(res.Released) != 2 || res.Released[0].Status != "applied" || res.Released[1].Status != "applied" {
		t.Fatalf("release: %+v", res)
	}
	before := f.mission(t, m.ID)
	if before.Status != model.MissionAck {
		t.Fatalf("mission %s", before.Status)
	}

	f.open(t)
	res = f.sync(t, f.key, f.node.ID, items...)
	wantStatuses(t, res, "duplicate", "duplicate", "duplicate", "duplicate")
	for _, r := range res.Results {
		if r.Outcome != model.ItemApplied {
			t.Fatalf("outcome %+v", r)
		}
	}
	if res.AppliedThrough != 4 {
		t.Fatalf("applied_through %d", res.AppliedThrough)
	}
	after := f.mission(t, m.ID)
	if !after.UpdatedAt.Equal(before.UpdatedAt.Time) || len(after.History) != len(before.History) {
		t.Fatalf("changed by a replay: %+v", after)
	}
	f.assertNothingTriggered(t)
}

// A replicated mission moved on the central node records the move as a fact of this node
// (docs/decisions/0198-mission-moves-union.md), triggers nothing the owner does, and merges
// with the owner's next copy by union; a replicated event is still dispatched on its node
// (a team routed to no site: 409).
func TestUpstream_ReplicaMovesAreFacts(t *testing.T) {
	f := newUpstreamFix(t)
	ev := edgeEvent(epoch.Add(-time.Hour), model.EventDelivered)
	m := edgeMission(epoch.Add(-time.Hour), ev.ID, f.team.ID) // C's own team id, so C's operator sees it
	at := epoch.Add(-time.Minute)
	wantStatuses(t, f.sync(t, f.key, f.node.ID, item(1, model.ItemUpstreamEvent, ev, at),
		item(2, model.ItemUpstreamMission, m, at)), "applied", "applied")
	sup := model.Principal{TenantID: f.tenant.ID, TenantActive: true, Role: model.RoleOperationalSupervisor, UserID: model.NewID()}
	if _, err := f.e.UpdateMissionStatus(context.Background(), sup, m.ID, model.MissionStatusInput{Status: model.MissionOnSite},
		engine.MoveSourceAPI, nil, nil); err != nil {
		t.Fatal(err)
	}
	got := f.mission(t, m.ID)
	if got.Status != model.MissionOnSite || len(got.History) != 2 || got.History[1].Node == "" || got.OnSiteAt == nil ||
		len(got.Implied) != 3 || got.AckAt != nil {
		t.Fatalf("a move on a replica: %+v", got)
	}
	// The owner's next copy (ACK, before the central move) merges: ON_SITE stays, ACK is no
	// longer implied, both facts are kept.
	ack := moved(m, model.MissionAck, epoch.Add(-50*time.Minute), "")
	wantStatuses(t, f.sync(t, f.key, f.node.ID, item(3, model.ItemUpstreamMission, ack, at)), "applied")
	got = f.mission(t, m.ID)
	if got.Status != model.MissionOnSite || len(got.History) != 4 || got.AckAt == nil || len(got.Implied) != 1 {
		t.Fatalf("merged with the owner's copy: %+v", got)
	}
	err := func() error {
		_, err := f.e.DispatchTeam(context.Background(), sup, model.DispatchInput{EventID: ev.ID, TeamID: f.team.ID}, nil)
		return err
	}()
	AssertKind(t, err, model.KindConflict)
	if tm := f.team; tm.Status != engine.TeamAvailable {
		t.Fatalf("team %s", tm.Status)
	}
	f.assertNothingTriggered(t)
}
