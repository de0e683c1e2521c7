package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

// report records a connectivity report as a field operator of the tenant.
func report(e *engine.Engine, tenantID string, in engine.ConnectivityReport) (*engine.ConnectivityStatus, error) {
	return reportAs(e, roleOf(tenantID, engine.RoleFieldOperator), in)
}

func reportAs(e *engine.Engine, p engine.Principal, in engine.ConnectivityReport) (*engine.ConnectivityStatus, error) {
	var out *engine.ConnectivityStatus
	err := e.Update(context.Background(), func(tx engine.Tx) (err error) {
		out, err = e.ReportConnectivity(tx, p, in)
		return err
	})
	return out, err
}

func stamp(t time.Time) *string { s := t.UTC().Format(time.RFC3339Nano); return &s }

func TestConnectivity_StateAt(t *testing.T) {
	at := engine.At(epoch)
	c := engine.Connectivity{State: engine.ConnDegraded, LastReportAt: &at, Since: &at}
	for d, want := range map[time.Duration]string{
		0:                                 engine.ConnDegraded,
		engine.ConnectivityStaleAfter - 1: engine.ConnDegraded,
		engine.ConnectivityStaleAfter:     engine.ConnUnknown,
		engine.ConnectivityStaleAfter + time.Hour: engine.ConnUnknown,
	} {
		if got := c.StateAt(epoch.Add(d)); got != want {
			t.Errorf("StateAt(+%v) = %s, want %s", d, got, want)
		}
	}
	if got := (engine.Connectivity{}).StateAt(epoch); got != engine.ConnUnknown {
		t.Errorf("never reported: %s, want unknown", got)
	}
}

