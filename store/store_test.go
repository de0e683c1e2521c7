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
			if v := string(meta.Get([]byte("schema_version"))); v != "5" {
				t.Fatalf("schema_version = %q, want 5", v)
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

// TestTx_Users_Cursor pins what the conformance suite leaves to each store: the bbolt
// cursor is the base64url of a key, a position rather than a record, and a cursor of the
// wrong length is malformed.
func TestTx_Users_Cursor(t *testing.T) {
	db := MustOpenDB(t)
	tn := MustPutTenant(t, db, "acme")
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, MustPutUser(t, db, tn.ID, fmt.Sprintf("u%d@acme.example", i)).ID)
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
		for _, c := range []string{"AAAA", cursorOf(t, ids[0]) + "AA", cursorOf(t, ids[0]) + "="} {
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

// TestTx_LoginGuard_Raw: a zero guard leaves no record in the file (the conformance suite
// pins what a guard reads as).
func TestTx_LoginGuard_Raw(t *testing.T) {
	db := MustOpenDB(t)
	const email = "alice@acme.example"
	MustUpdate(t, db, func(tx model.Tx) error {
		if err := tx.PutLoginGuard(email, model.LoginGuard{Failures: 3}); err != nil {
			return err
		}
		return tx.PutLoginGuard("bob@acme.example", model.LoginGuard{Failures: 1})
	})
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutLoginGuard(email, model.LoginGuard{}) })
	rawView(t, db, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("login_guards"))
		if v := b.Get([]byte(email)); v != nil {
			t.Fatalf("a zero guard left a record: %s", v)
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
