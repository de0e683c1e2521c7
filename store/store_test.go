package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"github.com/google/uuid"

	bolt "go.etcd.io/bbolt"
)

// The shared test helpers (store/storetest, engine/model/modeltest) under the short names
// the store tests use.
var (
	MustOpenDB  = storetest.MustOpenDB
	MustOpenDir = storetest.MustOpenDir
	AssertKind  = modeltest.AssertKind
)

// MustUpdate runs fn in a read-write transaction and fails the test on error.
func MustUpdate(tb testing.TB, db *store.DB, fn func(model.Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatalf("update: %v", err)
	}
}

// MustView runs fn in a read-only transaction and fails the test on error.
func MustView(tb testing.TB, db *store.DB, fn func(model.Tx) error) {
	tb.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		tb.Fatalf("view: %v", err)
	}
}

// MustPutTenant stores a new tenant with the given slug.
func MustPutTenant(tb testing.TB, db *store.DB, slug string) *model.Tenant {
	tb.Helper()
	tn := &model.Tenant{ID: model.NewID(), Name: "Tenant " + slug, Slug: slug, Email: "ops@" + slug + ".example",
		LicenseType: engine.PlanStarter, Status: engine.TenantActive, Country: "FR",
		Verticals: model.StandardVerticals, DispatchThreshold: 0.2, SLATargetUptimePct: 99.9}
	MustUpdate(tb, db, func(tx model.Tx) error { return tx.PutTenant(tn) })
	return tn
}

// newUser returns a user account of a tenant, not yet stored.
func newUser(tenantID, email string) *model.UserAccount {
	return &model.UserAccount{User: model.User{ID: model.NewID(), TenantID: tenantID, Email: email,
		Name: "User " + email, RBACLevel: model.RoleAPIUser, Status: engine.UserActive}, TokenVersion: 1}
}

// MustPutUser stores a new user.
func MustPutUser(tb testing.TB, db *store.DB, tenantID, email string) *model.UserAccount {
	tb.Helper()
	u := newUser(tenantID, email)
	MustUpdate(tb, db, func(tx model.Tx) error { return tx.PutUserAccount(u) })
	return u
}

