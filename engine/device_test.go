package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// deviceFix is a tenant with zone north, team A (field operator opA and Al as members)
// and team B (field operator opB), a supervisor, a company_tech, and a second tenant. Its
// store can be closed and opened again (a restart) with the same clock.
type deviceFix struct {
	dir          string
	db           interface{ Close() error }
	e            *engine.Engine
	clock        *model.FakeClock
	tenant       *model.Tenant
	other        *model.Tenant
	teamA, teamB *model.Team
	opA, opB     model.Principal
	sup, tech    model.Principal
	otherAdmin   model.Principal
}

func newDeviceFix(t *testing.T) *deviceFix {
	t.Helper()
	f := &deviceFix{dir: t.TempDir(), clock: model.NewFakeClock(epoch)}
	f.open(t)
	f.tenant = MustCreateTenant(t, f.e, "acme").Tenant
	f.other = MustCreateTenant(t, f.e, "other").Tenant
	user := func(email string, role model.Role) model.Principal {
		u := MustCreateUser(t, f.e, "acme", email, role)
		return model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: u.ID, Role: role}
	}
	f.opA = user("op-a@acme.example", model.RoleFieldOperator)
	f.opB = user("op-b@acme.example", model.RoleFieldOperator)
	f.sup = user("sup@acme.example", model.RoleOperationalSupervisor)
	f.tech = user("tech@acme.example", model.RoleCompanyTech)
	oa := MustCreateUser(t, f.e, "other", "admin@other.example", model.RoleCompanyAdmin)
	f.otherAdmin = adminOf(f.other, oa.ID)
	mustDo(t, func() (err error) {
		if _, err := f.e.CreateZone(context.Background(), tenantAdmin(f.tenant.ID), model.ZoneInput{Code: "north", Name: "North",
			Boundary: polygon(square(4, 45, 1))}, nil); err != nil {
			return err
		}
		if f.teamA, err = f.e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Alpha", ZoneCode: "north",
			Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "Ann", UserID: f.opA.UserID}, {Name: "Al"}}}, nil); err != nil {
			return err
		}
		f.teamB, err = f.e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: "Bravo", ZoneCode: "north",
			Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "Bob", UserID: f.opB.UserID}}}, nil)
		return err
	})
	return f
}

// open (re)opens the store of the fixture's directory with a fresh engine: a restart.
func (f *deviceFix) open(t *testing.T) {
	t.Helper()
	f.db, f.e = reopen(t, f.dir, f.db, engine.Options{Clock: f.clock})
}

func (f *deviceFix) register(t *testing.T, p model.Principal, in model.DeviceInput) (*model.Device, bool, error) {
	t.Helper()
	var d *model.Device
	var created bool
	err := func() (err error) {
		d, created, err = f.e.RegisterDevice(context.Background(), p, in, nil)
		return err
	}()
	return d, created, err
}

func (f *deviceFix) mustRegister(t *testing.T, p model.Principal, in model.DeviceInput) *model.Device {
	t.Helper()
	d, created, err := f.register(t, p, in)
	if err != nil || !created {
		t.Fatalf("register: %v (created %v)", err, created)
	}
	return d
}

func jsonRender(status int) model.Render {
	return func(v any) (model.Reply, error) {
		b, err := json.Marshal(v)
		return model.Reply{Status: status, Body: b}, err
	}
}

// mustIngest takes in for p's tenant as POST /v1/events does and returns its answer.
func mustIngest(t *testing.T, e *engine.Engine, p model.Principal, in model.EventInput) model.EventAccepted {
	t.Helper()
	reply, err := e.IngestEvent(context.Background(), p, in, jsonRender(201))
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	var acc model.EventAccepted
	if err := json.Unmarshal(reply.Body, &acc); err != nil {
		t.Fatal(err)
	}
	return acc
}

// rawItems marshals device-sync items, keeping any json.RawMessage as it is.
func rawItems(t *testing.T, items ...any) []json.RawMessage {
	t.Helper()
	raws := make([]json.RawMessage, len(items))
	for i, it := range items {
		if raw, ok := it.(json.RawMessage); ok {
			raws[i] = raw
			continue
		}
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = b
	}
	return raws
}

