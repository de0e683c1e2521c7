package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// report records a connectivity report as a field operator of the tenant.
func report(e *engine.Engine, tenantID string, in model.ConnectivityReport) (*model.ConnectivityStatus, error) {
	return reportAs(e, roleOf(tenantID, model.RoleFieldOperator), in)
}

func reportAs(e *engine.Engine, p model.Principal, in model.ConnectivityReport) (*model.ConnectivityStatus, error) {
	var out *model.ConnectivityStatus
	err := func() (err error) {
		out, err = e.ReportConnectivity(context.Background(), p, in, nil)
		return err
	}()
	return out, err
}

func stamp(t time.Time) *string { s := t.UTC().Format(time.RFC3339Nano); return &s }

func TestConnectivity_StateAt(t *testing.T) {
	at := model.At(epoch)
	c := model.Connectivity{State: model.ConnDegraded, LastReportAt: &at, Since: &at}
	for d, want := range map[time.Duration]string{
		0:                                        model.ConnDegraded,
		model.ConnectivityStaleAfter - 1:         model.ConnDegraded,
		model.ConnectivityStaleAfter:             model.ConnUnknown,
		model.ConnectivityStaleAfter + time.Hour: model.ConnUnknown,
	} {
		if got := c.StateAt(epoch.Add(d)); got != want {
			t.Errorf("StateAt(+%v) = %s, want %s", d, got, want)
		}
	}
	if got := (model.Connectivity{}).StateAt(epoch); got != model.ConnUnknown {
		t.Errorf("never reported: %s, want unknown", got)
	}
}