func TestEngine_ReportConnectivity(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *engine.FakeClock
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
	mustReport := func(t *testing.T, f fixture, in engine.ConnectivityReport) *engine.ConnectivityStatus {
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
	status := func(t *testing.T, f fixture) *engine.ConnectivityStatus {
		t.Helper()
		st, err := f.e.ZoneConnectivity(context.Background(), roleOf(f.tid, engine.RoleFieldOperator), "PAR-01")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	same := func(a *engine.Time, b time.Time) bool { return a != nil && a.Equal(engine.At(b).Time) }

	t.Run("NeverReported", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		st := status(t, f)
		if st.ZoneCode != "PAR-01" || st.State != engine.ConnUnknown || st.LastReportAt != nil || !same(st.Since, epoch) {
			t.Fatalf("status = %+v, want unknown since the zone's creation", st)
		}
	})
	t.Run("OnlineThenStale", func(t *testing.T) {
		f := setup(t)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline})
		if st.State != engine.ConnOnline || !same(st.LastReportAt, epoch) || !same(st.Since, epoch) {
			t.Fatalf("answer = %+v", st)
		}
		f.clock.Advance(engine.ConnectivityStaleAfter - time.Millisecond)
		if st := status(t, f); st.State != engine.ConnOnline {
			t.Fatalf("status before 10 min = %+v", st)
		}
		f.clock.Advance(time.Millisecond)
		st = status(t, f)
		if st.State != engine.ConnUnknown || !same(st.LastReportAt, epoch) || !same(st.Since, epoch.Add(engine.ConnectivityStaleAfter)) {
			t.Fatalf("status after 10 min = %+v, want unknown since the report went stale", st)
		}
		var z *engine.Zone
		_ = f.e.View(context.Background(), func(tx engine.Tx) (err error) {
			z, err = tx.Zone(f.tid, "PAR-01")
			return err
		})
		if z.Connectivity.State != engine.ConnOnline {
			t.Fatalf("the stored report = %+v, want the reported state kept", z.Connectivity)
		}
	})
	t.Run("SinceKeptOnSameState", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, engine.ConnectivityReport{State: engine.ConnDegraded})
		f.clock.Advance(3 * time.Minute)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnDegraded})
		if st.State != engine.ConnDegraded || !same(st.Since, epoch) || !same(st.LastReportAt, f.clock.Now()) {
			t.Fatalf("same state again = %+v, want since unchanged", st)
		}
		f.clock.Advance(time.Minute)
		st = mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOffline})
		if st.State != engine.ConnOffline || !same(st.Since, f.clock.Now()) {
			t.Fatalf("new state = %+v, want since now", st)
		}
	})
	t.Run("SinceRestartsAfterStale", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline})
		f.clock.Advance(15 * time.Minute)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline})
		if st.State != engine.ConnOnline || !same(st.Since, f.clock.Now()) {
			t.Fatalf("online after unknown = %+v, want since now", st)
		}
	})
	t.Run("ReportedAtInThePast", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		at := f.clock.Now().Add(-90 * time.Second)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOffline, ReportedAt: stamp(at)})
		if st.State != engine.ConnOffline || !same(st.LastReportAt, at) || !same(st.Since, at) {
			t.Fatalf("answer = %+v", st)
		}
	})
	t.Run("StaleReportedAtIsUnknownAlready", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Hour)
		at := f.clock.Now().Add(-11 * time.Minute)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline, ReportedAt: stamp(at)})
		if st.State != engine.ConnUnknown || !same(st.LastReportAt, at) {
			t.Fatalf("answer = %+v, want unknown: the report is older than 10 minutes", st)
		}
	})
	t.Run("FutureWithinSkewCountsAsNow", func(t *testing.T) {
		f := setup(t)
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline, ReportedAt: stamp(epoch.Add(2 * time.Minute))})
		if !same(st.LastReportAt, epoch) || !same(st.Since, epoch) {
			t.Fatalf("answer = %+v, want the report recorded at server time", st)
		}
	})
	t.Run("ErrFuture", func(t *testing.T) {
		f := setup(t)
		_, err := report(f.e, f.tid, engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline,
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
		mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOffline, DeviceID: "dev-new"})
		st := mustReport(t, f, engine.ConnectivityReport{State: engine.ConnOnline, DeviceID: "dev-old",
			ReportedAt: stamp(now.Add(-time.Second))})
		if st.State != engine.ConnOffline || !same(st.LastReportAt, now) || !same(st.Since, now) {
			t.Fatalf("answer to an older report = %+v, want the current status", st)
		}
		var z *engine.Zone
		_ = f.e.View(context.Background(), func(tx engine.Tx) (err error) {
			z, err = tx.Zone(f.tid, "PAR-01")
			return err
		})
		if z.Connectivity.State != engine.ConnOffline || z.Connectivity.DeviceID != "dev-new" {
			t.Fatalf("stored = %+v, want the newer report", z.Connectivity)
		}
		// The same instant as the last report is not older: it applies.
		st = mustReport(t, f, engine.ConnectivityReport{State: engine.ConnDegraded, ReportedAt: stamp(now)})
		if st.State != engine.ConnDegraded {
			t.Fatalf("report of the same instant = %+v", st)
		}
	})
	t.Run("DeviceFieldsOfTheLastReport", func(t *testing.T) {
		f := setup(t)
		mustReport(t, f, engine.ConnectivityReport{State: engine.ConnDegraded, DeviceID: "tablet-7",
			SignalDBM: ptr(-97.5), Network: "4g"})
		p := roleOf(f.tid, engine.RoleCorporateClient)
		z, _ := f.e.Zone(context.Background(), p, "PAR-01")
		c := z.Connectivity
		if c.DeviceID != "tablet-7" || c.SignalDBM == nil || *c.SignalDBM != -97.5 || c.Network != "4g" {
			t.Fatalf("connectivity = %+v", c)
		}
		mustReport(t, f, engine.ConnectivityReport{State: engine.ConnDegraded})
		z, _ = f.e.Zone(context.Background(), p, "PAR-01")
		if c := z.Connectivity; c.DeviceID != "" || c.SignalDBM != nil || c.Network != "" {
			t.Fatalf("connectivity = %+v, want the last report's (none)", c)
		}
	})
	t.Run("BoundsAccepted", func(t *testing.T) {
		f := setup(t)
		for _, in := range []engine.ConnectivityReport{
			{State: engine.ConnOnline, SignalDBM: ptr(-150.0), DeviceID: strings.Repeat("d", 64), Network: strings.Repeat("n", 32)},
			{State: engine.ConnOnline, SignalDBM: ptr(0.0)},
		} {
			mustReport(t, f, in)
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    engine.ConnectivityReport
	}{
		"ErrZoneMissing":     {"zone_code", engine.ConnectivityReport{State: engine.ConnOnline}},
		"ErrZoneUnknown":     {"zone_code", engine.ConnectivityReport{ZoneCode: "NOPE", State: engine.ConnOnline}},
		"ErrZoneMalformed":   {"zone_code", engine.ConnectivityReport{ZoneCode: "a b", State: engine.ConnOnline}},
		"ErrStateMissing":    {"state", engine.ConnectivityReport{ZoneCode: "PAR-01"}},
		"ErrStateUnknown":    {"state", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnUnknown}},
		"ErrStateBad":        {"state", engine.ConnectivityReport{ZoneCode: "PAR-01", State: "ONLINE"}},
		"ErrDeviceTooLong":   {"device_id", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline, DeviceID: strings.Repeat("d", 65)}},
		"ErrSignalLow":       {"signal_dbm", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline, SignalDBM: ptr(-150.5)}},
		"ErrSignalHigh":      {"signal_dbm", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline, SignalDBM: ptr(0.1)}},
		"ErrNetworkTooLong":  {"network", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline, Network: strings.Repeat("n", 33)}},
		"ErrReportedAtShape": {"reported_at", engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline, ReportedAt: ptr("yesterday")}},
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
		_, err := report(f.e, other, engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline})
		AssertInvalid(t, err, "zone_code")
	})
	t.Run("Permissions", func(t *testing.T) {
		f := setup(t)
		for _, role := range []engine.Role{engine.RoleCompanyAdmin, engine.RoleOperationalSupervisor, engine.RoleFieldOperator} {
			if _, err := reportAs(f.e, roleOf(f.tid, role), engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline}); err != nil {
				t.Errorf("%s: %v", role, err)
			}
		}
		for _, role := range []engine.Role{engine.RoleCompanyTech, engine.RoleCorporateClient, engine.RoleAPIUser} {
			_, err := reportAs(f.e, roleOf(f.tid, role), engine.ConnectivityReport{ZoneCode: "PAR-01", State: engine.ConnOnline})
			AssertKind(t, err, engine.KindForbidden)
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
	if _, err := report(e, tid, engine.ConnectivityReport{ZoneCode: "b", State: engine.ConnOffline}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	p := roleOf(tid, engine.RoleAPIUser)
	sts, next, err := e.ZonesConnectivity(context.Background(), p, engine.Page{Limit: 50})
	if err != nil || next != "" || len(sts) != 3 {
		t.Fatalf("ZonesConnectivity = %+v, %q, %v", sts, next, err)
	}
	// Newest first: c, a, b were created in that order.
	if sts[0].ZoneCode != "c" || sts[1].ZoneCode != "a" || sts[1].State != engine.ConnUnknown ||
		sts[2].ZoneCode != "b" || sts[2].State != engine.ConnOffline {
		t.Fatalf("statuses = %+v", sts)
	}
	_, err = e.ZoneConnectivity(context.Background(), p, "zz")
	AssertKind(t, err, engine.KindNotFound)
	_, _, err = e.ZonesConnectivity(context.Background(), engine.Principal{TenantID: tid, KeyID: engine.NewID(),
		Scopes: []string{"events:read"}}, engine.Page{})
	AssertKind(t, err, engine.KindForbidden)
}