// sync sends items (each marshalled unless it is a json.RawMessage) and decodes the answer.
func (f *deviceFix) sync(t *testing.T, p model.Principal, deviceID string, ack *model.Int, items ...any) (*model.DeviceSyncResult, error) {
	t.Helper()
	raws := rawItems(t, items...)
	reply, err := f.e.SyncDevice(context.Background(), p, nil, model.DeviceSyncInput{DeviceID: deviceID, Items: raws, AckThrough: ack},
		model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)})
	if err != nil {
		return nil, err
	}
	var res model.DeviceSyncResult
	if err := json.Unmarshal(reply.Body, &res); err != nil {
		t.Fatal(err)
	}
	return &res, nil
}

func (f *deviceFix) mustSync(t *testing.T, p model.Principal, deviceID string, ack *model.Int, items ...any) *model.DeviceSyncResult {
	t.Helper()
	res, err := f.sync(t, p, deviceID, ack, items...)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

// item is one device item.
func item(seq int64, kind string, payload any, at time.Time) map[string]any {
	return map[string]any{"sequence_number": seq, "kind": kind, "payload": payload,
		"captured_at": at.UTC().Format(model.TimeLayout)}
}

// storedMission stores a CREATED mission of a team (and its event) created at at, and
// puts the team on_mission.
func (f *deviceFix) storedMission(t *testing.T, team *model.Team, at time.Time) *model.Mission {
	t.Helper()
	now := model.At(at)
	ev := &model.Event{ID: model.NewIDAt(now.Time), Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: model.NewID(), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
		ChannelsAttempted: []string{}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
	m := &model.Mission{ID: model.NewIDAt(now.Time), EventID: ev.ID, TeamID: team.ID, Status: model.MissionCreated,
		Vertical: "emergency", Priority: "high", DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: f.sup.UserID,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: f.sup.UserID, Source: engine.MoveSourceAPI}},
		CreatedAt: now, UpdatedAt: now}
	MustUpdate(t, f.e, func(tx model.Tx) error {
		if err := tx.PutEvent(f.tenant.ID, ev); err != nil {
			return err
		}
		if err := tx.PutMission(f.tenant.ID, m); err != nil {
			return err
		}
		tm, err := tx.Team(f.tenant.ID, team.ID)
		if err != nil {
			return err
		}
		tm.Status = engine.TeamOnMission
		return tx.PutTeam(f.tenant.ID, tm)
	})
	return m
}

