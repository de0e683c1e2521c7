package store_test

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestTx_DeleteZone(t *testing.T) {
	db := MustOpenDB(t)
	a := MustPutTenant(t, db, "alpha")
	b := MustPutTenant(t, db, "bravo")
	zone := func(code string) *model.Zone {
		return &model.Zone{ID: model.NewID(), Code: code, Name: "Zone " + code,
			Boundary: model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}}
	}
	MustUpdate(t, db, func(tx model.Tx) error {
		for _, c := range []string{"north", "south"} {
			if err := tx.PutZone(a.ID, zone(c)); err != nil {
				return err
			}
		}
		return tx.PutZone(b.ID, zone("north"))
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.DeleteZone(a.ID, "north") })
	MustView(t, db, func(tx model.Tx) error {
		_, err := tx.Zone(a.ID, "north")
		AssertKind(t, err, model.KindNotFound)
		zones, err := tx.Zones(a.ID)
		if err != nil || len(zones) != 1 || zones[0].Code != "south" {
			t.Fatalf("Zones = %+v, %v; want south only", zones, err)
		}
		if _, err := tx.Zone(b.ID, "north"); err != nil {
			t.Fatalf("another tenant's zone of the same code: %v", err)
		}
		return nil
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx model.Tx) error { return tx.DeleteZone(a.ID, "north") })
		AssertKind(t, err, model.KindNotFound)
		err = db.Update(t.Context(), func(tx model.Tx) error { return tx.DeleteZone(a.ID, "") })
		AssertKind(t, err, model.KindNotFound)
		err = db.Update(t.Context(), func(tx model.Tx) error { return tx.DeleteZone(model.NewID(), "south") })
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("Recreate", func(t *testing.T) {
		z := zone("north")
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutZone(a.ID, z) })
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.Zone(a.ID, "north")
			if err != nil || got.ID != z.ID {
				t.Fatalf("Zone = %+v, %v", got, err)
			}
			return nil
		})
	})
}