// rawView closes db and reads its file with bbolt directly.
func rawView(tb testing.TB, db *store.DB, fn func(*bolt.Tx) error) {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	b, err := bolt.Open(db.Path(), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer b.Close()
	if err := b.View(fn); err != nil {
		tb.Fatal(err)
	}
}

// writeRaw creates a bbolt file at path and runs fn in a write transaction on it.
func writeRaw(tb testing.TB, path string, fn func(*bolt.Tx) error) {
	tb.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	if err := b.Update(fn); err != nil {
		tb.Fatal(err)
	}
	if err := b.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestOpen(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nested", "data")
		db := MustOpenDir(t, dir)
		if db.Path() != filepath.Join(dir, store.FileName) || store.Path(dir) != db.Path() {
			t.Fatalf("Path = %s", db.Path())
		}
		fi, err := os.Stat(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("file mode = %v, want 0600", fi.Mode().Perm())
		}
		if di, _ := os.Stat(dir); di.Mode().Perm()&0o077 != 0 {
			t.Fatalf("data directory mode = %v, want no access for others", di.Mode().Perm())
		}
		rawView(t, db, func(tx *bolt.Tx) error {
			meta := tx.Bucket([]byte("meta"))
			if meta == nil {
				t.Fatal("no meta bucket")
			}
			if v := string(meta.Get([]byte("schema_version"))); v != "1" {
				t.Fatalf("schema_version = %q, want 1", v)
			}
			for _, name := range []string{"tenants", "slugs", "apikeys", "users_by_email", "login_guards",
				"outbox_due", "t"} {
				if tx.Bucket([]byte(name)) == nil {
					t.Errorf("root bucket %s is missing", name)
				}
			}
			return nil
		})
	})
	t.Run("Reopen", func(t *testing.T) {
		dir := t.TempDir()
		db := MustOpenDir(t, dir)
		tn := MustPutTenant(t, db, "acme")
		u := MustPutUser(t, db, tn.ID, "alice@acme.example")
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = MustOpenDir(t, dir)
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.TenantBySlug("acme")
			if err != nil || got.ID != tn.ID {
				t.Fatalf("tenant after reopen = %+v, %v", got, err)
			}
			acct, err := tx.UserAccountByEmail("alice@acme.example")
			if err != nil || acct.ID != u.ID {
				t.Fatalf("user after reopen = %+v, %v", acct, err)
			}
			if v, _ := tx.Meta("k"); string(v) != "v" {
				t.Fatalf("meta after reopen = %q", v)
			}
			return nil
		})
	})
	t.Run("EmptyFileIsNew", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(store.Path(dir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db := MustOpenDir(t, dir)
		MustPutTenant(t, db, "acme")
	})
	t.Run("ErrForeign", func(t *testing.T) {
		dir := t.TempDir()
		writeRaw(t, store.Path(dir), func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("widgets"))
			if err != nil {
				return err
			}
			return b.Put([]byte("a"), []byte("b"))
		})
		db, err := store.Open(dir, store.Options{})
		if !errors.Is(err, store.ErrForeign) || db != nil {
			t.Fatalf("Open of a foreign bbolt file = %v, %v; want ErrForeign", db, err)
		}
		// Nothing was written to it.
		b, err := bolt.Open(store.Path(dir), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatalf("the foreign file is still locked or broken: %v", err)
		}
		defer b.Close()
		_ = b.View(func(tx *bolt.Tx) error {
			if tx.Bucket([]byte("meta")) != nil {
				t.Error("Open wrote to a foreign file")
			}
			return nil
		})
	})
	t.Run("ErrForeignBadSchemaVersion", func(t *testing.T) {
		dir := t.TempDir()
		writeRaw(t, store.Path(dir), func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("meta"))
			if err != nil {
				return err
			}
			return b.Put([]byte("schema_version"), []byte("one"))
		})
		_, err := store.Open(dir, store.Options{})
		if !errors.Is(err, store.ErrForeign) {
			t.Fatalf("Open = %v, want ErrForeign", err)
		}
	})
	t.Run("ErrNewerSchema", func(t *testing.T) {
		dir := t.TempDir()
		db := MustOpenDir(t, dir)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		writeRaw(t, store.Path(dir), func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte("99"))
		})
		db, err := store.Open(dir, store.Options{})
		if err == nil || db != nil || errors.Is(err, store.ErrForeign) || !strings.Contains(err.Error(), "upgrade") {
			t.Fatalf("Open of a newer schema = %v, %v; want an error asking for an upgrade", db, err)
		}
	})
	for name, data := range map[string]func() []byte{
		"ErrCorruptRandom":  func() []byte { b := make([]byte, 64<<10); _, _ = rand.Read(b); return b },
		"ErrCorruptSmall":   func() []byte { return []byte("this is not a database") },
		"ErrCorruptOneByte": func() []byte { return []byte{0} },
		"ErrCorruptZeros":   func() []byte { return make([]byte, 16<<10) },
		"ErrCorruptText":    func() []byte { return bytes.Repeat([]byte("fieldrelay "), 1000) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(store.Path(dir), data(), 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(dir, store.Options{LockTimeout: time.Second})
			if err == nil || db != nil {
				t.Fatalf("Open of a corrupt file = %v, %v; want an error", db, err)
			}
			if !errors.Is(err, store.ErrForeign) {
				t.Fatalf("Open of a corrupt file = %v, want ErrForeign", err)
			}
		})
	}
	t.Run("ErrCorruptFreelist", func(t *testing.T) {
		// A real fieldrelay file with every page after the meta pages scribbled over:
		// bbolt panics while loading the freelist inside bolt.Open.
		dir := t.TempDir()
		fillStore(t, dir)
		raw, err := os.ReadFile(store.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		for i := 2 * pageSize(t, raw); i < len(raw); i++ {
			raw[i] = 0xA5
		}
		if err := os.WriteFile(store.Path(dir), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		assertForeignTwice(t, dir)
	})
	t.Run("ErrCorruptRootPage", func(t *testing.T) {
		// Meta and freelist pages intact, the root bucket's page scribbled over: bbolt
		// opens the file and panics when the store reads its buckets.
		dir := t.TempDir()
		fillStore(t, dir)
		raw, err := os.ReadFile(store.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		ps := pageSize(t, raw)
		for m := 0; m < 2; m++ { // both meta pages name a root page
			root := int(binary.LittleEndian.Uint64(raw[m*ps+32:]))
			if root < 2 || (root+1)*ps > len(raw) {
				t.Fatalf("meta %d names root page %d", m, root)
			}
			for i := root * ps; i < (root+1)*ps; i++ {
				raw[i] = 0xA5
			}
		}
		if err := os.WriteFile(store.Path(dir), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		assertForeignTwice(t, dir)
	})
	t.Run("ErrLocked", func(t *testing.T) {
		dir := t.TempDir()
		MustOpenDir(t, dir)
		start := time.Now()
		db, err := store.Open(dir, store.Options{LockTimeout: 100 * time.Millisecond})
		if !errors.Is(err, store.ErrLocked) || db != nil {
			t.Fatalf("second Open = %v, %v; want ErrLocked", db, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the lock timeout took %v", d)
		}
		_, err = store.Open(dir, store.Options{LockTimeout: 100 * time.Millisecond, ReadOnly: true})
		if !errors.Is(err, store.ErrLocked) {
			t.Fatalf("read-only Open beside a writer = %v, want ErrLocked", err)
		}
	})
	t.Run("ReleasedOnClose", func(t *testing.T) {
		dir := t.TempDir()
		db := MustOpenDir(t, dir)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db2, err := store.Open(dir, store.Options{LockTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("Open after Close: %v", err)
		}
		_ = db2.Close()
	})
	t.Run("ReadOnly", func(t *testing.T) {
		dir := t.TempDir()
		db := MustOpenDir(t, dir)
		MustPutTenant(t, db, "acme")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := store.Open(dir, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		MustView(t, ro, func(tx model.Tx) error {
			_, err := tx.TenantBySlug("acme")
			return err
		})
		if err := ro.Update(context.Background(), func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) }); err == nil {
			t.Fatal("a read-only store accepted a write")
		}
	})
	t.Run("ErrReadOnlyMissing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "absent")
		if _, err := store.Open(dir, store.Options{ReadOnly: true}); err == nil {
			t.Fatal("a read-only Open of a missing data directory succeeded")
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatal("a read-only Open created the data directory")
		}
	})
	t.Run("ErrReadOnlyFresh", func(t *testing.T) {
		// A bbolt file with no buckets at all is not a fieldrelay file to a reader.
		dir := t.TempDir()
		writeRaw(t, store.Path(dir), func(*bolt.Tx) error { return nil })
		if _, err := store.Open(dir, store.Options{ReadOnly: true}); !errors.Is(err, store.ErrForeign) {
			t.Fatalf("read-only Open of an empty bbolt file = %v, want ErrForeign", err)
		}
	})
}

// fillStore writes some records into the store of dir and closes it.
func fillStore(tb testing.TB, dir string) {
	tb.Helper()
	db := MustOpenDir(tb, dir)
	tn := MustPutTenant(tb, db, "acme")
	for i := 0; i < 50; i++ {
		MustPutUser(tb, db, tn.ID, fmt.Sprintf("u%d@acme.example", i))
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

// pageSize reads the page size of a bbolt file from its first meta page.
func pageSize(tb testing.TB, raw []byte) int {
	tb.Helper()
	ps := int(binary.LittleEndian.Uint32(raw[16+8:]))
	if ps < 512 || ps > 1<<16 || len(raw) < 4*ps {
		tb.Fatalf("page size %d of a %d-byte file", ps, len(raw))
	}
	return ps
}

// assertForeignTwice opens the corrupt store of dir twice: each Open must answer
// ErrForeign without a panic, and the first must not leave the file locked.
func assertForeignTwice(tb testing.TB, dir string) {
	tb.Helper()
	for i := 0; i < 2; i++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					tb.Fatalf("Open %d panicked on a corrupt file: %v", i+1, r)
				}
			}()
			db, err := store.Open(dir, store.Options{LockTimeout: 100 * time.Millisecond})
			if err == nil {
				_ = db.Close()
				tb.Fatalf("Open %d of a corrupt file succeeded", i+1)
			}
			if !errors.Is(err, store.ErrForeign) {
				tb.Fatalf("Open %d of a corrupt file = %v, want ErrForeign", i+1, err)
			}
		}()
	}
}

func TestDB_Context(t *testing.T) {
	db := MustOpenDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	fn := func(model.Tx) error { ran = true; return nil }
	if err := db.View(ctx, fn); !errors.Is(err, context.Canceled) {
		t.Fatalf("View with a cancelled context = %v", err)
	}
	if err := db.Update(ctx, fn); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a cancelled context = %v", err)
	}
	if _, err := db.Backup(ctx, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup with a cancelled context = %v", err)
	}
	if ran {
		t.Fatal("fn ran under a cancelled context")
	}
}

