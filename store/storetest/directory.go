package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The directory of a tenant beside its users: API keys, zones, teams; and the auth tokens
// and idempotency records.

func newKey(tenantID, name string) *model.APIKeyRecord {
	secret := "frk_" + model.NewID()
	return &model.APIKeyRecord{APIKey: model.APIKey{ID: model.NewID(), TenantID: tenantID, Name: name,
		Prefix: secret[:12], Scopes: []string{"events:read"}, CreatedAt: model.At(start)},
		Hash: model.HashToken(secret)}
}

func newZone(code string) *model.Zone {
	return &model.Zone{ID: model.NewID(), Code: code, Name: "Zone " + code,
		Boundary:  model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}},
		CreatedAt: model.At(start), UpdatedAt: model.At(start)}
}

// newTeam returns a team created at(i).
func newTeam(name string, i int) *model.Team {
	return &model.Team{ID: model.NewIDAt(at(i)), Name: name, Status: "available", Verticals: []string{"gov"},
		Equipment: []string{}, Members: []model.Member{{ID: model.NewID(), Name: "M"}},
		CreatedAt: model.At(at(i)), UpdatedAt: model.At(at(i))}
}

func testAPIKeys(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		other := f.tenant("other")
		k1, k2, k3 := newKey(tn.ID, "one"), newKey(tn.ID, "two"), newKey(other.ID, "three")
		f.update(func(tx model.Tx) error {
			for _, k := range []*model.APIKeyRecord{k1, k2, k3} {
				if err := tx.PutAPIKey(k); err != nil {
					return err
				}
			}
			return nil
		})
		f.view(func(tx model.Tx) error {
			got, err := tx.APIKey(tn.ID, k1.ID)
			if err != nil || got.Name != "one" || got.Hash != k1.Hash || got.Prefix != k1.Prefix ||
				len(got.Scopes) != 1 || got.Scopes[0] != "events:read" {
				t.Fatalf("APIKey = %+v, %v", got, err)
			}
			got, err = tx.APIKeyByHash(k2.Hash)
			if err != nil || got.ID != k2.ID || got.TenantID != tn.ID {
				t.Fatalf("APIKeyByHash = %+v, %v", got, err)
			}
			keys, err := tx.APIKeys(tn.ID)
			if err != nil || len(keys) != 2 || keys[0].ID != k2.ID || keys[1].ID != k1.ID {
				t.Fatalf("APIKeys = %+v, %v; want two, one (newest first)", keys, err)
			}
			_, err = tx.APIKey(other.ID, k1.ID)
			assertKind(t, err, model.KindNotFound)
			_, err = tx.APIKey(tn.ID, "bad")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("Update", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		k := newKey(tn.ID, "one")
		f.update(func(tx model.Tx) error { return tx.PutAPIKey(k) })
		k.LastUsedAt = model.TimePtr(at(1))
		k.ExpiresAt = model.TimePtr(at(3600))
		f.update(func(tx model.Tx) error { return tx.PutAPIKey(k) })
		f.view(func(tx model.Tx) error {
			got, err := tx.APIKeyByHash(k.Hash)
			if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(at(1)) || got.ExpiresAt == nil {
				t.Fatalf("updated key = %+v, %v", got, err)
			}
			if keys, _ := tx.APIKeys(tn.ID); len(keys) != 1 {
				t.Fatalf("%d keys after an update, want 1", len(keys))
			}
			return nil
		})
	})
	// TouchAPIKey writes the last use when the one recorded is at least every old, and
	// moves no directory version (no cache is invalidated).
	t.Run("Touch", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		k := newKey(tn.ID, "one")
		f.update(func(tx model.Tx) error { return tx.PutAPIKey(k) })
		touch := func(i int, want bool) {
			t.Helper()
			before, all := f.s.Version(tn.ID), f.s.Version("")
			f.update(func(tx model.Tx) error {
				wrote, err := tx.TouchAPIKey(k.Hash, at(i), time.Minute)
				if err != nil || wrote != want {
					t.Fatalf("TouchAPIKey at %d s = %v, %v; want %v", i, wrote, err, want)
				}
				return nil
			})
			if f.s.Version(tn.ID) != before || f.s.Version("") != all {
				t.Fatalf("TouchAPIKey at %d s moved the directory version", i)
			}
		}
		last := func(i int) {
			t.Helper()
			f.view(func(tx model.Tx) error {
				got, err := tx.APIKeyByHash(k.Hash)
				if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(at(i)) || got.Name != k.Name {
					t.Fatalf("key after touches = %+v, %v; want last use at %d s", got, err, i)
				}
				return nil
			})
		}
		touch(100, true)
		last(100)
		touch(159, false)
		last(100)
		touch(160, true)
		last(160)
		err := f.s.Update(context.Background(), func(tx model.Tx) error {
			_, err := tx.TouchAPIKey("no such hash", at(1), time.Minute)
			return err
		})
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Delete", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		k1, k2 := newKey(tn.ID, "one"), newKey(tn.ID, "two")
		f.update(func(tx model.Tx) error {
			if err := tx.PutAPIKey(k1); err != nil {
				return err
			}
			return tx.PutAPIKey(k2)
		})
		f.update(func(tx model.Tx) error { return tx.DeleteAPIKey(tn.ID, k1.ID) })
		f.view(func(tx model.Tx) error {
			_, err := tx.APIKey(tn.ID, k1.ID)
			assertKind(t, err, model.KindNotFound)
			_, err = tx.APIKeyByHash(k1.Hash)
			assertKind(t, err, model.KindNotFound)
			keys, err := tx.APIKeys(tn.ID)
			if err != nil || len(keys) != 1 || keys[0].ID != k2.ID {
				t.Fatalf("APIKeys after delete = %+v, %v", keys, err)
			}
			return nil
		})
	})
	t.Run("ErrDeleteNotFound", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		other := f.tenant("other")
		k := newKey(tn.ID, "one")
		f.update(func(tx model.Tx) error { return tx.PutAPIKey(k) })
		for _, c := range [][2]string{{tn.ID, model.NewID()}, {tn.ID, "bad"}, {other.ID, k.ID}, {model.NewID(), k.ID}} {
			err := f.updateErr(func(tx model.Tx) error { return tx.DeleteAPIKey(c[0], c[1]) })
			assertKind(t, err, model.KindNotFound)
		}
		f.view(func(tx model.Tx) error {
			_, err := tx.APIKeyByHash(k.Hash)
			return err
		})
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		f := newFx(t, open)
		err := f.updateErr(func(tx model.Tx) error { return tx.PutAPIKey(newKey(model.NewID(), "one")) })
		assertKind(t, err, model.KindNotFound)
		err = f.viewErr(func(tx model.Tx) error {
			_, err := tx.APIKeys(model.NewID())
			return err
		})
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Empty", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		f.view(func(tx model.Tx) error {
			keys, err := tx.APIKeys(tn.ID)
			if err != nil || len(keys) != 0 {
				t.Fatalf("APIKeys = %+v, %v", keys, err)
			}
			_, err = tx.APIKeyByHash(model.HashToken("nothing"))
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
}

func testAuthTokens(t *testing.T, open Opener) {
	f := newFx(t, open)
	hash := model.HashToken("token")
	rec := &model.AuthToken{Kind: model.TokenReset, TenantID: model.NewID(), UserID: model.NewID(),
		ExpiresAt: model.At(at(3600))}
	f.update(func(tx model.Tx) error { return tx.PutAuthToken(hash, rec) })
	f.view(func(tx model.Tx) error {
		got, err := tx.AuthToken(hash)
		if err != nil || got.Kind != rec.Kind || got.TenantID != rec.TenantID || got.UserID != rec.UserID ||
			!got.ExpiresAt.Equal(rec.ExpiresAt.Time) {
			t.Fatalf("AuthToken = %+v, %v; want %+v", got, err, rec)
		}
		_, err = tx.AuthToken(model.HashToken("other"))
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.DeleteAuthToken(hash) })
	f.view(func(tx model.Tx) error {
		_, err := tx.AuthToken(hash)
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	// Deleting an absent token is fine.
	f.update(func(tx model.Tx) error { return tx.DeleteAuthToken(hash) })
}

func testIdempotency(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		const key = "POST /v1/zones\nk"
		rec := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"id":"x"}`), RequestID: "req-1"},
			Fingerprint: "fp", CreatedAt: model.At(at(0))}
		f.view(func(tx model.Tx) error {
			got, err := tx.Idempotency(a.ID, key)
			if err != nil || got != nil {
				t.Fatalf("Idempotency of a new key = %+v, %v; want nil", got, err)
			}
			return nil
		})
		f.update(func(tx model.Tx) error { return tx.PutIdempotency(a.ID, key, rec) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Idempotency(a.ID, key)
			if err != nil || got == nil || got.Status != 201 || string(got.Body) != `{"id":"x"}` ||
				got.RequestID != "req-1" || got.Fingerprint != "fp" || !got.CreatedAt.Equal(rec.CreatedAt.Time) {
				t.Fatalf("Idempotency = %+v, %v", got, err)
			}
			if got, _ := tx.Idempotency(b.ID, key); got != nil {
				t.Fatal("a key leaked to another tenant")
			}
			_, err = tx.Idempotency(model.NewID(), "k")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutIdempotency(model.NewID(), key, rec) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Expire", func(t *testing.T) {
		// ExpireIdempotency deletes the records made before a time, in every tenant, and
		// leaves the event replies alone.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		rec := func(i int) *model.IdempotencyRecord {
			return &model.IdempotencyRecord{Reply: model.Reply{Status: 200, Body: []byte(`{}`)}, CreatedAt: model.At(at(i))}
		}
		f.update(func(tx model.Tx) error {
			for _, c := range []struct {
				tenant, key string
				i           int
			}{{a.ID, "old-a", 0}, {a.ID, "new-a", 20}, {b.ID, "old-b", 5}, {b.ID, "edge-b", 10}} {
				if err := tx.PutIdempotency(c.tenant, c.key, rec(c.i)); err != nil {
					return err
				}
			}
			return tx.PutEventReply(a.ID, "event-key", rec(0))
		})
		var n int
		f.update(func(tx model.Tx) (err error) {
			n, err = tx.ExpireIdempotency(at(10))
			return err
		})
		if n != 2 {
			t.Fatalf("ExpireIdempotency deleted %d records, want 2", n)
		}
		f.view(func(tx model.Tx) error {
			for _, c := range []struct {
				tenant, key string
				kept        bool
			}{{a.ID, "old-a", false}, {a.ID, "new-a", true}, {b.ID, "old-b", false}, {b.ID, "edge-b", true}} {
				got, err := tx.Idempotency(c.tenant, c.key)
				if err != nil || (got != nil) != c.kept {
					t.Errorf("%s after expiry = %+v, %v; want kept %v", c.key, got, err, c.kept)
				}
			}
			if got, err := tx.EventReply(a.ID, "event-key"); err != nil || got == nil {
				t.Errorf("an event reply expired with the others: %+v, %v", got, err)
			}
			return nil
		})
		f.update(func(tx model.Tx) (err error) {
			n, err = tx.ExpireIdempotency(at(10))
			return err
		})
		if n != 0 {
			t.Fatalf("a second expiry deleted %d records, want 0", n)
		}
	})
}

func testZones(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.update(func(tx model.Tx) error {
			for _, c := range []string{"north", "east", "south"} {
				if err := tx.PutZone(a.ID, newZone(c)); err != nil {
					return err
				}
			}
			return tx.PutZone(b.ID, newZone("west"))
		})
		f.view(func(tx model.Tx) error {
			z, err := tx.Zone(a.ID, "north")
			if err != nil || z.Name != "Zone north" || len(z.Boundary.Coordinates[0]) != 4 {
				t.Fatalf("Zone = %+v, %v", z, err)
			}
			zones, err := tx.Zones(a.ID)
			if err != nil || len(zones) != 3 || zones[0].Code != "east" || zones[1].Code != "north" || zones[2].Code != "south" {
				t.Fatalf("Zones = %+v, %v; want ordered by code", zones, err)
			}
			_, err = tx.Zone(a.ID, "west")
			assertKind(t, err, model.KindNotFound)
			_, err = tx.Zone(a.ID, "")
			assertKind(t, err, model.KindNotFound)
			_, err = tx.Zone(model.NewID(), "north")
			assertKind(t, err, model.KindNotFound)
			_, err = tx.Zones(model.NewID())
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutZone(model.NewID(), newZone("x")) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Update", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		z := newZone("north")
		f.update(func(tx model.Tx) error { return tx.PutZone(a.ID, z) })
		z.Name = "North"
		f.update(func(tx model.Tx) error { return tx.PutZone(a.ID, z) })
		f.view(func(tx model.Tx) error {
			zones, err := tx.Zones(a.ID)
			if err != nil || len(zones) != 1 || zones[0].Name != "North" {
				t.Fatalf("Zones after an update = %+v, %v", zones, err)
			}
			return nil
		})
	})
	t.Run("Empty", func(t *testing.T) {
		f := newFx(t, open)
		c := f.tenant("charlie")
		f.view(func(tx model.Tx) error {
			zones, err := tx.Zones(c.ID)
			if err != nil || zones == nil || len(zones) != 0 {
				t.Fatalf("Zones = %#v, %v; want an empty list", zones, err)
			}
			return nil
		})
	})
	t.Run("Delete", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.update(func(tx model.Tx) error {
			for _, c := range []string{"north", "south"} {
				if err := tx.PutZone(a.ID, newZone(c)); err != nil {
					return err
				}
			}
			return tx.PutZone(b.ID, newZone("north"))
		})
		f.update(func(tx model.Tx) error { return tx.DeleteZone(a.ID, "north") })
		f.view(func(tx model.Tx) error {
			_, err := tx.Zone(a.ID, "north")
			assertKind(t, err, model.KindNotFound)
			zones, err := tx.Zones(a.ID)
			if err != nil || len(zones) != 1 || zones[0].Code != "south" {
				t.Fatalf("Zones = %+v, %v; want south only", zones, err)
			}
			if _, err := tx.Zone(b.ID, "north"); err != nil {
				t.Fatalf("another tenant's zone of the same code: %v", err)
			}
			return nil
		})
		for _, c := range [][2]string{{a.ID, "north"}, {a.ID, ""}, {model.NewID(), "south"}} {
			err := f.updateErr(func(tx model.Tx) error { return tx.DeleteZone(c[0], c[1]) })
			assertKind(t, err, model.KindNotFound)
		}
		// The code can be used again.
		z := newZone("north")
		f.update(func(tx model.Tx) error { return tx.PutZone(a.ID, z) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Zone(a.ID, "north")
			if err != nil || got.ID != z.ID {
				t.Fatalf("Zone = %+v, %v", got, err)
			}
			return nil
		})
	})
}

func testTeams(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	var teams []*model.Team
	f.update(func(tx model.Tx) error {
		for i, name := range []string{"one", "two", "three"} {
			tm := newTeam(name, i)
			teams = append(teams, tm)
			if err := tx.PutTeam(a.ID, tm); err != nil {
				return err
			}
		}
		return nil
	})
	teams[1].SetStatus("busy", model.At(at(7))) // status_since: docs/decisions/0261-team-status-since.md
	f.update(func(tx model.Tx) error { return tx.PutTeam(a.ID, teams[1]) })
	f.view(func(tx model.Tx) error {
		tm, err := tx.Team(a.ID, teams[1].ID)
		if err != nil || tm.Name != "two" || tm.Status != "busy" || len(tm.Members) != 1 || len(tm.Verticals) != 1 ||
			tm.StatusSince == nil || !tm.StatusSince.Equal(at(7)) {
			t.Fatalf("Team = %+v, %v", tm, err)
		}
		if all, err := tx.Teams(a.ID); err != nil || all[1].StatusSince == nil || !all[1].StatusSince.Equal(at(7)) {
			t.Fatalf("Teams()[1] = %+v, %v; want status_since kept", all[1], err)
		}
		got, err := tx.Teams(a.ID)
		if err != nil || ids(got, func(t model.Team) string { return t.ID }) != ids(teams, func(t *model.Team) string { return t.ID }) {
			t.Fatalf("Teams = %+v, %v; want oldest first", got, err)
		}
		for _, c := range [][2]string{{b.ID, teams[0].ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), teams[0].ID}} {
			_, err := tx.Team(c[0], c[1])
			assertKind(t, err, model.KindNotFound)
		}
		// The teams listed are the caller's to keep: changing them changes no later listing.
		got[0].Name, got[0].Verticals[0], got[0].Members[0].Name = "x", "x", "x"
		if again, err := tx.Teams(a.ID); err != nil || again[0].Name != "one" || again[0].Verticals[0] == "x" ||
			again[0].Members[0].Name == "x" {
			t.Fatalf("a listing changed by its previous caller: %+v, %v", again[0], err)
		}
		if got, _ := tx.Teams(b.ID); got == nil || len(got) != 0 {
			t.Fatalf("another tenant's teams = %#v, want an empty list", got)
		}
		_, err = tx.Teams(model.NewID())
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	// DeleteTeam removes one team of one tenant; a second time, or another tenant's, is
	// not found; a deletion rolled back leaves it.
	err := f.updateErr(func(tx model.Tx) error {
		if err := tx.DeleteTeam(a.ID, teams[2].ID); err != nil {
			return err
		}
		return fmt.Errorf("roll back")
	})
	if err == nil {
		t.Fatal("the rolled back transaction succeeded")
	}
	f.update(func(tx model.Tx) error { return tx.DeleteTeam(a.ID, teams[0].ID) })
	f.view(func(tx model.Tx) error {
		_, err := tx.Team(a.ID, teams[0].ID)
		assertKind(t, err, model.KindNotFound)
		got, err := tx.Teams(a.ID)
		if err != nil || ids(got, func(t model.Team) string { return t.ID }) != ids(teams[1:], func(t *model.Team) string { return t.ID }) {
			t.Fatalf("Teams after a deletion = %+v, %v", got, err)
		}
		return nil
	})
	for _, c := range [][2]string{{a.ID, teams[0].ID}, {b.ID, teams[1].ID}, {a.ID, "bad"}} {
		assertKind(t, f.updateErr(func(tx model.Tx) error { return tx.DeleteTeam(c[0], c[1]) }), model.KindNotFound)
	}
	err = f.updateErr(func(tx model.Tx) error { return tx.PutTeam(model.NewID(), newTeam("x", 9)) })
	assertKind(t, err, model.KindNotFound)
	err = f.updateErr(func(tx model.Tx) error {
		tm := newTeam("x", 9)
		tm.ID = "bad"
		return tx.PutTeam(a.ID, tm)
	})
	if err == nil {
		t.Fatal("PutTeam accepted a malformed id")
	}
}
