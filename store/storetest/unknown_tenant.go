package storetest

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testUnknownTenant pins the writes of a tenant that does not exist, beside the areas'
// own checks: not_found, and nothing written. DeleteOutboxEntry is the exception: an entry
// that is not there is settled already (no error).
func testUnknownTenant(t *testing.T, open Opener) {
	f := newFx(t, open)
	f.tenant("acme")
	ghost := model.NewID()
	for name, fn := range map[string]func(tx model.Tx) error{
		"PutWebhook":         func(tx model.Tx) error { return tx.PutWebhook(ghost, newWebhook(1)) },
		"PutDeliveryAttempt": func(tx model.Tx) error { return tx.PutDeliveryAttempt(ghost, newAttempt(model.NewID(), 1)) },
		"ParkEvent":          func(tx model.Tx) error { return tx.ParkEvent(ghost, "north", model.NewID()) },
		"UnparkEvent":        func(tx model.Tx) error { return tx.UnparkEvent(ghost, "north", model.NewID()) },
		"PutTeamPositions":   func(tx model.Tx) error { return tx.PutTeamPositions(ghost, newTeam("x", 1)) },
		"DeleteMissionCode":  func(tx model.Tx) error { return tx.DeleteMissionCode(ghost, "K7Q", model.NewID()) },
	} {
		t.Run(name, func(t *testing.T) { assertKind(t, f.updateErr(fn), model.KindNotFound) })
	}
	f.update(func(tx model.Tx) error { return tx.DeleteOutboxEntry(ghost, model.NewID()) })
	f.view(func(tx model.Tx) error {
		all, err := tx.Tenants()
		if err != nil || len(all) != 1 {
			t.Fatalf("Tenants = %+v, %v; want the one tenant", all, err)
		}
		return nil
	})
}