func TestDB_Update(t *testing.T) {
	t.Run("Rollback", func(t *testing.T) {
		db := MustOpenDB(t)
		boom := model.Invalid("x", "x is bad")
		err := db.Update(context.Background(), func(tx model.Tx) error {
			if err := tx.PutMeta("k", []byte("v")); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("Update = %v, want fn's error as it is", err)
		}
		MustView(t, db, func(tx model.Tx) error {
			if v, _ := tx.Meta("k"); v != nil {
				t.Fatal("a rolled back write is visible")
			}
			return nil
		})
	})
	t.Run("OnCommit", func(t *testing.T) {
		db := MustOpenDB(t)
		var calls []string
		MustUpdate(t, db, func(tx model.Tx) error {
			tx.OnCommit(func() { calls = append(calls, "committed") })
			if len(calls) != 0 {
				t.Fatal("OnCommit ran before the commit")
			}
			return nil
		})
		_ = db.Update(context.Background(), func(tx model.Tx) error {
			tx.OnCommit(func() { calls = append(calls, "rolled back") })
			return errors.New("fail")
		})
		if len(calls) != 1 || calls[0] != "committed" {
			t.Fatalf("OnCommit calls = %v, want only the committed one", calls)
		}
	})
}

func TestTx_Meta(t *testing.T) {
	db := MustOpenDB(t)
	MustView(t, db, func(tx model.Tx) error {
		v, err := tx.Meta("absent")
		if err != nil || v != nil {
			t.Fatalf("Meta(absent) = %q, %v; want nil", v, err)
		}
		return nil
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutMeta("k", []byte("value")) })
	var kept []byte
	MustView(t, db, func(tx model.Tx) (err error) {
		kept, err = tx.Meta("k")
		return err
	})
	// The value is the caller's to keep after the transaction.
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutMeta("k", []byte("other")) })
	if string(kept) != "value" {
		t.Fatalf("a kept value changed to %q", kept)
	}
	kept[0] = 'X'
	MustView(t, db, func(tx model.Tx) error {
		if v, _ := tx.Meta("k"); string(v) != "other" {
			t.Fatalf("Meta = %q", v)
		}
		return nil
	})
}

