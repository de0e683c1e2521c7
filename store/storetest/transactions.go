package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testStore pins the methods of model.Store: transactions, OnCommit, Batch, Version and
// Backup.
func testStore(t *testing.T, open Opener) {
	t.Run("UpdateCommits", func(t *testing.T) {
		f := newFx(t, open)
		f.update(func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
		f.view(func(tx model.Tx) error {
			if v, err := tx.Meta("k"); err != nil || string(v) != "v" {
				t.Fatalf("Meta after a commit = %q, %v", v, err)
			}
			return nil
		})
	})
	t.Run("UpdateSeesItsOwnWrites", func(t *testing.T) {
		f := newFx(t, open)
		f.update(func(tx model.Tx) error {
			tn := newTenant("acme")
			if err := tx.PutTenant(tn); err != nil {
				return err
			}
			got, err := tx.TenantBySlug("acme")
			if err != nil || got.ID != tn.ID {
				t.Fatalf("a tenant written in the transaction = %+v, %v", got, err)
			}
			return nil
		})
	})
	t.Run("UpdateRollsBack", func(t *testing.T) {
		f := newFx(t, open)
		boom := model.Invalid("x", "x is bad")
		err := f.updateErr(func(tx model.Tx) error {
			if err := tx.PutMeta("k", []byte("v")); err != nil {
				return err
			}
			if err := tx.PutTenant(newTenant("acme")); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("Update = %v, want fn's error as it is", err)
		}
		f.view(func(tx model.Tx) error {
			if v, _ := tx.Meta("k"); v != nil {
				t.Fatal("a rolled back write is visible")
			}
			_, err := tx.TenantBySlug("acme")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("OnCommit", func(t *testing.T) {
		f := newFx(t, open)
		var calls []string
		f.update(func(tx model.Tx) error {
			tx.OnCommit(func() { calls = append(calls, "first") })
			tx.OnCommit(func() { calls = append(calls, "second") })
			if err := tx.PutMeta("k", []byte("v")); err != nil {
				return err
			}
			if len(calls) != 0 {
				t.Fatal("OnCommit ran before the commit")
			}
			return nil
		})
		if fmt.Sprint(calls) != "[first second]" {
			t.Fatalf("OnCommit calls = %v, want both, in order, once Update returned", calls)
		}
		calls = nil
		_ = f.updateErr(func(tx model.Tx) error {
			tx.OnCommit(func() { calls = append(calls, "rolled back") })
			return errors.New("fail")
		})
		if len(calls) != 0 {
			t.Fatalf("OnCommit of a rolled back transaction ran: %v", calls)
		}
	})
	t.Run("OnCommitSeesTheCommit", func(t *testing.T) {
		// A callback may use the store: the transaction is over, its writes visible.
		f := newFx(t, open)
		var seen []byte
		f.update(func(tx model.Tx) error {
			tx.OnCommit(func() {
				f.view(func(tx model.Tx) (err error) {
					seen, err = tx.Meta("k")
					return err
				})
			})
			return tx.PutMeta("k", []byte("v"))
		})
		if string(seen) != "v" {
			t.Fatalf("OnCommit saw %q, want the committed value", seen)
		}
	})
	t.Run("ViewIsReadOnly", func(t *testing.T) {
		f := newFx(t, open)
		err := f.viewErr(func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
		if err == nil {
			t.Fatal("a write in View succeeded")
		}
		f.view(func(tx model.Tx) error {
			if v, _ := tx.Meta("k"); v != nil {
				t.Fatalf("a write in View was kept: %q", v)
			}
			return nil
		})
	})
	t.Run("ViewReturnsFnError", func(t *testing.T) {
		f := newFx(t, open)
		boom := errors.New("boom")
		if err := f.viewErr(func(model.Tx) error { return boom }); err != boom {
			t.Fatalf("View = %v, want fn's error as it is", err)
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		f := newFx(t, open)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		fn := func(model.Tx) error { ran = true; return nil }
		if err := f.s.View(ctx, fn); !errors.Is(err, context.Canceled) {
			t.Fatalf("View with a cancelled context = %v", err)
		}
		if err := f.s.Update(ctx, fn); !errors.Is(err, context.Canceled) {
			t.Fatalf("Update with a cancelled context = %v", err)
		}
		if err := f.s.Batch(ctx, "", fn); !errors.Is(err, context.Canceled) {
			t.Fatalf("Batch with a cancelled context = %v", err)
		}
		if _, err := f.s.Backup(ctx, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Backup with a cancelled context = %v", err)
		}
		if ran {
			t.Fatal("fn ran under a cancelled context")
		}
	})
	t.Run("Close", func(t *testing.T) {
		// Close releases the store: later transactions fail. (The cleanup of open closes it
		// again, which must be harmless.)
		f := newFx(t, open)
		f.tenant("acme")
		if err := f.s.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		fn := func(model.Tx) error { return nil }
		if err := f.s.View(context.Background(), fn); err == nil {
			t.Error("View after Close succeeded")
		}
		if err := f.s.Update(context.Background(), fn); err == nil {
			t.Error("Update after Close succeeded")
		}
		if err := f.s.Batch(context.Background(), "", fn); err == nil {
			t.Error("Batch after Close succeeded")
		}
	})
	t.Run("Batch", testBatch(open))
	t.Run("Version", testVersion(open))
	t.Run("Backup", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		f.user(tn.ID, "alice@acme.example")
		var buf bytes.Buffer
		n, err := f.s.Backup(context.Background(), &buf)
		if err != nil {
			// A store that cannot write a snapshot says why (its own tool does it).
			if err.Error() == "" {
				t.Fatal("Backup failed with an empty message")
			}
			t.Logf("Backup: %v", err)
			return
		}
		if n <= 0 || int64(buf.Len()) != n {
			t.Fatalf("Backup = %d bytes, wrote %d", n, buf.Len())
		}
		// The store keeps working.
		f.user(tn.ID, "late@acme.example")
	})
}

// testBatch pins Batch: every call commits or fails alone, with fn's error as it is.
func testBatch(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		t.Run("Commits", func(t *testing.T) {
			f := newFx(t, open)
			var calls int
			err := f.s.Batch(context.Background(), "", func(tx model.Tx) error {
				tx.OnCommit(func() { calls++ })
				return tx.PutMeta("k", []byte("v"))
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Fatalf("OnCommit ran %d times once Batch returned, want 1", calls)
			}
			f.view(func(tx model.Tx) error {
				if v, _ := tx.Meta("k"); string(v) != "v" {
					t.Fatalf("Meta = %q", v)
				}
				return nil
			})
		})
		t.Run("Concurrent", func(t *testing.T) {
			// Concurrent calls, some failing: each failing call returns its own error and
			// leaves nothing; every other call commits, its OnCommit run once.
			f := newFx(t, open)
			const n = 24
			errs := make([]error, n)
			commits := make([]int, n)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = f.s.Batch(context.Background(), "", func(tx model.Tx) error {
						tx.OnCommit(func() { mu.Lock(); commits[i]++; mu.Unlock() })
						if err := tx.PutMeta(fmt.Sprintf("k%02d", i), []byte{byte(i)}); err != nil {
							return err
						}
						if i%5 == 2 {
							return fmt.Errorf("call %d fails", i)
						}
						return nil
					})
				}()
			}
			wg.Wait()
			f.view(func(tx model.Tx) error {
				for i := range n {
					v, err := tx.Meta(fmt.Sprintf("k%02d", i))
					if err != nil {
						return err
					}
					if i%5 == 2 {
						if errs[i] == nil || errs[i].Error() != fmt.Sprintf("call %d fails", i) {
							t.Errorf("call %d = %v, want its own error", i, errs[i])
						}
						if v != nil || commits[i] != 0 {
							t.Errorf("failing call %d: value %v, %d OnCommit calls", i, v, commits[i])
						}
						continue
					}
					if errs[i] != nil || len(v) != 1 || v[0] != byte(i) || commits[i] != 1 {
						t.Errorf("call %d = %v: value %v, %d OnCommit calls", i, errs[i], v, commits[i])
					}
				}
				return nil
			})
		})
		t.Run("SeesCommittedWrites", func(t *testing.T) {
			// A call reads what the calls before it committed (a counter bumped by each).
			f := newFx(t, open)
			const n = 16
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := f.s.Batch(context.Background(), "", func(tx model.Tx) error {
						v, err := tx.Meta("counter")
						if err != nil {
							return err
						}
						c := 0
						if v != nil {
							c = int(v[0])
						}
						return tx.PutMeta("counter", []byte{byte(c + 1)})
					})
					if err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			f.view(func(tx model.Tx) error {
				if v, _ := tx.Meta("counter"); len(v) != 1 || v[0] != n {
					t.Fatalf("counter = %v, want %d", v, n)
				}
				return nil
			})
		})
	}
}

// testVersion pins Version: a commit that changes a tenant's directory changes the
// tenant's version and the version of all; PutTeamPositions does not.
func testVersion(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		u := newUser(tn.ID, "alice@acme.example")
		key := newKey(tn.ID, "one")
		team := newTeam("one", 0)
		wh := newWebhook(0)
		zone := newZone("north")
		for _, c := range []struct {
			name string
			fn   func(tx model.Tx) error
		}{
			{"PutTenant", func(tx model.Tx) error { tn.Name = "Acme"; return tx.PutTenant(tn) }},
			{"PutUserAccount", func(tx model.Tx) error { return tx.PutUserAccount(u) }},
			{"PutAPIKey", func(tx model.Tx) error { return tx.PutAPIKey(key) }},
			{"DeleteAPIKey", func(tx model.Tx) error { return tx.DeleteAPIKey(tn.ID, key.ID) }},
			{"PutZone", func(tx model.Tx) error { return tx.PutZone(tn.ID, zone) }},
			{"DeleteZone", func(tx model.Tx) error { return tx.DeleteZone(tn.ID, zone.Code) }},
			{"PutWebhook", func(tx model.Tx) error { return tx.PutWebhook(tn.ID, wh) }},
			{"DeleteWebhook", func(tx model.Tx) error { return tx.DeleteWebhook(tn.ID, wh.ID) }},
			{"PutTeam", func(tx model.Tx) error { return tx.PutTeam(tn.ID, team) }},
		} {
			before, all := f.s.Version(tn.ID), f.s.Version("")
			f.update(c.fn)
			if f.s.Version(tn.ID) == before {
				t.Errorf("%s left the tenant's version at %d", c.name, before)
			}
			if f.s.Version("") == all {
				t.Errorf("%s left the version of all tenants at %d", c.name, all)
			}
		}
		before, all := f.s.Version(tn.ID), f.s.Version("")
		lat, lng := 48.85, 2.35
		team.Members = []model.Member{{ID: model.NewID(), Name: "M", Lat: &lat, Lng: &lng, LocationUpdatedAt: model.TimePtr(at(1))}}
		f.update(func(tx model.Tx) error { return tx.PutTeamPositions(tn.ID, team) })
		if f.s.Version(tn.ID) != before || f.s.Version("") != all {
			t.Errorf("PutTeamPositions changed the versions: %d → %d, %d → %d", before, f.s.Version(tn.ID), all, f.s.Version(""))
		}
		f.view(func(tx model.Tx) error {
			got, err := tx.Team(tn.ID, team.ID)
			if err != nil || len(got.Members) != 1 || got.Members[0].Lat == nil || *got.Members[0].Lat != lat {
				t.Fatalf("team after PutTeamPositions = %+v, %v", got, err)
			}
			return nil
		})
	}
}
