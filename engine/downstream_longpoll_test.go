package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// heldPull starts a pull that waits and returns where its answer will come, and when.
func heldPull(e *engine.Engine, p model.Principal, in model.DownPullInput) (<-chan *model.DownPull, <-chan error, time.Time) {
	ans, errs := make(chan *model.DownPull, 1), make(chan error, 1)
	began := time.Now()
	go func() {
		a, err := e.PullDownstream(context.Background(), p, in)
		ans <- a
		errs <- err
	}()
	return ans, errs, began
}

// renameZone renames a zone of the central node (a change of its downstream log).
func renameZone(t *testing.T, e *engine.Engine, tenantID, code, name string) {
	t.Helper()
	mustDo(t, func() error {
		_, err := e.UpdateZone(context.Background(), tenantAdmin(tenantID), code, model.ZonePatch{Name: &name}, nil)
		return err
	})
}

// TestDownstream_LongPoll (docs/decisions/0211-downstream-long-poll.md): a pull at the
// log's end that asks to wait is answered by the next commit that logs a change for the
// tenant, with it; with nothing new, empty when its wait ends; a pull with changes to give
// is answered at once whatever its wait; a wait above 20 s is refused.
func TestDownstream_LongPoll(t *testing.T) {
	f := newUpstreamFix(t)
	ctx := context.Background()
	// The end of the log the fixture made (its zone, team, user and settings).
	first, err := f.e.PullDownstream(ctx, f.key, model.DownPullInput{DeviceID: f.node.ID})
	if err != nil {
		t.Fatal(err)
	}
	end := first.End

	ans, errs, began := heldPull(f.e, f.key, model.DownPullInput{DeviceID: f.node.ID, After: end, Wait: 10})
	time.Sleep(100 * time.Millisecond) // the pull is held: nothing has changed
	select {
	case a := <-ans:
		t.Fatalf("a pull at the end answered before any change: %+v (%v)", a, <-errs)
	default:
	}
	renameZone(t, f.e, f.tenant.ID, "north", "North held")
	a, err := <-ans, <-errs
	if err != nil || a.Snapshot || a.Through != end+1 || len(a.Changes) != 1 || a.Changes[0].Key != "north" {
		t.Fatalf("the held pull after a change: %+v, %v", a, err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("the held pull was answered %s after it began", took)
	}

	// A change of another tenant does not answer it; its wait ends empty.
	ans, errs, began = heldPull(f.e, f.key, model.DownPullInput{DeviceID: f.node.ID, After: end + 1, Wait: 1})
	mustDo(t, func() error {
		_, err := f.e.CreateZone(ctx, tenantAdmin(f.other.ID), model.ZoneInput{Code: "else", Name: "Elsewhere",
			Boundary: polygon(square(4, 45, 1))}, nil)
		return err
	})
	a, err = <-ans, <-errs
	if took := time.Since(began); err != nil || len(a.Changes) != 0 || a.Through != end+1 || took < time.Second {
		t.Fatalf("a wait that ends: %+v, %v after %s", a, err, took)
	}

	// Behind the end: at once.
	began = time.Now()
	a, err = f.e.PullDownstream(ctx, f.key, model.DownPullInput{DeviceID: f.node.ID, After: end, Wait: 20})
	if err != nil || len(a.Changes) != 1 || time.Since(began) > time.Second {
		t.Fatalf("a pull behind the end: %+v, %v", a, err)
	}
	if _, err := f.e.PullDownstream(ctx, f.key, model.DownPullInput{DeviceID: f.node.ID, After: end, Wait: 21}); !model.IsKind(err, model.KindValidation) {
		t.Fatalf("wait 21: %v", err)
	}
}

// TestDownstream_LongPollShared: on the central tier on PostgreSQL, a pull held by one
// process is answered by a change another process commits.
func TestDownstream_LongPollShared(t *testing.T) {
	ctx := context.Background()
	es, _ := pgProcesses(t, nil, nil)
	tenant := MustCreateTenant(t, es[0], "central").Tenant
	key := model.Principal{TenantID: tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermDevicesManage, model.PermDevicesSync}}
	var node *model.Device
	mustDo(t, func() (err error) {
		if _, err = es[0].CreateZone(ctx, tenantAdmin(tenant.ID), model.ZoneInput{Code: "north", Name: "North",
			Boundary: polygon(square(4, 45, 1))}, nil); err != nil {
			return err
		}
		node, _, err = es[0].RegisterDevice(ctx, key, model.DeviceInput{Name: "site", Platform: engine.PlatformNode, HardwareID: "node-s"}, nil)
		return err
	})
	ans, errs, began := heldPull(es[0], key, model.DownPullInput{DeviceID: node.ID, After: 1, Wait: 10})
	time.Sleep(100 * time.Millisecond)
	renameZone(t, es[1], tenant.ID, "north", "North from the other process")
	a, err := <-ans, <-errs
	if err != nil || a.Through != 2 || len(a.Changes) != 1 {
		t.Fatalf("the held pull after another process's change: %+v, %v", a, err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("answered %s after it began", took)
	}
}