func TestTx_Tenants(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := MustOpenDB(t)
		a := MustPutTenant(t, db, "alpha")
		b := MustPutTenant(t, db, "bravo")
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.Tenant(a.ID)
			if err != nil || got.Slug != "alpha" || got.Name != a.Name || got.DispatchThreshold != 0.2 {
				t.Fatalf("Tenant = %+v, %v", got, err)
			}
			got, err = tx.TenantBySlug("bravo")
			if err != nil || got.ID != b.ID {
				t.Fatalf("TenantBySlug = %+v, %v", got, err)
			}
			all, err := tx.Tenants()
			if err != nil || len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID {
				t.Fatalf("Tenants = %+v, %v; want alpha, bravo", all, err)
			}
			return nil
		})
	})
	t.Run("Empty", func(t *testing.T) {
		db := MustOpenDB(t)
		MustView(t, db, func(tx model.Tx) error {
			all, err := tx.Tenants()
			if err != nil || len(all) != 0 {
				t.Fatalf("Tenants = %+v, %v", all, err)
			}
			return nil
		})
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		db := MustOpenDB(t)
		MustPutTenant(t, db, "alpha")
		MustView(t, db, func(tx model.Tx) error {
			_, err := tx.Tenant(model.NewID())
			AssertKind(t, err, model.KindNotFound)
			_, err = tx.Tenant("not-an-id")
			AssertKind(t, err, model.KindNotFound)
			_, err = tx.TenantBySlug("ghost")
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("ErrSlugTaken", func(t *testing.T) {
		db := MustOpenDB(t)
		a := MustPutTenant(t, db, "alpha")
		err := db.Update(context.Background(), func(tx model.Tx) error {
			return tx.PutTenant(&model.Tenant{ID: model.NewID(), Slug: "alpha", Name: "Impostor"})
		})
		AssertKind(t, err, model.KindConflict)
		MustView(t, db, func(tx model.Tx) error {
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
		db := MustOpenDB(t)
		a := MustPutTenant(t, db, "alpha")
		a.Slug = "alpha-2"
		a.Status = engine.TenantSuspended
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutTenant(a) })
		MustView(t, db, func(tx model.Tx) error {
			_, err := tx.TenantBySlug("alpha")
			AssertKind(t, err, model.KindNotFound)
			got, err := tx.TenantBySlug("alpha-2")
			if err != nil || got.ID != a.ID || got.Status != engine.TenantSuspended {
				t.Fatalf("renamed tenant = %+v, %v", got, err)
			}
			return nil
		})
		// The old slug is free for another tenant.
		MustPutTenant(t, db, "alpha")
	})
	t.Run("ErrBadID", func(t *testing.T) {
		db := MustOpenDB(t)
		err := db.Update(context.Background(), func(tx model.Tx) error {
			return tx.PutTenant(&model.Tenant{ID: "nope", Slug: "x"})
		})
		if err == nil {
			t.Fatal("PutTenant accepted a malformed id")
		}
	})
}

func TestTx_Users(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		u := newUser(tn.ID, "alice@acme.example")
		u.PasswordHash = "$argon2id$…"
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutUserAccount(u) })
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.UserAccount(tn.ID, u.ID)
			if err != nil || got.Email != u.Email || got.PasswordHash != u.PasswordHash || got.TokenVersion != 1 {
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
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		other := MustPutTenant(t, db, "other")
		u := MustPutUser(t, db, tn.ID, "alice@acme.example")
		MustView(t, db, func(tx model.Tx) error {
			for _, c := range [][2]string{{tn.ID, model.NewID()}, {tn.ID, "bad"}, {other.ID, u.ID},
				{model.NewID(), u.ID}, {"bad", u.ID}} {
				_, err := tx.UserAccount(c[0], c[1])
				AssertKind(t, err, model.KindNotFound)
			}
			_, err := tx.UserAccountByEmail("bob@acme.example")
			AssertKind(t, err, model.KindNotFound)
			_, _, err = tx.Users(model.NewID(), model.Page{Limit: 10})
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		db := MustOpenDB(t)
		err := db.Update(context.Background(), func(tx model.Tx) error {
			return tx.PutUserAccount(newUser(model.NewID(), "alice@acme.example"))
		})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrEmailTaken", func(t *testing.T) {
		db := MustOpenDB(t)
		a := MustPutTenant(t, db, "alpha")
		b := MustPutTenant(t, db, "bravo")
		first := MustPutUser(t, db, a.ID, "alice@acme.example")
		for _, tid := range []string{a.ID, b.ID} {
			err := db.Update(context.Background(), func(tx model.Tx) error {
				return tx.PutUserAccount(newUser(tid, "alice@acme.example"))
			})
			AssertKind(t, err, model.KindConflict)
		}
		MustView(t, db, func(tx model.Tx) error {
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
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		u := MustPutUser(t, db, tn.ID, "alice@acme.example")
		u.Email = "alice@new.example"
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutUserAccount(u) })
		MustView(t, db, func(tx model.Tx) error {
			_, err := tx.UserAccountByEmail("alice@acme.example")
			AssertKind(t, err, model.KindNotFound)
			got, err := tx.UserAccountByEmail("alice@new.example")
			if err != nil || got.ID != u.ID {
				t.Fatalf("by new email = %+v, %v", got, err)
			}
			return nil
		})
		MustPutUser(t, db, tn.ID, "alice@acme.example")
	})
	t.Run("ErrChangeEmailToTaken", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		MustPutUser(t, db, tn.ID, "alice@acme.example")
		bob := MustPutUser(t, db, tn.ID, "bob@acme.example")
		bob.Email = "alice@acme.example"
		err := db.Update(context.Background(), func(tx model.Tx) error { return tx.PutUserAccount(bob) })
		AssertKind(t, err, model.KindConflict)
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.UserAccountByEmail("bob@acme.example")
			if err != nil || got.ID != bob.ID {
				t.Fatalf("bob lost his email: %+v, %v", got, err)
			}
			return nil
		})
	})
	t.Run("UpdateKeepsEmail", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		u := MustPutUser(t, db, tn.ID, "alice@acme.example")
		u.Name, u.TokenVersion = "Alice", 7
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutUserAccount(u) })
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.UserAccountByEmail("alice@acme.example")
			if err != nil || got.Name != "Alice" || got.TokenVersion != 7 {
				t.Fatalf("updated user = %+v, %v", got, err)
			}
			return nil
		})
	})
}

