package storetest

import (
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testMeta pins Meta and PutMeta: nil for an absent key, and values the caller keeps.
func testMeta(t *testing.T, open Opener) {
	f := newFx(t, open)
	f.view(func(tx model.Tx) error {
		v, err := tx.Meta("absent")
		if err != nil || v != nil {
			t.Fatalf("Meta(absent) = %q, %v; want nil", v, err)
		}
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.PutMeta("k", []byte("value")) })
	var kept []byte
	f.view(func(tx model.Tx) (err error) {
		kept, err = tx.Meta("k")
		return err
	})
	// The value is the caller's to keep after the transaction.
	f.update(func(tx model.Tx) error { return tx.PutMeta("k", []byte("other")) })
	if string(kept) != "value" {
		t.Fatalf("a kept value changed to %q", kept)
	}
	kept[0] = 'X'
	f.view(func(tx model.Tx) error {
		if v, _ := tx.Meta("k"); string(v) != "other" {
			t.Fatalf("Meta = %q", v)
		}
		return nil
	})
}

// testTenants pins the tenants and their slug index.
func testTenants(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.view(func(tx model.Tx) error {
			got, err := tx.Tenant(a.ID)
			if err != nil || got.Slug != "alpha" || got.Name != a.Name || got.DispatchThreshold != 0.2 ||
				got.Email != a.Email || got.SLATargetUptimePct != 99.9 || len(got.Verticals) != len(a.Verticals) ||
				!got.CreatedAt.Equal(a.CreatedAt.Time) {
				t.Fatalf("Tenant = %+v, %v", got, err)
			}
			got, err = tx.TenantBySlug("bravo")
			if err != nil || got.ID != b.ID {
				t.Fatalf("TenantBySlug = %+v, %v", got, err)
			}
			all, err := tx.Tenants()
			if err != nil || len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID {
				t.Fatalf("Tenants = %+v, %v; want alpha, bravo (oldest first)", all, err)
			}
			return nil
		})
	})
	t.Run("Empty", func(t *testing.T) {
		f := newFx(t, open)
		f.view(func(tx model.Tx) error {
			all, err := tx.Tenants()
			if err != nil || len(all) != 0 {
				t.Fatalf("Tenants = %+v, %v", all, err)
			}
			return nil
		})
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := newFx(t, open)
		f.tenant("alpha")
		f.view(func(tx model.Tx) error {
			_, err := tx.Tenant(model.NewID())
			assertKind(t, err, model.KindNotFound)
			_, err = tx.Tenant("not-an-id")
			assertKind(t, err, model.KindNotFound)
			_, err = tx.Tenant("")
			assertKind(t, err, model.KindNotFound)
			_, err = tx.TenantBySlug("ghost")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("ErrSlugTaken", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		err := f.updateErr(func(tx model.Tx) error {
			imp := newTenant("alpha")
			imp.Name = "Impostor"
			return tx.PutTenant(imp)
		})
		assertKind(t, err, model.KindConflict)
		f.view(func(tx model.Tx) error {
			got, _ := tx.TenantBySlug("alpha")
			if got.ID != a.ID {
				t.Fatal("the slug changed hands")
			}
			if all, _ := tx.Tenants(); len(all) != 1 {
				t.Fatalf("%d tenants, want 1", len(all))
			}
			return nil
		})
	})
	t.Run("Rename", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		a.Slug = "alpha-2"
		a.Status = "suspended"
		f.update(func(tx model.Tx) error { return tx.PutTenant(a) })
		f.view(func(tx model.Tx) error {
			_, err := tx.TenantBySlug("alpha")
			assertKind(t, err, model.KindNotFound)
			got, err := tx.TenantBySlug("alpha-2")
			if err != nil || got.ID != a.ID || got.Status != "suspended" {
				t.Fatalf("renamed tenant = %+v, %v", got, err)
			}
			if all, _ := tx.Tenants(); len(all) != 1 {
				t.Fatalf("%d tenants after a rename, want 1", len(all))
			}
			return nil
		})
		// The old slug is free for another tenant.
		f.tenant("alpha")
	})
	t.Run("ErrBadID", func(t *testing.T) {
		f := newFx(t, open)
		err := f.updateErr(func(tx model.Tx) error {
			tn := newTenant("x")
			tn.ID = "nope"
			return tx.PutTenant(tn)
		})
		if err == nil {
			t.Fatal("PutTenant accepted a malformed id")
		}
	})
}

// testUsers pins the user accounts, their email index and their list.
func testUsers(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		u := newUser(tn.ID, "alice@acme.example")
		u.PasswordHash = "$argon2id$…"
		u.CreatedAt = model.At(at(1))
		u.Phone, u.OnDuty = "+33612345678", true // docs/decisions/0263-alert-escalation.md
		f.update(func(tx model.Tx) error { return tx.PutUserAccount(u) })
		f.view(func(tx model.Tx) error {
			got, err := tx.UserAccount(tn.ID, u.ID)
			if err != nil || got.Email != u.Email || got.PasswordHash != u.PasswordHash || got.TokenVersion != 1 ||
				got.TenantID != tn.ID || got.RBACLevel != u.RBACLevel || !got.CreatedAt.Equal(u.CreatedAt.Time) ||
				got.Phone != u.Phone || !got.OnDuty {
				t.Fatalf("UserAccount = %+v, %v", got, err)
			}
			got, err = tx.UserAccountByEmail("alice@acme.example")
			if err != nil || got.ID != u.ID {
				t.Fatalf("UserAccountByEmail = %+v, %v", got, err)
			}
			return nil
		})
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		other := f.tenant("other")
		u := f.user(tn.ID, "alice@acme.example")
		f.view(func(tx model.Tx) error {
			for _, c := range [][2]string{{tn.ID, model.NewID()}, {tn.ID, "bad"}, {other.ID, u.ID},
				{model.NewID(), u.ID}, {"bad", u.ID}} {
				_, err := tx.UserAccount(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			_, err := tx.UserAccountByEmail("bob@acme.example")
			assertKind(t, err, model.KindNotFound)
			_, _, err = tx.Users(model.NewID(), model.Page{Limit: 10})
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		f := newFx(t, open)
		err := f.updateErr(func(tx model.Tx) error {
			return tx.PutUserAccount(newUser(model.NewID(), "alice@acme.example"))
		})
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrEmailTaken", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		first := f.user(a.ID, "alice@acme.example")
		for _, tid := range []string{a.ID, b.ID} {
			err := f.updateErr(func(tx model.Tx) error {
				return tx.PutUserAccount(newUser(tid, "alice@acme.example"))
			})
			assertKind(t, err, model.KindConflict)
		}
		f.view(func(tx model.Tx) error {
			got, _ := tx.UserAccountByEmail("alice@acme.example")
			if got.ID != first.ID {
				t.Fatal("the email changed hands")
			}
			users, _, _ := tx.Users(b.ID, model.Page{Limit: 10})
			if len(users) != 0 {
				t.Fatalf("a refused user was stored: %+v", users)
			}
			return nil
		})
	})
	t.Run("ChangeEmailFreesOld", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		u := f.user(tn.ID, "alice@acme.example")
		u.Email = "alice@new.example"
		f.update(func(tx model.Tx) error { return tx.PutUserAccount(u) })
		f.view(func(tx model.Tx) error {
			_, err := tx.UserAccountByEmail("alice@acme.example")
			assertKind(t, err, model.KindNotFound)
			got, err := tx.UserAccountByEmail("alice@new.example")
			if err != nil || got.ID != u.ID {
				t.Fatalf("by new email = %+v, %v", got, err)
			}
			return nil
		})
		f.user(tn.ID, "alice@acme.example")
	})
	t.Run("ErrChangeEmailToTaken", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		f.user(tn.ID, "alice@acme.example")
		bob := f.user(tn.ID, "bob@acme.example")
		bob.Email = "alice@acme.example"
		err := f.updateErr(func(tx model.Tx) error { return tx.PutUserAccount(bob) })
		assertKind(t, err, model.KindConflict)
		f.view(func(tx model.Tx) error {
			got, err := tx.UserAccountByEmail("bob@acme.example")
			if err != nil || got.ID != bob.ID {
				t.Fatalf("bob lost his email: %+v, %v", got, err)
			}
			return nil
		})
	})
	t.Run("UpdateKeepsEmail", func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		u := f.user(tn.ID, "alice@acme.example")
		u.Name, u.TokenVersion = "Alice", 7
		f.update(func(tx model.Tx) error { return tx.PutUserAccount(u) })
		f.view(func(tx model.Tx) error {
			got, err := tx.UserAccountByEmail("alice@acme.example")
			if err != nil || got.Name != "Alice" || got.TokenVersion != 7 {
				t.Fatalf("updated user = %+v, %v", got, err)
			}
			users, _, err := tx.Users(tn.ID, model.Page{Limit: 10})
			if err != nil || len(users) != 1 || users[0].Name != "Alice" {
				t.Fatalf("Users after an update = %+v, %v", users, err)
			}
			return nil
		})
	})
	t.Run("Pages", testUserPages(open))
}

