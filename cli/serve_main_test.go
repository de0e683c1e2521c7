package cli

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// Main is driven here as a test drives a node: a Config, Run, requests, Close; no flags.

func TestMainRunClose(t *testing.T) {
	data := t.TempDir()
	out, logs := &syncBuffer{}, &syncBuffer{}
	// Log lines held for a minute: Close writes them.
	m := &Main{Config: ServeConfig{DataDir: data, Addr: "127.0.0.1:0", PlainHTTP: true, LogFlush: time.Minute},
		EngineOptions: engine.Options{Password: cheapPasswords}, Stdout: out, Stderr: logs}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if !strings.HasPrefix(m.URL, "http://127.0.0.1:") || !strings.Contains(out.String(), "listening on "+m.URL+" (data "+data+")\n") {
		t.Fatalf("URL %q, banner %q", m.URL, out.String())
	}
	if m.DB == nil || m.Engine == nil {
		t.Fatal("Run did not set DB and Engine")
	}
	res, err := http.Get(m.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", res.StatusCode)
	}

	if strings.Contains(logs.String(), `"path":"/healthz"`) {
		t.Fatalf("the request's log line was written before the interval: %s", logs)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"path":"/healthz"`) {
		t.Fatalf("Close did not write the log lines held: %q", logs)
	}
	// Closed: the port refuses, and the store opens again at once (its lock is free).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if res, err := client.Get(m.URL + "/healthz"); err == nil {
		_ = res.Body.Close()
		t.Fatalf("GET /healthz after Close: %d", res.StatusCode)
	}
	db, err := store.Open(data, store.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the store is still held after Close: %v", err)
	}
	_ = db.Close()
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestMainRunFailureClosesWhatItOpened(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := t.TempDir()
	m := &Main{Config: ServeConfig{DataDir: data, Addr: ln.Addr().String(), PlainHTTP: true},
		EngineOptions: engine.Options{Password: cheapPasswords}}
	err = m.Run(context.Background())
	if model.ErrorKind(err) != model.KindUnavailable || !strings.Contains(err.Error(), "cannot listen") {
		t.Fatalf("Run on a port in use: %v", err)
	}
	if m.DB != nil {
		t.Error("DB still set after a failed Run")
	}
	db, err := store.Open(data, store.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the store is still held after a failed Run: %v", err)
	}
	_ = db.Close()
}