func TestTx_Users_Pagination(t *testing.T) {
	db := MustOpenDB(t)
	tn := MustPutTenant(t, db, "acme")
	other := MustPutTenant(t, db, "other")
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, MustPutUser(t, db, tn.ID, fmt.Sprintf("u%d@acme.example", i)).ID)
		MustPutUser(t, db, other.ID, fmt.Sprintf("u%d@other.example", i))
	}
	list := func(p model.Page) ([]model.User, string, error) {
		var users []model.User
		var next string
		err := db.View(context.Background(), func(tx model.Tx) (err error) {
			users, next, err = tx.Users(tn.ID, p)
			return err
		})
		return users, next, err
	}
	t.Run("OK", func(t *testing.T) {
		var got []string
		var sizes []int
		cursor := ""
		for page := 0; page < 5; page++ {
			users, next, err := list(model.Page{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(users))
			for _, u := range users {
				if u.TenantID != tn.ID {
					t.Fatalf("another tenant's user listed: %+v", u)
				}
				got = append(got, u.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if fmt.Sprint(sizes) != "[3 3 1]" {
			t.Fatalf("page sizes = %v, want [3 3 1]", sizes)
		}
		for i, id := range got {
			if want := ids[len(ids)-1-i]; id != want {
				t.Fatalf("item %d = %s, want %s (newest first)", i, id, want)
			}
		}
	})
	t.Run("ExactPages", func(t *testing.T) {
		users, next, err := list(model.Page{Limit: 7})
		if err != nil || len(users) != 7 || next != "" {
			t.Fatalf("one page of 7 = %d users, next %q, %v; want no next cursor", len(users), next, err)
		}
		users, next, err = list(model.Page{Limit: 50})
		if err != nil || len(users) != 7 || next != "" {
			t.Fatalf("limit 50 = %d users, next %q, %v", len(users), next, err)
		}
	})
	t.Run("NewUserBetweenPages", func(t *testing.T) {
		// A user created between two pages does not shift the later pages.
		first, next, err := list(model.Page{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		late := MustPutUser(t, db, tn.ID, "late@acme.example")
		second, _, err := list(model.Page{Limit: 3, Cursor: next})
		if err != nil {
			t.Fatal(err)
		}
		if second[0].ID != ids[3] || second[0].ID == first[2].ID || second[0].ID == late.ID {
			t.Fatalf("second page starts at %s, want %s", second[0].ID, ids[3])
		}
	})
	t.Run("CursorOfDeletedPosition", func(t *testing.T) {
		// A cursor is a position, not a record: it works for any key.
		users, _, err := list(model.Page{Limit: 100, Cursor: cursorOf(t, ids[4])})
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 4 || users[0].ID != ids[3] || users[3].ID != ids[0] {
			t.Fatalf("after ids[4]: %d users starting %s", len(users), users[0].ID)
		}
		users, next, err := list(model.Page{Limit: 100, Cursor: cursorOf(t, ids[0])})
		if err != nil || len(users) != 0 || next != "" {
			t.Fatalf("after the oldest: %d users, next %q, %v", len(users), next, err)
		}
		users, _, err = list(model.Page{Limit: 100, Cursor: cursorOf(t, model.NewID())})
		if err != nil || len(users) < 7 {
			t.Fatalf("after a future id: %d users, %v; want all", len(users), err)
		}
	})
	t.Run("ErrMalformedCursor", func(t *testing.T) {
		for _, c := range []string{"!!!", "AAAA", "not a cursor", cursorOf(t, ids[0]) + "AA", cursorOf(t, ids[0]) + "="} {
			_, _, err := list(model.Page{Limit: 3, Cursor: c})
			if e := AssertKind(t, err, model.KindValidation); e.Field != "cursor" {
				t.Fatalf("cursor %q: field = %q, want cursor", c, e.Field)
			}
		}
	})
}

// cursorOf builds the cursor that resumes a list after the record with the given id, the
// way the store encodes it (base64url of the 16 key bytes).
func cursorOf(tb testing.TB, id string) string {
	tb.Helper()
	u, err := uuid.Parse(id)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(u[:])
}

func TestTx_LoginGuard(t *testing.T) {
	db := MustOpenDB(t)
	const email = "alice@acme.example"
	MustView(t, db, func(tx model.Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil || !g.IsZero() {
			t.Fatalf("LoginGuard of a new email = %+v, %v; want zero", g, err)
		}
		return nil
	})
	until := model.TimePtr(time.Date(2026, 6, 9, 10, 26, 12, 345e6, time.UTC))
	MustUpdate(t, db, func(tx model.Tx) error {
		if err := tx.PutLoginGuard(email, model.LoginGuard{Failures: 3}); err != nil {
			return err
		}
		return tx.PutLoginGuard("bob@acme.example", model.LoginGuard{LockedUntil: until})
	})
	MustView(t, db, func(tx model.Tx) error {
		if g, _ := tx.LoginGuard(email); g.Failures != 3 || g.LockedUntil != nil {
			t.Fatalf("guard = %+v", g)
		}
		if g, _ := tx.LoginGuard("bob@acme.example"); g.LockedUntil == nil || !g.LockedUntil.Equal(until.Time) {
			t.Fatalf("guard = %+v", g)
		}
		return nil
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutLoginGuard(email, model.LoginGuard{}) })
	MustView(t, db, func(tx model.Tx) error {
		if g, _ := tx.LoginGuard(email); !g.IsZero() {
			t.Fatalf("guard after a zero put = %+v", g)
		}
		return nil
	})
	// Deleting an absent guard is fine.
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutLoginGuard("ghost@acme.example", model.LoginGuard{}) })
	rawView(t, db, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("login_guards"))
		if v := b.Get([]byte(email)); v != nil {
			t.Fatalf("a zero guard left a record: %s", v)
		}
		if v := b.Get([]byte("bob@acme.example")); v == nil {
			t.Fatal("the other guard is gone")
		}
		if n := b.Stats().KeyN; n != 1 {
			t.Fatalf("%d guard records, want 1", n)
		}
		return nil
	})
}

func newKey(tenantID, name string) *model.APIKeyRecord {
	key := engine.NewAPIKey()
	return &model.APIKeyRecord{APIKey: model.APIKey{ID: model.NewID(), TenantID: tenantID, Name: name,
		Prefix: key[:12], Scopes: []string{"events:read"}, CreatedAt: model.At(time.Now())},
		Hash: model.HashToken(key)}
}

func TestTx_APIKeys(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		other := MustPutTenant(t, db, "other")
		k1, k2, k3 := newKey(tn.ID, "one"), newKey(tn.ID, "two"), newKey(other.ID, "three")
		MustUpdate(t, db, func(tx model.Tx) error {
			for _, k := range []*model.APIKeyRecord{k1, k2, k3} {
				if err := tx.PutAPIKey(k); err != nil {
					return err
				}
			}
			return nil
		})
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.APIKey(tn.ID, k1.ID)
			if err != nil || got.Name != "one" || got.Hash != k1.Hash || got.Prefix != k1.Prefix {
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
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("Update", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		k := newKey(tn.ID, "one")
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutAPIKey(k) })
		k.LastUsedAt = model.TimePtr(time.Now())
		k.ExpiresAt = model.TimePtr(time.Now().Add(time.Hour))
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutAPIKey(k) })
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.APIKeyByHash(k.Hash)
			if err != nil || got.LastUsedAt == nil || got.ExpiresAt == nil {
				t.Fatalf("updated key = %+v, %v", got, err)
			}
			if keys, _ := tx.APIKeys(tn.ID); len(keys) != 1 {
				t.Fatalf("%d keys after an update, want 1", len(keys))
			}
			return nil
		})
	})
	t.Run("Delete", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		k1, k2 := newKey(tn.ID, "one"), newKey(tn.ID, "two")
		MustUpdate(t, db, func(tx model.Tx) error {
			if err := tx.PutAPIKey(k1); err != nil {
				return err
			}
			return tx.PutAPIKey(k2)
		})
		MustUpdate(t, db, func(tx model.Tx) error { return tx.DeleteAPIKey(tn.ID, k1.ID) })
		MustView(t, db, func(tx model.Tx) error {
			_, err := tx.APIKey(tn.ID, k1.ID)
			AssertKind(t, err, model.KindNotFound)
			_, err = tx.APIKeyByHash(k1.Hash)
			AssertKind(t, err, model.KindNotFound)
			keys, err := tx.APIKeys(tn.ID)
			if err != nil || len(keys) != 1 || keys[0].ID != k2.ID {
				t.Fatalf("APIKeys after delete = %+v, %v", keys, err)
			}
			return nil
		})
	})
	t.Run("ErrDeleteNotFound", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		other := MustPutTenant(t, db, "other")
		k := newKey(tn.ID, "one")
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutAPIKey(k) })
		for _, c := range [][2]string{{tn.ID, model.NewID()}, {tn.ID, "bad"}, {other.ID, k.ID}, {model.NewID(), k.ID}} {
			err := db.Update(context.Background(), func(tx model.Tx) error { return tx.DeleteAPIKey(c[0], c[1]) })
			AssertKind(t, err, model.KindNotFound)
		}
		MustView(t, db, func(tx model.Tx) error {
			_, err := tx.APIKeyByHash(k.Hash)
			return err
		})
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		db := MustOpenDB(t)
		err := db.Update(context.Background(), func(tx model.Tx) error {
			return tx.PutAPIKey(newKey(model.NewID(), "one"))
		})
		AssertKind(t, err, model.KindNotFound)
		err = db.View(context.Background(), func(tx model.Tx) error {
			_, err := tx.APIKeys(model.NewID())
			return err
		})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("Empty", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		MustView(t, db, func(tx model.Tx) error {
			keys, err := tx.APIKeys(tn.ID)
			if err != nil || len(keys) != 0 {
				t.Fatalf("APIKeys = %+v, %v", keys, err)
			}
			_, err = tx.APIKeyByHash(model.HashToken("nothing"))
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})
}