// testUserPages pins the paging of Users, newest first.
func testUserPages(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		f := newFx(t, open)
		tn := f.tenant("acme")
		other := f.tenant("other")
		var want []string // newest first
		for i := range 7 {
			u := newUser(tn.ID, fmt.Sprintf("u%d@acme.example", i))
			u.ID, u.CreatedAt = model.NewIDAt(at(i)), model.At(at(i))
			f.update(func(tx model.Tx) error { return tx.PutUserAccount(u) })
			want = append([]string{u.ID}, want...)
			f.user(other.ID, fmt.Sprintf("u%d@other.example", i))
		}
		list := func(tx model.Tx, p model.Page) ([]model.User, string, error) { return tx.Users(tn.ID, p) }
		userID := func(u model.User) string { return u.ID }
		t.Run("Walk", func(t *testing.T) {
			got, sizes := walk(t, f, model.Page{Limit: 3}, 5, list)
			if sizesOf(sizes) != "[3 3 1]" {
				t.Fatalf("page sizes = %v, want [3 3 1]", sizes)
			}
			for _, u := range got {
				if u.TenantID != tn.ID {
					t.Fatalf("another tenant's user listed: %+v", u)
				}
			}
			if ids(got, userID) != ids(want, func(s string) string { return s }) {
				t.Fatalf("users = %s, want %v (newest first)", ids(got, userID), want)
			}
		})
		t.Run("ExactPages", func(t *testing.T) {
			for _, limit := range []int{7, 50, 0} {
				got, sizes := walk(t, f, model.Page{Limit: limit}, 2, list)
				if len(got) != 7 || len(sizes) != 1 {
					t.Fatalf("limit %d: pages %v; want one page of 7 and no next cursor", limit, sizes)
				}
			}
		})
		t.Run("NewUserBetweenPages", func(t *testing.T) {
			// A user created between two pages does not shift the later pages.
			var first []model.User
			var next string
			f.view(func(tx model.Tx) (err error) {
				first, next, err = tx.Users(tn.ID, model.Page{Limit: 3})
				return err
			})
			if len(first) != 3 || next == "" {
				t.Fatalf("first page: %d users, next %q", len(first), next)
			}
			late := newUser(tn.ID, "late@acme.example")
			late.ID, late.CreatedAt = model.NewIDAt(at(100)), model.At(at(100))
			f.update(func(tx model.Tx) error { return tx.PutUserAccount(late) })
			f.view(func(tx model.Tx) error {
				second, _, err := tx.Users(tn.ID, model.Page{Limit: 3, Cursor: next})
				if err != nil || len(second) == 0 || second[0].ID != want[3] {
					t.Fatalf("second page = %s, %v; want it to start at %s", ids(second, userID), err, want[3])
				}
				return nil
			})
		})
		t.Run("ErrMalformedCursor", func(t *testing.T) {
			f.view(func(tx model.Tx) error {
				for _, c := range []string{"!!!", "not a cursor", "%%%%"} {
					_, _, err := tx.Users(tn.ID, model.Page{Limit: 3, Cursor: c})
					if e := assertKind(t, err, model.KindValidation); e.Field != "cursor" {
						t.Fatalf("cursor %q: field = %q, want cursor", c, e.Field)
					}
				}
				return nil
			})
		})
	}
}