func TestEngine_ReportConnectivity(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *model.FakeClock
		tid   string
	}
	setup := func(t *testing.T) fixture {
		e, clock := MustOpenEngine(t)
		tid := MustCreateTenant(t, e, "acme").Tenant.ID
		if _, err := createZone(e, tid, validZoneInput()); err != nil {
			t.Fatal(err)
		}
		return fixture{e, clock, tid}
	}
	mustReport := func(t *testing.T, f fixture, in model.ConnectivityReport) *model.ConnectivityStatus {
		t.Helper()
		if in.ZoneCode == "" {
			in.ZoneCode = "PAR-01"
		}
		st, err := report(f.e, f.tid, in)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	status := func(t *testing.T, f fixture) *model.ConnectivityStatus {
		t.Helper()
		st, err := f.e.ZoneConnectivity(context.Background(), roleOf(f.tid, model.RoleFieldOperator), "PAR-01")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	same := func(a *model.Time, b time.Time) bool { return a != nil && a.Equal(model.At(b).Time) }

	t.Run("NeverReported", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		st := status(t, f)
		if st.ZoneCode != "PAR-01" || st.State != model.ConnUnknown || st.LastReportAt != nil || !same(st.Since, epoch) {
			t.Fatalf("status = %+v, want unknown since the zone's creation", st)
		}
	})
	t.Run("OnlineThenStale", func(t *testing.T) {
		f := setup(t)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline})
		if st.State != model.ConnOnline || !same(st.LastReportAt, epoch) || !same(st.Since, epoch) {
			t.Fatalf("answer = %+v", st)
		}
		f.clock.Advance(model.ConnectivityStaleAfter - time.Millisecond)
		if st := status(t, f); st.State != model.ConnOnline {
			t.Fatalf("status before 10 min = %+v", st)
		}
		f.clock.Advance(time.Millisecond)
		st = status(t, f)
		if st.State != model.ConnUnknown || !same(st.LastReportAt, epoch) || !same(st.Since, epoch.Add(model.ConnectivityStaleAfter)) {
			t.Fatalf("status after 10 min = %+v, want unknown since the report went stale", st)
		}
		var z *model.Zone
		_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
			z, err = tx.Zone(f.tid, "PAR-01")
			return err
		})
		if z.Connectivity.State != model.ConnOnline {
			t.Fatalf("the stored report = %+v, want the reported state kept", z.Connectivity)
		}
	})
	t.Run("SinceKeptOnSameState", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, model.ConnectivityReport{State: model.ConnDegraded})
		f.clock.Advance(3 * time.Minute)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnDegraded})
		if st.State != model.ConnDegraded || !same(st.Since, epoch) || !same(st.LastReportAt, f.clock.Now()) {
			t.Fatalf("same state again = %+v, want since unchanged", st)
		}
		f.clock.Advance(time.Minute)
		st = mustReport(t, f, model.ConnectivityReport{State: model.ConnOffline})
		if st.State != model.ConnOffline || !same(st.Since, f.clock.Now()) {
			t.Fatalf("new state = %+v, want since now", st)
		}
	})
	t.Run("SinceRestartsAfterStale", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline})
		f.clock.Advance(15 * time.Minute)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline})
		if st.State != model.ConnOnline || !same(st.Since, f.clock.Now()) {
			t.Fatalf("online after unknown = %+v, want since now", st)
		}
	})
	t.Run("ReportedAtInThePast", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		at := f.clock.Now().Add(-90 * time.Second)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOffline, ReportedAt: stamp(at)})
		if st.State != model.ConnOffline || !same(st.LastReportAt, at) || !same(st.Since, at) {
			t.Fatalf("answer = %+v", st)
		}
	})
	t.Run("StaleReportedAtIsUnknownAlready", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		at := f.clock.Now().Add(-11 * time.Minute)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline, ReportedAt: stamp(at)})
		if st.State != model.ConnUnknown || !same(st.LastReportAt, at) {
			t.Fatalf("answer = %+v, want unknown: the report is older than 10 minutes", st)
		}
	})
	t.Run("FutureWithinSkewCountsAsNow", func(t *testing.T) {
		f := setup(t)
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline, ReportedAt: stamp(epoch.Add(2 * time.Minute))})
		if !same(st.LastReportAt, epoch) || !same(st.Since, epoch) {
			t.Fatalf("answer = %+v, want the report recorded at server time", st)
		}
	})
	t.Run("ErrFuture", func(t *testing.T) {
		f := setup(t)
		_, err := report(f.e, f.tid, model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline,
			ReportedAt: stamp(epoch.Add(2*time.Minute + time.Millisecond))})
		AssertInvalid(t, err, "reported_at")
		if st := status(t, f); st.LastReportAt != nil {
			t.Fatalf("a refused report was recorded: %+v", st)
		}
	})
	t.Run("OutOfOrderIgnored", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		now := f.clock.Now()
		mustReport(t, f, model.ConnectivityReport{State: model.ConnOffline, DeviceID: "dev-new"})
		st := mustReport(t, f, model.ConnectivityReport{State: model.ConnOnline, DeviceID: "dev-old",
			ReportedAt: stamp(now.Add(-time.Second))})
		if st.State != model.ConnOffline || !same(st.LastReportAt, now) || !same(st.Since, now) {
			t.Fatalf("answer to an older report = %+v, want the current status", st)
		}
		var z *model.Zone
		_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
			z, err = tx.Zone(f.tid, "PAR-01")
			return err
		})
		if z.Connectivity.State != model.ConnOffline || z.Connectivity.DeviceID != "dev-new" {
			t.Fatalf("stored = %+v, want the newer report", z.Connectivity)
		}
		// The same instant as the last report is not older: it applies.
		st = mustReport(t, f, model.ConnectivityReport{State: model.ConnDegraded, ReportedAt: stamp(now)})
		if st.State != model.ConnDegraded {
			t.Fatalf("report of the same instant = %+v", st)
		}
	})
	t.Run("DeviceFieldsOfTheLastReport", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, model.ConnectivityReport{State: model.ConnDegraded, DeviceID: "tablet-7",
			SignalDBM: ptr(-97.5), Network: "4g"})
		p := roleOf(f.tid, model.RoleCorporateClient)
		z, _ := f.e.Zone(context.Background(), p, "PAR-01")
		c := z.Connectivity
		if c.DeviceID != "tablet-7" || c.SignalDBM == nil || *c.SignalDBM != -97.5 || c.Network != "4g" {
			t.Fatalf("connectivity = %+v", c)
		}
		mustReport(t, f, model.ConnectivityReport{State: model.ConnDegraded})
		z, _ = f.e.Zone(context.Background(), p, "PAR-01")
		if c := z.Connectivity; c.DeviceID != "" || c.SignalDBM != nil || c.Network != "" {
			t.Fatalf("connectivity = %+v, want the last report's (none)", c)
		}
	})
	t.Run("BoundsAccepted", func(t *testing.T) {
		f := setup(t)
		for _, in := range []model.ConnectivityReport{
			{State: model.ConnOnline, SignalDBM: ptr(-150.0), DeviceID: strings.Repeat("d", 64), Network: strings.Repeat("n", 32)},
			{State: model.ConnOnline, SignalDBM: ptr(0.0)},
		} {
			mustReport(t, f, in)
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    model.ConnectivityReport
	}{
		"ErrZoneMissing":     {"zone_code", model.ConnectivityReport{State: model.ConnOnline}},
		"ErrZoneUnknown":     {"zone_code", model.ConnectivityReport{ZoneCode: "NOPE", State: model.ConnOnline}},
		"ErrZoneMalformed":   {"zone_code", model.ConnectivityReport{ZoneCode: "a b", State: model.ConnOnline}},
		"ErrStateMissing":    {"state", model.ConnectivityReport{ZoneCode: "PAR-01"}},
		"ErrStateUnknown":    {"state", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnUnknown}},
		"ErrStateBad":        {"state", model.ConnectivityReport{ZoneCode: "PAR-01", State: "ONLINE"}},
		"ErrDeviceTooLong":   {"device_id", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline, DeviceID: strings.Repeat("d", 65)}},
		"ErrSignalLow":       {"signal_dbm", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline, SignalDBM: ptr(-150.5)}},
		"ErrSignalHigh":      {"signal_dbm", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline, SignalDBM: ptr(0.1)}},
		"ErrNetworkTooLong":  {"network", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline, Network: strings.Repeat("n", 33)}},
		"ErrReportedAtShape": {"reported_at", model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline, ReportedAt: ptr("yesterday")}},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			_, err := report(f.e, f.tid, tc.in)
			AssertInvalid(t, err, tc.field)
		})
	}
	t.Run("ErrOtherTenantsZone", func(t *testing.T) {
		f := setup(t)
		other := MustCreateTenant(t, f.e, "other").Tenant.ID
		_, err := report(f.e, other, model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline})
		AssertInvalid(t, err, "zone_code")
	})
	t.Run("Permissions", func(t *testing.T) {
		f := setup(t)
		for _, role := range []model.Role{model.RoleCompanyAdmin, model.RoleOperationalSupervisor, model.RoleFieldOperator} {
			if _, err := reportAs(f.e, roleOf(f.tid, role), model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline}); err != nil {
				t.Errorf("%s: %v", role, err)
			}
		}
		for _, role := range []model.Role{model.RoleCompanyTech, model.RoleCorporateClient, model.RoleAPIUser} {
			_, err := reportAs(f.e, roleOf(f.tid, role), model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOnline})
			AssertKind(t, err, model.KindForbidden)
		}
	})
}