func TestTx_Idempotency(t *testing.T) {
	db := MustOpenDB(t)
	a := MustPutTenant(t, db, "alpha")
	b := MustPutTenant(t, db, "bravo")
	rec := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"id":"x"}`), RequestID: "req-1"},
		Fingerprint: "fp", CreatedAt: model.At(time.Now())}
	MustView(t, db, func(tx model.Tx) error {
		got, err := tx.Idempotency(a.ID, "POST /v1/zones\nk")
		if err != nil || got != nil {
			t.Fatalf("Idempotency of a new key = %+v, %v; want nil", got, err)
		}
		return nil
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutIdempotency(a.ID, "POST /v1/zones\nk", rec) })
	MustView(t, db, func(tx model.Tx) error {
		got, err := tx.Idempotency(a.ID, "POST /v1/zones\nk")
		if err != nil || got == nil || got.Status != 201 || string(got.Body) != `{"id":"x"}` ||
			got.RequestID != "req-1" || got.Fingerprint != "fp" {
			t.Fatalf("Idempotency = %+v, %v", got, err)
		}
		if got, _ := tx.Idempotency(b.ID, "POST /v1/zones\nk"); got != nil {
			t.Fatal("a key leaked to another tenant")
		}
		_, err = tx.Idempotency(model.NewID(), "k")
		AssertKind(t, err, model.KindNotFound)
		return nil
	})
}

func TestTx_Zones(t *testing.T) {
	db := MustOpenDB(t)
	a := MustPutTenant(t, db, "alpha")
	b := MustPutTenant(t, db, "bravo")
	zone := func(code string) *model.Zone {
		return &model.Zone{ID: model.NewID(), Code: code, Name: "Zone " + code,
			Boundary: model.Polygon{Type: "Polygon", Coordinates: [][][]float64{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}}
	}
	MustUpdate(t, db, func(tx model.Tx) error {
		for _, c := range []string{"north", "east", "south"} {
			if err := tx.PutZone(a.ID, zone(c)); err != nil {
				return err
			}
		}
		return tx.PutZone(b.ID, zone("west"))
	})
	MustView(t, db, func(tx model.Tx) error {
		z, err := tx.Zone(a.ID, "north")
		if err != nil || z.Name != "Zone north" || len(z.Boundary.Coordinates[0]) != 4 {
			t.Fatalf("Zone = %+v, %v", z, err)
		}
		zones, err := tx.Zones(a.ID)
		if err != nil || len(zones) != 3 || zones[0].Code != "east" || zones[1].Code != "north" || zones[2].Code != "south" {
			t.Fatalf("Zones = %+v, %v; want ordered by code", zones, err)
		}
		_, err = tx.Zone(a.ID, "west")
		AssertKind(t, err, model.KindNotFound)
		_, err = tx.Zone(model.NewID(), "north")
		AssertKind(t, err, model.KindNotFound)
		return nil
	})
	t.Run("Empty", func(t *testing.T) {
		c := MustPutTenant(t, db, "charlie")
		MustView(t, db, func(tx model.Tx) error {
			zones, err := tx.Zones(c.ID)
			if err != nil || zones == nil || len(zones) != 0 {
				t.Fatalf("Zones = %#v, %v; want an empty list", zones, err)
			}
			return nil
		})
	})
}

func TestTx_Teams(t *testing.T) {
	db := MustOpenDB(t)
	a := MustPutTenant(t, db, "alpha")
	b := MustPutTenant(t, db, "bravo")
	var ids []string
	MustUpdate(t, db, func(tx model.Tx) error {
		for _, name := range []string{"one", "two", "three"} {
			tm := &model.Team{ID: model.NewID(), Name: name, Status: engine.TeamAvailable,
				Verticals: []string{"gov"}, Equipment: []string{}, Members: []model.Member{{ID: model.NewID(), Name: "M"}}}
			ids = append(ids, tm.ID)
			if err := tx.PutTeam(a.ID, tm); err != nil {
				return err
			}
		}
		return nil
	})
	MustView(t, db, func(tx model.Tx) error {
		tm, err := tx.Team(a.ID, ids[1])
		if err != nil || tm.Name != "two" || len(tm.Members) != 1 {
			t.Fatalf("Team = %+v, %v", tm, err)
		}
		teams, err := tx.Teams(a.ID)
		if err != nil || len(teams) != 3 || teams[0].ID != ids[0] || teams[2].ID != ids[2] {
			t.Fatalf("Teams = %+v, %v; want oldest first", teams, err)
		}
		for _, c := range [][2]string{{b.ID, ids[0]}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), ids[0]}} {
			_, err := tx.Team(c[0], c[1])
			AssertKind(t, err, model.KindNotFound)
		}
		if teams, _ := tx.Teams(b.ID); teams == nil || len(teams) != 0 {
			t.Fatalf("another tenant's teams = %#v, want an empty list", teams)
		}
		return nil
	})
	err := db.Update(context.Background(), func(tx model.Tx) error {
		return tx.PutTeam(a.ID, &model.Team{ID: "bad", Name: "x"})
	})
	if err == nil {
		t.Fatal("PutTeam accepted a malformed id")
	}
}

func TestDB_Backup(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		u := MustPutUser(t, db, tn.ID, "alice@acme.example")
		k := newKey(tn.ID, "one")
		MustUpdate(t, db, func(tx model.Tx) error { return tx.PutAPIKey(k) })

		out := filepath.Join(t.TempDir(), "backup.db")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		n, err := db.Backup(context.Background(), f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(out); fi.Size() != n || n == 0 {
			t.Fatalf("Backup wrote %d bytes, the file has %d", n, fi.Size())
		}
		// The source keeps working, and later writes are not in the snapshot.
		MustPutUser(t, db, tn.ID, "late@acme.example")

		restored, err := store.OpenFile(out, store.Options{})
		if err != nil {
			t.Fatalf("opening the backup: %v", err)
		}
		defer restored.Close()
		MustView(t, restored, func(tx model.Tx) error {
			got, err := tx.TenantBySlug("acme")
			if err != nil || got.ID != tn.ID {
				t.Fatalf("tenant in the backup = %+v, %v", got, err)
			}
			acct, err := tx.UserAccountByEmail("alice@acme.example")
			if err != nil || acct.ID != u.ID {
				t.Fatalf("user in the backup = %+v, %v", acct, err)
			}
			if _, err := tx.APIKeyByHash(k.Hash); err != nil {
				t.Fatalf("key in the backup: %v", err)
			}
			_, err = tx.UserAccountByEmail("late@acme.example")
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("WhileWriting", func(t *testing.T) {
		db := MustOpenDB(t)
		tn := MustPutTenant(t, db, "acme")
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 20; i++ {
				u := newUser(tn.ID, fmt.Sprintf("u%d@acme.example", i))
				_ = db.Update(context.Background(), func(tx model.Tx) error { return tx.PutUserAccount(u) })
			}
		}()
		var buf bytes.Buffer
		if _, err := db.Backup(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		<-done
		out := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		restored, err := store.OpenFile(out, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("opening a backup taken during writes: %v", err)
		}
		defer restored.Close()
		MustView(t, restored, func(tx model.Tx) error {
			_, err := tx.TenantBySlug("acme")
			return err
		})
	})
}

func TestTx_AuthTokens(t *testing.T) {
	db := MustOpenDB(t)
	hash := model.HashToken("token")
	rec := &model.AuthToken{Kind: engine.TokenReset, TenantID: model.NewID(), UserID: model.NewID(),
		ExpiresAt: model.At(time.Now().Add(time.Hour))}
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutAuthToken(hash, rec) })
	MustView(t, db, func(tx model.Tx) error {
		got, err := tx.AuthToken(hash)
		if err != nil || *got != *rec {
			t.Fatalf("AuthToken = %+v, %v; want %+v", got, err, rec)
		}
		_, err = tx.AuthToken(model.HashToken("other"))
		AssertKind(t, err, model.KindNotFound)
		return nil
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.DeleteAuthToken(hash) })
	MustView(t, db, func(tx model.Tx) error {
		_, err := tx.AuthToken(hash)
		AssertKind(t, err, model.KindNotFound)
		return nil
	})
}