// testLoginGuard pins the login guards: zero when absent, and a zero put deletes.
func testLoginGuard(t *testing.T, open Opener) {
	f := newFx(t, open)
	const email = "alice@acme.example"
	f.view(func(tx model.Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil || !g.IsZero() {
			t.Fatalf("LoginGuard of a new email = %+v, %v; want zero", g, err)
		}
		return nil
	})
	until := model.TimePtr(at(60))
	f.update(func(tx model.Tx) error {
		if err := tx.PutLoginGuard(email, model.LoginGuard{Failures: 3}); err != nil {
			return err
		}
		return tx.PutLoginGuard("bob@acme.example", model.LoginGuard{LockedUntil: until})
	})
	f.view(func(tx model.Tx) error {
		if g, _ := tx.LoginGuard(email); g.Failures != 3 || g.LockedUntil != nil {
			t.Fatalf("guard = %+v", g)
		}
		if g, _ := tx.LoginGuard("bob@acme.example"); g.LockedUntil == nil || !g.LockedUntil.Equal(until.Time) {
			t.Fatalf("guard = %+v", g)
		}
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.PutLoginGuard(email, model.LoginGuard{}) })
	f.view(func(tx model.Tx) error {
		if g, _ := tx.LoginGuard(email); !g.IsZero() {
			t.Fatalf("guard after a zero put = %+v", g)
		}
		if g, _ := tx.LoginGuard("bob@acme.example"); g.LockedUntil == nil {
			t.Fatal("the other guard is gone")
		}
		return nil
	})
	// Deleting an absent guard is fine.
	f.update(func(tx model.Tx) error { return tx.PutLoginGuard("ghost@acme.example", model.LoginGuard{}) })
}