func TestEngine_ZonesConnectivity(t *testing.T) {
	e, clock := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	for _, code := range []string{"b", "a", "c"} {
		in := validZoneInput()
		in.Code = code
		if _, err := createZone(e, tid, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := report(e, tid, model.ConnectivityReport{ZoneCode: "b", State: model.ConnOffline}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	p := roleOf(tid, model.RoleAPIUser)
	sts, next, err := e.ZonesConnectivity(context.Background(), p, model.Page{Limit: 50})
	if err != nil || next != "" || len(sts) != 3 {
		t.Fatalf("ZonesConnectivity = %+v, %q, %v", sts, next, err)
	}
	// Newest first: c, a, b were created in that order.
	if sts[0].ZoneCode != "c" || sts[1].ZoneCode != "a" || sts[1].State != model.ConnUnknown ||
		sts[2].ZoneCode != "b" || sts[2].State != model.ConnOffline {
		t.Fatalf("statuses = %+v", sts)
	}
	_, err = e.ZoneConnectivity(context.Background(), p, "zz")
	AssertKind(t, err, model.KindNotFound)
	_, _, err = e.ZonesConnectivity(context.Background(), model.Principal{TenantID: tid, KeyID: model.NewID(),
		Scopes: []string{"events:read"}}, model.Page{})
	AssertKind(t, err, model.KindForbidden)
}