func (f *deviceFix) mission(t *testing.T, id string) *model.Mission {
	t.Helper()
	var m *model.Mission
	if err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		m, err = tx.Mission(f.tenant.ID, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *deviceFix) move(t *testing.T, p model.Principal, id, status string) {
	t.Helper()
	mustDo(t, func() error {
		_, err := f.e.UpdateMissionStatus(context.Background(), p, id, model.MissionStatusInput{Status: status}, engine.MoveSourceAPI, nil, nil)
		return err
	})
}

func TestDevice_Register(t *testing.T) {
	f := newDeviceFix(t)
	key := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermDevicesManage}}
	in := model.DeviceInput{Name: " Tablet 7 ", Platform: "android", TeamID: f.teamA.ID, ZoneCode: "north", HardwareID: "imei-1"}
	d := f.mustRegister(t, key, in)
	if !model.ValidID(d.ID) || d.Name != "Tablet 7" || *d.TeamID != f.teamA.ID || *d.ZoneCode != "north" ||
		*d.HardwareID != "imei-1" || !d.RegisteredAt.Equal(model.At(epoch).Time) || d.RegisteredBy != key.KeyID {
		t.Fatalf("device: %+v", d)
	}

	t.Run("SameHardwareSameDevice", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		again, created, err := f.register(t, key, model.DeviceInput{Name: "renamed", Platform: "ios", HardwareID: "imei-1"})
		if err != nil || created || again.ID != d.ID || again.Name != "Tablet 7" || !again.RegisteredAt.Equal(d.RegisteredAt.Time) {
			t.Fatalf("again: %+v created %v err %v", again, created, err)
		}
		// The field operator of the device's team gets it too; another team's is a conflict.
		if again, created, err := f.register(t, f.opA, model.DeviceInput{Name: "x", Platform: "p", TeamID: f.teamA.ID, HardwareID: "imei-1"}); err != nil || created || again.ID != d.ID {
			t.Fatalf("op A: %+v %v %v", again, created, err)
		}
		_, _, err = f.register(t, f.opB, model.DeviceInput{Name: "x", Platform: "p", TeamID: f.teamB.ID, HardwareID: "imei-1"})
		AssertKind(t, err, model.KindConflict)
		// Another tenant's hardware index is its own.
		od, created, err := f.register(t, f.otherAdmin, model.DeviceInput{Name: "x", Platform: "p", HardwareID: "imei-1"})
		if err != nil || !created || od.ID == d.ID {
			t.Fatalf("other tenant: %+v %v %v", od, created, err)
		}
	})

	t.Run("FieldOperator", func(t *testing.T) {
		own := f.mustRegister(t, f.opA, model.DeviceInput{Name: "Ann's phone", Platform: "android", TeamID: f.teamA.ID})
		if own.HardwareID != nil || own.ZoneCode != nil || own.RegisteredBy != f.opA.UserID {
			t.Fatalf("own device: %+v", own)
		}
		_, _, err := f.register(t, f.opA, model.DeviceInput{Name: "x", Platform: "p", TeamID: f.teamB.ID})
		AssertKind(t, err, model.KindForbidden)
		// A member of one team may leave the team out; a member of none may not.
		if d := f.mustRegister(t, f.opA, model.DeviceInput{Name: "x", Platform: "p"}); d.TeamID == nil || *d.TeamID != f.teamA.ID {
			t.Fatalf("a field operator's device without team_id: %+v", d)
		}
		loner := model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: model.NewID(), Role: model.RoleFieldOperator}
		_, _, err = f.register(t, loner, model.DeviceInput{Name: "x", Platform: "p"})
		AssertInvalid(t, err, "team_id")
	})

	t.Run("Forbidden", func(t *testing.T) {
		syncKey := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermDevicesSync}}
		for _, p := range []model.Principal{f.sup, syncKey} {
			_, _, err := f.register(t, p, model.DeviceInput{Name: "x", Platform: "p", TeamID: f.teamA.ID})
			AssertKind(t, err, model.KindForbidden)
		}
	})

	t.Run("Validation", func(t *testing.T) {
		for _, c := range []struct {
			in    model.DeviceInput
			field string
		}{
			{model.DeviceInput{Platform: "p"}, "name"},
			{model.DeviceInput{Name: "  ", Platform: "p"}, "name"},
			{model.DeviceInput{Name: "x"}, "platform"},
			{model.DeviceInput{Name: "x", Platform: "p", TeamID: "nope"}, "team_id"},
			{model.DeviceInput{Name: "x", Platform: "p", TeamID: model.NewID()}, "team_id"},
			{model.DeviceInput{Name: "x", Platform: "p", TeamID: f.teamA.ID, ZoneCode: "south"}, "zone_code"},
			{model.DeviceInput{Name: "x", Platform: "p", HardwareID: string(make([]byte, 129))}, "hardware_id"},
		} {
			_, _, err := f.register(t, f.tech, c.in)
			AssertInvalid(t, err, c.field)
		}
	})
}

