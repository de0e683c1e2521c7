package cli

import (
	"bytes"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

func TestBackupRestore(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	snap := filepath.Join(t.TempDir(), "snap.db")

	res := runJSON[admin.BackupResult](t, a, "", "backup", "--data", data, "--out", snap)
	fi, err := os.Stat(snap)
	if err != nil || res.Path != snap || res.Bytes != fi.Size() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup: %+v %v %v", res, fi, err)
	}

	createTenant(t, a, data, "later")
	if list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data); list.Count != 2 {
		t.Fatalf("before restore: %+v", list)
	}
	rr := runJSON[restoreResult](t, a, "", "restore", "--data", data, "--in", snap)
	if rr.Path != store.Path(data) || rr.Bytes != fi.Size() {
		t.Fatalf("restore: %+v", rr)
	}
	list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data)
	if list.Count != 1 || list.Data[0].Slug != "acme" {
		t.Fatalf("after restore: %+v", list)
	}
	if fi, _ := os.Stat(store.Path(data)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored database mode %v", fi.Mode())
	}

	t.Run("IntoEmptyDir", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "new")
		mustRun(t, a, "", "restore", "--data", fresh, "--in", snap)
		if list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", fresh); list.Count != 1 {
			t.Fatalf("restored into a new dir: %+v", list)
		}
	})
	t.Run("ErrRelativeOutIsResolved", func(t *testing.T) {
		t.Chdir(t.TempDir())
		res := runJSON[admin.BackupResult](t, a, "", "backup", "--data", data, "--out", "rel.db")
		if !filepath.IsAbs(res.Path) || filepath.Base(res.Path) != "rel.db" {
			t.Fatalf("backup path %q", res.Path)
		}
	})
	t.Run("ErrOutRequired", func(t *testing.T) {
		if e := runJSONError(t, a, "", "backup", "--data", data); e.Field != "out" {
			t.Fatalf("error: %+v", e)
		}
	})
}

func TestRestoreRefusesWhileHeld(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	snap := filepath.Join(t.TempDir(), "snap.db")
	mustRun(t, a, "", "backup", "--data", data, "--out", snap)
	db, err := store.Open(data, store.Options{}) // a server without a socket holds the directory
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before, _ := os.ReadFile(store.Path(data))
	e := runJSONError(t, a, "", "restore", "--data", data, "--in", snap)
	if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "held by another process") {
		t.Fatalf("error: %+v", e)
	}
	if after, _ := os.ReadFile(store.Path(data)); !bytes.Equal(before, after) {
		t.Fatal("the refused restore changed the database")
	}
}

func TestRestoreRejectsForeignFile(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"garbage": bytes.Repeat([]byte("not bolt "), 2000),
		"empty":   {},
	} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, name)
			if err := os.WriteFile(in, content, 0o600); err != nil {
				t.Fatal(err)
			}
			e := runJSONError(t, a, "", "restore", "--data", data, "--in", in)
			if e.Error != string(model.KindValidation) || !strings.Contains(e.Message, "not a fieldrelay snapshot") {
				t.Fatalf("error: %+v", e)
			}
		})
	}
	t.Run("Missing", func(t *testing.T) {
		e := runJSONError(t, a, "", "restore", "--data", data, "--in", filepath.Join(dir, "nope"))
		if e.Field != "in" || !strings.Contains(e.Message, "does not exist") {
			t.Fatalf("error: %+v", e)
		}
	})
	if list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data); list.Count != 1 {
		t.Fatalf("the data survived: %+v", list)
	}
}

func TestCorruptDataDir(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	if err := os.WriteFile(store.Path(data), bytes.Repeat([]byte("not bolt "), 2000), 0o600); err != nil {
		t.Fatal(err)
	}
	e := runJSONError(t, a, "", "tenant", "list", "--data", data)
	if !strings.Contains(e.Message, "is not a fieldrelay database") {
		t.Fatalf("error: %+v", e)
	}
	r := run(t, a, "", "serve", "--data", data, "--plain-http", "--addr", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, "is not a fieldrelay database") {
		t.Fatalf("serve on a corrupt dir: %d %q", r.code, r.stderr)
	}
}
