package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func createZone(e *engine.Engine, tenantID string, in model.ZoneInput) (*model.Zone, error) {
	var out *model.Zone
	err := func() (err error) {
		out, err = e.CreateZone(context.Background(), tenantAdmin(tenantID), in, nil)
		return err
	}()
	return out, err
}

func validZoneInput() model.ZoneInput {
	return model.ZoneInput{Code: "PAR-01", Name: "Paris centre", Boundary: polygon(square(2.2, 48.8, 0.2))}
}

func TestEngine_CreateZone(t *testing.T) {
	setup := func(t *testing.T) (*engine.Engine, string) {
		e, _ := MustOpenEngine(t)
		return e, MustCreateTenant(t, e, "acme").Tenant.ID
	}
	t.Run("OK", func(t *testing.T) {
		e, tid := setup(t)
		in := validZoneInput()
		in.Name = "  Paris centre "
		z, err := createZone(e, tid, in)
		if err != nil {
			t.Fatal(err)
		}
		if !model.ValidID(z.ID) || z.Code != "PAR-01" || z.Name != "Paris centre" ||
			!z.CreatedAt.Equal(epoch) || !z.UpdatedAt.Equal(epoch) {
			t.Fatalf("zone = %+v", z)
		}
		if !near(z.Centroid.Lat, 48.9, 1e-9) || !near(z.Centroid.Lng, 2.3, 1e-9) {
			t.Fatalf("centroid = %+v, want (48.9, 2.3)", z.Centroid)
		}
		var stored *model.Zone
		err = e.View(context.Background(), func(tx model.Tx) (err error) {
			stored, err = tx.Zone(tid, "PAR-01")
			return err
		})
		if err != nil || stored.ID != z.ID || len(stored.Boundary.Coordinates[0]) != 5 {
			t.Fatalf("stored zone = %+v, %v", stored, err)
		}
	})
	t.Run("CodeShapes", func(t *testing.T) {
		e, tid := setup(t)
		for _, code := range []string{"A", "z9", "north_1", "N-2", strings.Repeat("x", 64)} {
			in := validZoneInput()
			in.Code = code
			if _, err := createZone(e, tid, in); err != nil {
				t.Errorf("code %q: %v", code, err)
			}
		}
	})
	t.Run("SameCodeOtherTenant", func(t *testing.T) {
		e, tid := setup(t)
		other := MustCreateTenant(t, e, "other").Tenant.ID
		if _, err := createZone(e, tid, validZoneInput()); err != nil {
			t.Fatal(err)
		}
		if _, err := createZone(e, other, validZoneInput()); err != nil {
			t.Fatalf("a zone code is unique per tenant only: %v", err)
		}
	})
	for name, tc := range map[string]struct {
		field  string
		mutate func(*model.ZoneInput)
	}{
		"ErrCodeRequired":    {"code", func(in *model.ZoneInput) { in.Code = "" }},
		"ErrCodeSpace":       {"code", func(in *model.ZoneInput) { in.Code = "PAR 01" }},
		"ErrCodeLeadingDash": {"code", func(in *model.ZoneInput) { in.Code = "-PAR" }},
		"ErrCodeSlash":       {"code", func(in *model.ZoneInput) { in.Code = "PAR/01" }},
		"ErrCodeTooLong":     {"code", func(in *model.ZoneInput) { in.Code = strings.Repeat("x", 65) }},
		"ErrNameRequired":    {"name", func(in *model.ZoneInput) { in.Name = " " }},
		"ErrNameTooLong":     {"name", func(in *model.ZoneInput) { in.Name = strings.Repeat("n", 201) }},
		"ErrBoundaryMissing": {"boundary", func(in *model.ZoneInput) { in.Boundary = nil }},
		"ErrBoundaryOpen": {"boundary", func(in *model.ZoneInput) {
			in.Boundary = polygon([][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}})
		}},
		"ErrBoundaryType": {"boundary", func(in *model.ZoneInput) { in.Boundary.Type = "Point" }},
		"ErrBoundaryFlat": {"boundary", func(in *model.ZoneInput) {
			in.Boundary = polygon([][]float64{{0, 0}, {1, 1}, {2, 2}, {0, 0}})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e, tid := setup(t)
			in := validZoneInput()
			tc.mutate(&in)
			_, err := createZone(e, tid, in)
			AssertInvalid(t, err, tc.field)
		})
	}
	t.Run("ErrDuplicateCode", func(t *testing.T) {
		e, tid := setup(t)
		first, err := createZone(e, tid, validZoneInput())
		if err != nil {
			t.Fatal(err)
		}
		in := validZoneInput()
		in.Name = "Another"
		_, err = createZone(e, tid, in)
		AssertKind(t, err, model.KindConflict)
		var zones []model.Zone
		_ = e.View(context.Background(), func(tx model.Tx) (err error) {
			zones, err = tx.Zones(tid)
			return err
		})
		if len(zones) != 1 || zones[0].ID != first.ID || zones[0].Name != "Paris centre" {
			t.Fatalf("zones = %+v, want the first one untouched", zones)
		}
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		e, _ := setup(t)
		_, err := createZone(e, model.NewID(), validZoneInput())
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestValidZoneCode(t *testing.T) {
	for code, want := range map[string]bool{
		"A": true, "PAR-01": true, "a_b": true, "9": true,
		"": false, "_a": false, "a b": false, "é": false, "a.b": false,
	} {
		if got := model.ValidZoneCode(code); got != want {
			t.Errorf("ValidZoneCode(%q) = %v, want %v", code, got, want)
		}
	}
}

// roleOf returns a user principal of the tenant with the given role.
func roleOf(tenantID string, role model.Role) model.Principal {
	return model.Principal{TenantID: tenantID, TenantActive: true, UserID: model.NewID(), Role: role}
}

func updateZone(e *engine.Engine, p model.Principal, code string, in model.ZonePatch) (*model.Zone, error) {
	var out *model.Zone
	err := func() (err error) {
		out, err = e.UpdateZone(context.Background(), p, code, in, nil)
		return err
	}()
	return out, err
}

func deleteZone(e *engine.Engine, p model.Principal, code string) (*model.Zone, error) {
	var out *model.Zone
	err := func() (err error) {
		out, err = e.DeleteZone(context.Background(), p, code, nil)
		return err
	}()
	return out, err
}

func TestEngine_CreateZone_ShowsUnknownConnectivity(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	z, err := createZone(e, tid, validZoneInput())
	if err != nil {
		t.Fatal(err)
	}
	c := z.Connectivity
	if c.State != model.ConnUnknown || c.LastReportAt != nil || c.Since == nil || !c.Since.Equal(epoch) {
		t.Fatalf("connectivity of a new zone = %+v, want unknown since its creation", c)
	}
}

func TestEngine_UpdateZone(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *model.FakeClock
		tid   string
		admin model.Principal
		zone  *model.Zone
	}
	setup := func(t *testing.T) fixture {
		e, clock := MustOpenEngine(t)
		tid := MustCreateTenant(t, e, "acme").Tenant.ID
		z, err := createZone(e, tid, validZoneInput())
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		return fixture{e, clock, tid, roleOf(tid, model.RoleCompanyTech), z}
	}
	t.Run("Name", func(t *testing.T) {
		f := setup(t)
		z, err := updateZone(f.e, f.admin, "PAR-01", model.ZonePatch{Name: ptr(" Paris nord ")})
		if err != nil {
			t.Fatal(err)
		}
		if z.ID != f.zone.ID || z.Name != "Paris nord" || z.Code != "PAR-01" || !z.UpdatedAt.Equal(f.clock.Now()) ||
			!z.CreatedAt.Equal(epoch) || z.Centroid != f.zone.Centroid || z.Connectivity.State != model.ConnUnknown {
			t.Fatalf("zone = %+v", z)
		}
	})
	t.Run("BoundaryRecomputesCentroid", func(t *testing.T) {
		f := setup(t)
		z, err := updateZone(f.e, f.admin, "PAR-01", model.ZonePatch{Boundary: polygon(square(4.8, 45.7, 0.2))})
		if err != nil {
			t.Fatal(err)
		}
		if z.Name != "Paris centre" || !near(z.Centroid.Lat, 45.8, 1e-9) || !near(z.Centroid.Lng, 4.9, 1e-9) {
			t.Fatalf("zone = %+v, want the centroid of the new boundary", z)
		}
		var stored *model.Zone
		_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
			stored, err = tx.Zone(f.tid, "PAR-01")
			return err
		})
		if stored.Centroid != z.Centroid || stored.Boundary.Coordinates[0][0][0] != 4.8 {
			t.Fatalf("stored zone = %+v", stored)
		}
	})
	t.Run("SameCodeAllowed", func(t *testing.T) {
		f := setup(t)
		if _, err := updateZone(f.e, f.admin, "PAR-01", model.ZonePatch{Code: ptr("PAR-01"), Name: ptr("x")}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NothingChangesUpdatedAt", func(t *testing.T) {
		f := setup(t)
		z, err := updateZone(f.e, f.admin, "PAR-01", model.ZonePatch{})
		if err != nil || !z.UpdatedAt.Equal(epoch) || z.Name != "Paris centre" {
			t.Fatalf("zone = %+v, %v", z, err)
		}
	})
	t.Run("KeepsConnectivity", func(t *testing.T) {
		f := setup(t)
		if _, err := report(f.e, f.tid, model.ConnectivityReport{ZoneCode: "PAR-01", State: model.ConnOffline}); err != nil {
			t.Fatal(err)
		}
		z, err := updateZone(f.e, f.admin, "PAR-01", model.ZonePatch{Name: ptr("Renamed")})
		if err != nil || z.Connectivity.State != model.ConnOffline {
			t.Fatalf("zone = %+v, %v", z, err)
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    model.ZonePatch
	}{
		"ErrCodeChange":    {"code", model.ZonePatch{Code: ptr("PAR-02")}},
		"ErrNameEmpty":     {"name", model.ZonePatch{Name: ptr("  ")}},
		"ErrNameTooLong":   {"name", model.ZonePatch{Name: ptr(strings.Repeat("n", 201))}},
		"ErrBoundaryOpen":  {"boundary", model.ZonePatch{Boundary: polygon([][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}})}},
		"ErrBoundaryShort": {"boundary", model.ZonePatch{Boundary: polygon([][]float64{{0, 0}, {1, 0}, {0, 0}})}},
		"ErrBoundaryRange": {"boundary", model.ZonePatch{Boundary: polygon([][]float64{{0, 0}, {1, 0}, {1, 91}, {0, 0}})}},
		"ErrBoundaryType":  {"boundary", model.ZonePatch{Boundary: &model.Polygon{Type: "MultiPolygon", Coordinates: [][][]float64{square(0, 0, 1)}}}},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			_, err := updateZone(f.e, f.admin, "PAR-01", tc.in)
			AssertInvalid(t, err, tc.field)
			z, _ := f.e.Zone(context.Background(), f.admin, "PAR-01")
			if z.Name != "Paris centre" || !z.UpdatedAt.Equal(epoch) || z.Centroid != f.zone.Centroid {
				t.Fatalf("a refused patch changed the zone: %+v", z)
			}
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		f := setup(t)
		for _, code := range []string{"PAR-02", "", "a b", "-x"} {
			_, err := updateZone(f.e, f.admin, code, model.ZonePatch{Name: ptr("x")})
			AssertKind(t, err, model.KindNotFound)
		}
		other := MustCreateTenant(t, f.e, "other").Tenant.ID
		_, err := updateZone(f.e, roleOf(other, model.RoleCompanyAdmin), "PAR-01", model.ZonePatch{Name: ptr("x")})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		f := setup(t)
		_, err := updateZone(f.e, roleOf(f.tid, model.RoleOperationalSupervisor), "PAR-01", model.ZonePatch{Name: ptr("x")})
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_DeleteZone(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	other := MustCreateTenant(t, e, "other").Tenant.ID
	created, err := createZone(e, tid, validZoneInput())
	if err != nil {
		t.Fatal(err)
	}
	admin := roleOf(tid, model.RoleCompanyAdmin)
	_, err = deleteZone(e, roleOf(tid, model.RoleFieldOperator), "PAR-01")
	AssertKind(t, err, model.KindForbidden)
	_, err = deleteZone(e, roleOf(other, model.RoleCompanyAdmin), "PAR-01")
	AssertKind(t, err, model.KindNotFound)
	z, err := deleteZone(e, admin, "PAR-01")
	if err != nil || z.ID != created.ID {
		t.Fatalf("deleted = %+v, %v", z, err)
	}
	_, err = e.Zone(context.Background(), admin, "PAR-01")
	AssertKind(t, err, model.KindNotFound)
	_, err = deleteZone(e, admin, "PAR-01")
	AssertKind(t, err, model.KindNotFound)
	_, err = deleteZone(e, admin, "no such/code")
	AssertKind(t, err, model.KindNotFound)
	again, err := createZone(e, tid, validZoneInput())
	if err != nil || again.ID == created.ID {
		t.Fatalf("recreating a deleted code: %+v, %v", again, err)
	}
}

func TestEngine_Zones(t *testing.T) {
	e, clock := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	other := MustCreateTenant(t, e, "other").Tenant.ID
	for _, code := range []string{"north", "east", "south", "west"} {
		in := validZoneInput()
		in.Code = code
		if _, err := createZone(e, tid, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := createZone(e, other, validZoneInput()); err != nil {
		t.Fatal(err)
	}
	reader := roleOf(tid, model.RoleCorporateClient)
	ctx := context.Background()
	codes := func(zs []model.Zone) string {
		var out []string
		for _, z := range zs {
			out = append(out, z.Code)
		}
		return strings.Join(out, ",")
	}
	t.Run("NewestFirst", func(t *testing.T) {
		zs, next, err := e.Zones(ctx, reader, model.Page{Limit: 50})
		if err != nil || next != "" || codes(zs) != "west,south,east,north" {
			t.Fatalf("Zones = %s, %q, %v", codes(zs), next, err)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		zs, next, err := e.Zones(ctx, reader, model.Page{Limit: 3})
		if err != nil || next == "" || codes(zs) != "west,south,east" {
			t.Fatalf("page 1 = %s, %q, %v", codes(zs), next, err)
		}
		zs, next, err = e.Zones(ctx, reader, model.Page{Limit: 3, Cursor: next})
		if err != nil || next != "" || codes(zs) != "north" {
			t.Fatalf("page 2 = %s, %q, %v", codes(zs), next, err)
		}
		_, _, err = e.Zones(ctx, reader, model.Page{Limit: 3, Cursor: "!!"})
		AssertInvalid(t, err, "cursor")
	})
	t.Run("ConnectivityInForce", func(t *testing.T) {
		if _, err := report(e, tid, model.ConnectivityReport{ZoneCode: "north", State: model.ConnOnline}); err != nil {
			t.Fatal(err)
		}
		zs, _, _ := e.Zones(ctx, reader, model.Page{})
		if zs[3].Connectivity.State != model.ConnOnline || zs[0].Connectivity.State != model.ConnUnknown {
			t.Fatalf("zones = %+v", zs)
		}
		clock.Advance(model.ConnectivityStaleAfter)
		zs, _, _ = e.Zones(ctx, reader, model.Page{})
		z, _ := e.Zone(ctx, reader, "north")
		if zs[3].Connectivity.State != model.ConnUnknown || z.Connectivity.State != model.ConnUnknown {
			t.Fatalf("a stale report still holds: %+v / %+v", zs[1].Connectivity, z.Connectivity)
		}
	})
	t.Run("OneAndErrors", func(t *testing.T) {
		z, err := e.Zone(ctx, reader, "south")
		if err != nil || z.Code != "south" {
			t.Fatalf("Zone = %+v, %v", z, err)
		}
		_, err = e.Zone(ctx, reader, "nowhere")
		AssertKind(t, err, model.KindNotFound)
		_, err = e.Zone(ctx, reader, "bad code")
		AssertKind(t, err, model.KindNotFound)
		_, err = e.Zone(ctx, roleOf(other, model.RoleCompanyAdmin), "south")
		AssertKind(t, err, model.KindNotFound)
		_, err = e.Zone(ctx, model.Principal{TenantID: tid, KeyID: model.NewID(), Scopes: []string{"events:read"}}, "south")
		AssertKind(t, err, model.KindForbidden)
		_, _, err = e.Zones(ctx, model.Principal{TenantID: tid, KeyID: model.NewID(), Scopes: []string{"events:read"}}, model.Page{})
		AssertKind(t, err, model.KindForbidden)
	})
	t.Run("Empty", func(t *testing.T) {
		third := MustCreateTenant(t, e, "third").Tenant.ID
		zs, next, err := e.Zones(ctx, roleOf(third, model.RoleAPIUser), model.Page{Limit: 50})
		if err != nil || zs == nil || len(zs) != 0 || next != "" {
			t.Fatalf("Zones = %#v, %q, %v", zs, next, err)
		}
	})
}
