package cli

import (
	"context"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store"
)

// fakeServer holds a data directory as a server does and answers on its admin socket with
// the op registry, recording the operations it ran.
type fakeServer struct {
	eng *engine.Engine
	mu  sync.Mutex
	ops []string
}

func startFakeServer(t *testing.T, data string) *fakeServer {
	t.Helper()
	_, eng := openEngine(t, data)
	ln, err := server.ListenAdmin(adminSocket(data))
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{eng: eng}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.ServeAdmin(ctx, ln, eng, slog.New(opRecorder{s}))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s
}

func (s *fakeServer) ran() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

func TestAdminThroughSocket(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme") // no server yet: on the store
	srv := startFakeServer(t, data)

	created := createTenant(t, a, data, "beta")
	user := runJSON[admin.UserResult](t, a, testPassword+"\n", "user", "create", "--data", data, "--tenant", "beta",
		"--email", "ana@beta.example", "--name", "Ana", "--role", "company_admin", "--password-stdin")
	list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data)
	if list.Count != 2 {
		t.Fatalf("list through the socket: %+v", list)
	}
	want := []string{admin.OpTenantCreate, admin.OpUserCreate, admin.OpTenantList}
	if got := srv.ran(); !slices.Equal(got, want) {
		t.Fatalf("the server ran %v, want %v", got, want)
	}
	// The server's engine sees what the commands did.
	tn, err := srv.eng.AdminTenant(context.Background(), "beta")
	if err != nil || tn.ID != created.Tenant.ID || user.User.TenantID != tn.ID {
		t.Fatalf("server side: %+v %v", tn, err)
	}

	t.Run("ErrSameAsLocal", func(t *testing.T) {
		e := runJSONError(t, a, "", "tenant", "create", "--data", data, "--name", "Again", "--slug", "beta",
			"--email", "x@beta.example", "--country", "FR")
		if e.Error != string(model.KindConflict) || e.Message != `slug "beta" is taken` {
			t.Fatalf("error through the socket: %+v", e)
		}
		v := runJSONError(t, a, "", "tenant", "create", "--data", data, "--slug", "x", "--email", "x@x.example", "--country", "FR")
		if v.Error != string(model.KindValidation) || v.Field != "name" {
			t.Fatalf("validation error through the socket: %+v", v)
		}
	})
	t.Run("Backup", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "snap.db")
		res := runJSON[admin.BackupResult](t, a, "", "backup", "--data", data, "--out", out)
		if res.Path != out || srv.ran()[len(srv.ran())-1] != admin.OpBackup {
			t.Fatalf("backup through the socket: %+v %v", res, srv.ran())
		}
		db, err := store.OpenFile(out, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("the snapshot does not open: %v", err)
		}
		_ = db.Close()
	})
	t.Run("RestoreRefused", func(t *testing.T) {
		snap := filepath.Join(t.TempDir(), "snap.db")
		mustRun(t, a, "", "backup", "--data", data, "--out", snap)
		e := runJSONError(t, a, "", "restore", "--data", data, "--in", snap)
		if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "server is running") {
			t.Fatalf("error: %+v", e)
		}
	})
}

func TestAdminHeldWithoutSocket(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	openEngine(t, data) // holds the lock, answers nothing
	// A stale socket file (a server that died) must not confuse the command.
	if err := os.WriteFile(adminSocket(data), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := runJSONError(t, a, "", "tenant", "list", "--data", data)
	if e.Error != string(model.KindUnavailable) ||
		e.Message != "the data directory "+data+" is held by another process whose admin socket does not answer" {
		t.Fatalf("error: %+v", e)
	}
}

func TestRunAdminOpUnknown(t *testing.T) {
	_, eng := openEngine(t, t.TempDir())
	if _, err := admin.Run(context.Background(), eng, "nope", nil); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("unknown op: %v", err)
	}
	if _, err := admin.Run(context.Background(), eng, admin.OpTenantShow, json.RawMessage(`{"slug": 3}`)); !model.IsKind(err, model.KindInvalidJSON) {
		t.Fatalf("bad args: %v", err)
	}
	if _, err := admin.Run(context.Background(), eng, admin.OpBackup, json.RawMessage(`{"path": "relative.db"}`)); !model.IsKind(err, model.KindValidation) {
		t.Fatalf("relative backup path: %v", err)
	}
}

// opRecorder is a log handler that records the operations the admin socket ran.
type opRecorder struct{ s *fakeServer }

func (opRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h opRecorder) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "op" {
			h.s.mu.Lock()
			h.s.ops = append(h.s.ops, a.Value.String())
			h.s.mu.Unlock()
		}
		return true
	})
	return nil
}
func (h opRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h opRecorder) WithGroup(string) slog.Handler      { return h }
