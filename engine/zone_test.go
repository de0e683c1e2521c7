package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

func createZone(e *engine.Engine, tenantID string, in engine.ZoneInput) (*engine.Zone, error) {
	var out *engine.Zone
	err := e.Update(context.Background(), func(tx engine.Tx) (err error) {
		out, err = e.CreateZone(tx, tenantID, in)
		return err
	})
	return out, err
}

func validZoneInput() engine.ZoneInput {
	return engine.ZoneInput{Code: "PAR-01", Name: "Paris centre", Boundary: polygon(square(2.2, 48.8, 0.2))}
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
		if !engine.ValidID(z.ID) || z.Code != "PAR-01" || z.Name != "Paris centre" ||
			!z.CreatedAt.Equal(epoch) || !z.UpdatedAt.Equal(epoch) {
			t.Fatalf("zone = %+v", z)
		}
		if !near(z.Centroid.Lat, 48.9, 1e-9) || !near(z.Centroid.Lng, 2.3, 1e-9) {
			t.Fatalf("centroid = %+v, want (48.9, 2.3)", z.Centroid)
		}
		var stored *engine.Zone
		err = e.View(context.Background(), func(tx engine.Tx) (err error) {
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
		mutate func(*engine.ZoneInput)
	}{
		"ErrCodeRequired":    {"code", func(in *engine.ZoneInput) { in.Code = "" }},
		"ErrCodeSpace":       {"code", func(in *engine.ZoneInput) { in.Code = "PAR 01" }},
		"ErrCodeLeadingDash": {"code", func(in *engine.ZoneInput) { in.Code = "-PAR" }},
		"ErrCodeSlash":       {"code", func(in *engine.ZoneInput) { in.Code = "PAR/01" }},
		"ErrCodeTooLong":     {"code", func(in *engine.ZoneInput) { in.Code = strings.Repeat("x", 65) }},
		"ErrNameRequired":    {"name", func(in *engine.ZoneInput) { in.Name = " " }},
		"ErrNameTooLong":     {"name", func(in *engine.ZoneInput) { in.Name = strings.Repeat("n", 201) }},
		"ErrBoundaryMissing": {"boundary", func(in *engine.ZoneInput) { in.Boundary = nil }},
		"ErrBoundaryOpen": {"boundary", func(in *engine.ZoneInput) {
			in.Boundary = polygon([][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}})
		}},
		"ErrBoundaryType": {"boundary", func(in *engine.ZoneInput) { in.Boundary.Type = "Point" }},
		"ErrBoundaryFlat": {"boundary", func(in *engine.ZoneInput) {
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
		AssertKind(t, err, engine.KindConflict)
		var zones []engine.Zone
		_ = e.View(context.Background(), func(tx engine.Tx) (err error) {
			zones, err = tx.Zones(tid)
			return err
		})
		if len(zones) != 1 || zones[0].ID != first.ID || zones[0].Name != "Paris centre" {
			t.Fatalf("zones = %+v, want the first one untouched", zones)
		}
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		e, _ := setup(t)
		_, err := createZone(e, engine.NewID(), validZoneInput())
		AssertKind(t, err, engine.KindNotFound)
	})
}

func TestValidZoneCode(t *testing.T) {
	for code, want := range map[string]bool{
		"A": true, "PAR-01": true, "a_b": true, "9": true,
		"": false, "_a": false, "a b": false, "é": false, "a.b": false,
	} {
		if got := engine.ValidZoneCode(code); got != want {
			t.Errorf("ValidZoneCode(%q) = %v, want %v", code, got, want)
		}
	}
}
