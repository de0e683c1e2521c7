package e2e

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// downUpReceiver is a TLS webhook receiver that answers 503 until it is switched up, and records
// the webhook-ids of the event.created messages per event.
type downUpReceiver struct {
	up    atomic.Bool
	mu    sync.Mutex
	ids   map[string]map[string]bool // event id → webhook-ids
	calls int
}

func (h *downUpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Event   string `json:"event"`
		Payload struct {
			EventID string `json:"event_id"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(body, &msg)
	h.mu.Lock()
	h.calls++
	if msg.Event == "event.created" {
		if h.ids[msg.Payload.EventID] == nil {
			h.ids[msg.Payload.EventID] = map[string]bool{}
		}
		h.ids[msg.Payload.EventID][r.Header.Get("webhook-id")] = true
	}
	h.mu.Unlock()
	if !h.up.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// TestDelivery_KillNine: events accepted while their receiver is down survive a kill -9
// of the node and are delivered after restart, each message with one webhook-id.
//
// It runs on bbolt only: it is the crash of the bbolt file (its group commit and the
// outbox it reopens). On PostgreSQL a killed process leaves its records in the database
// and its claimed messages to the other processes once their lease ends; that is the
// kill -9 test of the central tier, with two processes.
func TestDelivery_KillNine(t *testing.T) {
	bin := binary(t)
	hooks := &downUpReceiver{ids: map[string]map[string]bool{}}
	rcv := httptest.NewTLSServer(hooks)
	defer rcv.Close()
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile) // inherited by the node: it trusts the receiver
	data := t.TempDir()
	schedule := strings.TrimSuffix(strings.Repeat("100ms,", 100), ",")
	flags := []string{"--allow-loopback-webhooks", "--webhook-retry-schedule", schedule}

	var created map[string]any
	if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--json", "--name", "Acme",
		"--slug", "acme", "--email", "ops@acme.example", "--country", "FR"), &created); err != nil {
		t.Fatal(err)
	}
	key := []string{"x-svc-api-key", created["api_key"].(string)}

	s := serve(t, bin, data, false, flags...)
	status, _, body := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": rcv.URL + "/hook"}, key...)
	expect(t, "create webhook", status, 201, body)
	var ids []string
	for i := range 20 {
		status, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "ALARM", "priority": "low",
			"vertical": "gov", "idempotency_key": "kill-" + string(rune('a'+i))}, key...)
		expect(t, "post event", status, 201, body)
		ids = append(ids, body["event_id"].(string))
	}
	// Wait until the receiver has refused at least one attempt of every event, then kill -9.
	pollUntil(t, s, "an attempt of every event", func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		return len(hooks.ids) == len(ids)
	})
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.done

	hooks.up.Store(true)
	s = serve(t, bin, data, false, flags...)
	for _, id := range ids {
		pollUntil(t, s, "event "+id+" delivered", func() bool {
			_, _, ev := s.call(t, "GET", "/v1/events/"+id, nil, key...)
			return ev["status"] == "delivered"
		})
	}
	hooks.mu.Lock()
	for _, id := range ids {
		if n := len(hooks.ids[id]); n != 1 {
			t.Errorf("event %s came with %d webhook-ids, want 1", id, n)
		}
	}
	hooks.mu.Unlock()
	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// pollUntil polls cond every 50 ms for at most 15 s.
func pollUntil(t *testing.T, s *served, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, s.logs)
		}
		<-tick.C
	}
}
