package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// startAdmin serves handle on a socket in a temp dir until the test ends.
func startAdmin(t *testing.T, handle adminHandler) (path string, stop func() error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), AdminSocketName)
	ln, err := ListenAdmin(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAdmin(ctx, ln, handle) }()
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return path, stop
}

func TestAdminSocket(t *testing.T) {
	type echo struct {
		Op   string          `json:"op"`
		Args json.RawMessage `json:"args"`
	}
	path, stop := startAdmin(t, func(_ context.Context, op string, args json.RawMessage) (any, error) {
		switch op {
		case "fail":
			return nil, model.Invalid("slug", "slug is required")
		case "internal":
			return nil, model.Internal(errors.New("disk on fire"))
		case "plain":
			return nil, errors.New("plain failure")
		case "panic":
			panic("boom")
		}
		return echo{op, args}, nil
	})
	ctx := context.Background()

	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v", fi, err)
	}

	t.Run("OK", func(t *testing.T) {
		var got echo
		if err := CallAdmin(ctx, path, "tenant.show", map[string]string{"slug": "acme"}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Op != "tenant.show" || string(got.Args) != `{"slug":"acme"}` {
			t.Fatalf("got %+v", got)
		}
	})
	for op, want := range map[string]model.Error{
		"fail":     {Kind: model.KindValidation, Field: "slug", Msg: "slug is required"},
		"internal": {Kind: model.KindInternal, Msg: "internal error: disk on fire"},
		"plain":    {Kind: model.KindInternal, Msg: "plain failure"},
		"panic":    {Kind: model.KindInternal, Msg: `internal error: admin operation "panic" panicked: boom`},
	} {
		t.Run("Err_"+op, func(t *testing.T) {
			err := CallAdmin(ctx, path, op, nil, nil)
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != want.Kind || e.Field != want.Field || e.Msg != want.Msg {
				t.Fatalf("got %#v, want %+v", err, want)
			}
		})
	}
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = conn.Write([]byte("not json\n"))
		var resp AdminResponse
		if err := json.NewDecoder(conn).Decode(&resp); err != nil || resp.Error == nil || resp.Error.Kind != model.KindInvalidJSON {
			t.Fatalf("got %+v %v", resp, err)
		}
	})

	if err := stop(); err != nil {
		t.Fatalf("ServeAdmin: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file outlived ServeAdmin: %v", err)
	}
	if err := CallAdmin(ctx, path, "x", nil, nil); !errors.Is(err, ErrAdminUnavailable) {
		t.Fatalf("call after stop: %v", err)
	}
}

func TestServeAdminFinishesOperationsUnderWay(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	path, stop := startAdmin(t, func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		close(started)
		<-release
		return "done", ctx.Err() // shutdown must not cancel an operation under way
	})
	answer := make(chan error, 1)
	var got string
	go func() { answer <- CallAdmin(context.Background(), path, "slow", nil, &got) }()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-stopped:
		t.Fatal("ServeAdmin returned while an operation was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-answer; err != nil || got != "done" {
		t.Fatalf("the operation under way: %q %v", got, err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestListenAdmin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, AdminSocketName)

	t.Run("ReplacesStaleSocket", func(t *testing.T) {
		old, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		old.(*net.UnixListener).SetUnlinkOnClose(false)
		old.Close() // a dead server's socket file stays behind
		ln, err := ListenAdmin(path)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("left behind: %v", entries)
		}
	})
	t.Run("ErrNotASocket", func(t *testing.T) {
		if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ListenAdmin(path); err == nil {
			t.Fatal("a regular file was replaced by the socket")
		}
		if b, _ := os.ReadFile(path); string(b) != "keep me" {
			t.Fatal("the file changed")
		}
	})
}

func TestCallAdminNoSocket(t *testing.T) {
	err := CallAdmin(context.Background(), filepath.Join(t.TempDir(), AdminSocketName), "x", nil, nil)
	if !errors.Is(err, ErrAdminUnavailable) {
		t.Fatalf("got %v", err)
	}
}