// TestDeviceQueue_MissionAndEvent: a mission dispatched to the device's team and an event
// of its zone enter its queue; acknowledging them makes the mission SENT (channel device)
// and delivers the event. An event the device sent is not queued back to it.
func TestDeviceQueue_MissionAndEvent(t *testing.T) {
	ctx := context.Background()
	f := newDeviceFix(t)
	dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.teamA.ID, ZoneCode: "north"})
	other := f.mustRegister(t, f.tech, model.DeviceInput{Name: "relay", Platform: "linux", ZoneCode: "north"})

	// An event of zone north with no webhook: the device queues are its only target.
	acc := mustIngest(t, f.e, f.sup, model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: "ev-1", ZoneCode: "north"})
	evID := acc.EventID
	if acc.ChannelSelected != model.ChannelREST || acc.Status != model.EventPending {
		t.Fatalf("event: %+v", acc)
	}
	var d *model.Dispatch
	mustDo(t, func() (err error) {
		d, err = f.e.DispatchTeam(context.Background(), f.sup, model.DispatchInput{EventID: evID, TeamID: f.teamA.ID}, nil)
		return err
	})

	res := f.mustSync(t, f.opA, dev.ID, nil)
	if len(res.Queue) != 2 || res.QueuePending != 2 || res.AckThrough != 0 {
		t.Fatalf("queue: %+v", res)
	}
	q0, q1 := res.Queue[0], res.Queue[1]
	if q0.QueueSequence != 1 || q0.Kind != model.QueueEvent || q0.Event == nil || q0.Event.ID != evID ||
		q1.QueueSequence != 2 || q1.Kind != model.QueueMission || q1.Mission == nil || q1.Mission.ID != d.MissionID ||
		q1.Mission.Status != model.MissionCreated {
		t.Fatalf("queue items: %+v %+v", q0, q1)
	}
	// A mission comes with what the team needs to act: its event, the team's name and the
	// dispatcher's (a device reads no event, team or user otherwise).
	supName := "User sup@acme.example" // MustCreateUser's name
	if q1.Event == nil || q1.Event.ID != evID || q1.TeamName != "Alpha" || supName == "" || q1.DispatcherName != supName {
		t.Fatalf("the mission's context: event %+v, team %q, dispatcher %q (want %q)", q1.Event, q1.TeamName, q1.DispatcherName, supName)
	}
	// The other device of the zone has the event but not the mission (not of team A).
	items, _, err := f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 50})
	if err != nil || len(items) != 1 || items[0].Kind != model.QueueEvent {
		t.Fatalf("other queue: %+v %v", items, err)
	}

	// Ack of the event only: delivered; the mission stays CREATED and queued.
	res = f.mustSync(t, f.opA, dev.ID, ptr[model.Int](1))
	if len(res.Queue) != 1 || res.Queue[0].QueueSequence != 2 || res.AckThrough != 1 {
		t.Fatalf("after ack 1: %+v", res)
	}
	var ev *model.Event
	_ = f.e.View(ctx, func(tx model.Tx) (err error) { ev, err = tx.Event(f.tenant.ID, evID); return err })
	if ev.Status != model.EventDelivered || ev.DeliveredAt == nil {
		t.Fatalf("event after ack: %s", ev.Status)
	}
	if m := f.mission(t, d.MissionID); m.Status != model.MissionCreated {
		t.Fatalf("mission before its ack: %s", m.Status)
	}
	f.clock.Advance(time.Second)
	res = f.mustSync(t, f.opA, dev.ID, ptr[model.Int](2))
	if len(res.Queue) != 0 || res.QueuePending != 0 {
		t.Fatalf("after ack 2: %+v", res)
	}
	m := f.mission(t, d.MissionID)
	if m.Status != model.MissionSent || m.ChannelUsed == nil || *m.ChannelUsed != engine.ChannelDevice {
		t.Fatalf("mission after ack: %+v", m)
	}
	// Acknowledging again, or less, changes nothing; beyond the last queue_sequence is 400.
	f.mustSync(t, f.opA, dev.ID, ptr[model.Int](1))
	_, err = f.sync(t, f.opA, dev.ID, ptr[model.Int](3))
	AssertInvalid(t, err, "ack_through")

	// The device's own event is not queued back to it, but reaches the other device.
	res = f.mustSync(t, f.opA, dev.ID, nil, item(1, "event", map[string]any{"type": "FLOOD", "priority": "low",
		"vertical": "emergency", "idempotency_key": "dev-ev-1", "zone_code": "north"}, epoch.Add(-time.Minute)))
	if res.Results[0].Status != model.ItemApplied || len(res.Queue) != 0 {
		t.Fatalf("own event: %+v", res)
	}
	items, _, _ = f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 50})
	if len(items) != 2 || items[1].Event.ID != res.Results[0].EventID || *items[1].Event.DeviceID != dev.ID ||
		items[1].Event.Source != engine.SourceDevice {
		t.Fatalf("other queue after the device's event: %+v", items)
	}

	// Who reads a queue: the team's members and devices:manage; not another team's operator.
	if _, _, err := f.e.DeviceQueue(ctx, f.opB, dev.ID, model.Page{Limit: 50}); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("op B reads team A's queue: %v", err)
	}
	if _, _, err := f.e.DeviceQueue(ctx, f.otherAdmin, dev.ID, model.Page{Limit: 50}); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("another tenant reads the queue: %v", err)
	}
	// Pages: one item a page, the cursor is the last queue_sequence.
	items, next, err := f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 1})
	if err != nil || len(items) != 1 || next != "1" {
		t.Fatalf("page 1: %+v %q %v", items, next, err)
	}
	if items, next, _ = f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 1, Cursor: next}); len(items) != 1 || items[0].QueueSequence != 2 || next != "" {
		t.Fatalf("page 2: %+v %q", items, next)
	}
	// A page also ends before the item that would take its JSON past MaxBytes; its first
	// item always comes.
	items, next, err = f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 50, MaxBytes: 1})
	if err != nil || len(items) != 1 || next != "1" {
		t.Fatalf("byte-capped page 1: %+v %q %v", items, next, err)
	}
	if items, next, _ = f.e.DeviceQueue(ctx, f.tech, other.ID, model.Page{Limit: 50, MaxBytes: 1, Cursor: next}); len(items) != 1 || items[0].QueueSequence != 2 || next != "" {
		t.Fatalf("byte-capped page 2: %+v %q", items, next)
	}
}

// TestDeviceSync_Access: the device must be the tenant's, and a field operator's own
// team's (or have no team).
func TestDeviceSync_Access(t *testing.T) {
	f := newDeviceFix(t)
	devA := f.mustRegister(t, f.opA, model.DeviceInput{Name: "a", Platform: "p", TeamID: f.teamA.ID})
	loose := f.mustRegister(t, f.tech, model.DeviceInput{Name: "loose", Platform: "p"})
	for _, c := range []struct {
		p    model.Principal
		id   string
		kind model.Kind
	}{
		{f.opB, devA.ID, model.KindNotFound},
		{f.otherAdmin, devA.ID, model.KindNotFound},
		{f.opA, model.NewID(), model.KindNotFound},
		{f.sup, devA.ID, model.KindForbidden},
	} {
		_, err := f.sync(t, c.p, c.id, nil)
		AssertKind(t, err, c.kind)
	}
	for _, p := range []model.Principal{f.opA, f.opB, f.tech} {
		if _, err := f.sync(t, p, loose.ID, nil); err != nil {
			t.Fatalf("sync of a device with no team: %v", err)
		}
	}
	f.mustSync(t, f.tech, devA.ID, nil)
	for _, c := range []struct {
		in    model.DeviceSyncInput
		field string
	}{
		{model.DeviceSyncInput{Items: []json.RawMessage{}}, "device_id"},
		{model.DeviceSyncInput{DeviceID: "x", Items: []json.RawMessage{}}, "device_id"},
		{model.DeviceSyncInput{DeviceID: devA.ID}, "items"},
		{model.DeviceSyncInput{DeviceID: devA.ID, Items: []json.RawMessage{}, AckThrough: ptr[model.Int](-1)}, "ack_through"},
	} {
		_, err := f.e.SyncDevice(context.Background(), f.opA, nil, c.in, model.DeviceSyncRender{Event: jsonRender(201), Answer: jsonRender(200)})
		AssertInvalid(t, err, c.field)
	}
}

// TestDeviceQueue_RegisterReleasesWaiting: an event of a zone with no target waits
// pending; a device registered to the zone becomes its target and receives it.
func TestDeviceQueue_RegisterReleasesWaiting(t *testing.T) {
	ctx := context.Background()
	f := newDeviceFix(t)
	acc := mustIngest(t, f.e, f.sup, model.EventInput{Type: "FIRE", Priority: "low", Vertical: "emergency",
		IdempotencyKey: "waiting-1", ZoneCode: "north"})
	dev := f.mustRegister(t, f.tech, model.DeviceInput{Name: "relay", Platform: "linux", ZoneCode: "north"})
	items, _, err := f.e.DeviceQueue(ctx, f.tech, dev.ID, model.Page{Limit: 50})
	if err != nil || len(items) != 1 || items[0].Event.ID != acc.EventID || len(items[0].Event.Delivery.Plan) != 1 {
		t.Fatalf("queue: %+v %v", items, err)
	}
}
