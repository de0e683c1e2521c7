package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// The outbox of the central tier, through the real binary: two processes on one
// PostgreSQL database deliver every webhook message once, and a process killed with
// SIGKILL mid-call loses nothing: the other takes its messages over when their leases end,
// with the same webhook-ids (docs/decisions/0106-shared-outbox.md).

// hookSeen is one request an outboxReceiver saw.
type hookSeen struct {
	webhookID, eventID string
	at                 time.Time
	answered           bool // false: held, and its caller went away
}

// outboxReceiver records the event.created messages it receives. While holding, it keeps
// each request open until release or until its caller goes away.
type outboxReceiver struct {
	mu   sync.Mutex
	seen []hookSeen
	hold chan struct{} // non-nil while holding; closed by release
	held atomic.Int64  // requests held so far
	gone atomic.Int64  // held requests whose caller went away
}

func (h *outboxReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m hookMsg
	_ = json.Unmarshal(body, &m)
	s := hookSeen{webhookID: r.Header.Get(outbound.HeaderWebhookID), eventID: m.Payload.EventID, at: time.Now()}
	h.mu.Lock()
	hold := h.hold
	h.mu.Unlock()
	if hold != nil {
		h.held.Add(1)
		select {
		case <-hold:
		case <-r.Context().Done(): // the caller is gone: killed mid-call
			h.record(s)
			h.gone.Add(1)
			return
		}
	}
	s.answered = true
	h.record(s)
	w.WriteHeader(http.StatusOK)
}

func (h *outboxReceiver) record(s hookSeen) {
	h.mu.Lock()
	h.seen = append(h.seen, s)
	h.mu.Unlock()
}

func (h *outboxReceiver) startHolding() {
	h.mu.Lock()
	h.hold = make(chan struct{})
	h.mu.Unlock()
}

func (h *outboxReceiver) release() {
	h.mu.Lock()
	close(h.hold)
	h.hold = nil
	h.mu.Unlock()
}

// answered returns the answered requests by event id.
func (h *outboxReceiver) answered() map[string][]hookSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]hookSeen{}
	for _, s := range h.seen {
		if s.answered {
			out[s.eventID] = append(out[s.eventID], s)
		}
	}
	return out
}

// postEventAs posts one event with an API key and returns its id; safe from any goroutine.
func postEventAs(s *served, key, idem string) (string, error) {
	a := request(context.Background(), s.client, "POST", s.base+"/v1/events", map[string]any{"type": "FIRE",
		"priority": "high", "vertical": "emergency", "idempotency_key": idem}, "x-svc-api-key", key)
	if a.err != nil || a.status != http.StatusCreated {
		return "", fmt.Errorf("POST /v1/events: %d %v (%v)", a.status, a.body, a.err)
	}
	id, _ := a.body["event_id"].(string)
	return id, nil
}

func TestCentral_OutboxOnceAndTakenOverAfterKill(t *testing.T) {
	const (
		events = 2000
		lease  = 6 * time.Second
	)
	bin := binary(t)
	rcv := &outboxReceiver{}
	srv := httptest.NewTLSServer(rcv)
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile) // inherited by the processes: they trust the receiver

	c := serveCentral(t, bin, 2, "--allow-loopback-webhooks", "--outbox-lease", lease.String())
	a, b := c.nodes[0], c.nodes[1]
	// A tenant of the plan without a rate limit: 2,000 events in a few seconds.
	var created struct {
		APIKey string `json:"api_key"`
	}
	out := mustRun(t, bin, "", "tenant", "create", "--database", c.url, "--name", "Central Ops", "--slug", "central-ops",
		"--email", "ops@central.example", "--country", "fr", "--plan", engine.PlanMissionCritical,
		"--verticals", "emergency", "--json")
	if err := json.Unmarshal(out, &created); err != nil || created.APIKey == "" {
		t.Fatalf("tenant create: %v %s", err, out)
	}
	key := []string{"x-svc-api-key", created.APIKey}
	st, _, wh := a.call(t, "POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hook",
		"events": []string{engine.HookEventCreated}}, key...)
	expect(t, "POST /v1/webhooks", st, 201, wh)

	// 2,000 events posted alternately to both processes, 8 at a time: each message is
	// delivered, once.
	start := time.Now()
	ids := make([]string, events)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < events; i += 8 {
				node := []*demoNode{a, b}[i%2]
				id, err := postEventAs(node.served, created.APIKey, fmt.Sprintf("outbox-%d", i))
				if err != nil {
					errs <- err
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\nlogs of a:\n%s\nlogs of b:\n%s", err, a.logs, b.logs)
	}
	posted := time.Since(start)
	waitFor(t, b.served, "2,000 messages delivered", 40*time.Second, func() bool {
		return len(rcv.answered()) >= events
	})
	t.Logf("2,000 events posted in %s, delivered in %s", posted, time.Since(start))
	seen := rcv.answered()
	hookIDs := map[string]bool{}
	for _, id := range ids {
		got := seen[id]
		if len(got) != 1 {
			t.Fatalf("event %s: %d deliveries, want 1: %+v\nlogs of a:\n%s\nlogs of b:\n%s", id, len(got), got, a.logs, b.logs)
		}
		if hookIDs[got[0].webhookID] {
			t.Fatalf("webhook-id %s delivered twice", got[0].webhookID)
		}
		hookIDs[got[0].webhookID] = true
	}

	// a is killed with SIGKILL while its calls hang: b takes them over once their leases
	// end, with the same webhook-ids.
	const inFlight = 10
	rcv.startHolding()
	var mine []string
	for i := range inFlight {
		id, err := postEventAs(a.served, created.APIKey, fmt.Sprintf("killed-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, id)
	}
	waitFor(t, a.served, "a's calls in flight", 10*time.Second, func() bool { return rcv.held.Load() >= inFlight })
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()
	// The receiver sees a's connections close a moment after the kill: release the calls
	// only then, or a call still held could be answered to no one and read as delivered.
	waitFor(t, b.served, "a's calls cut by the kill", 10*time.Second, func() bool { return rcv.gone.Load() >= inFlight })
	rcv.release()
	waitFor(t, b.served, "a's messages delivered by b", lease+15*time.Second, func() bool {
		got := rcv.answered()
		for _, id := range mine {
			if len(got[id]) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("taken over %s after the kill", time.Since(killed))
	rcv.mu.Lock()
	cut := map[string]hookSeen{} // event id → the call a made
	for _, s := range rcv.seen {
		if !s.answered {
			cut[s.eventID] = s
		}
	}
	rcv.mu.Unlock()
	seen = rcv.answered()
	for _, id := range mine {
		first, ok := cut[id]
		if !ok {
			t.Fatalf("event %s: a's call was not cut by the kill", id)
		}
		got := seen[id]
		if len(got) != 1 || got[0].webhookID != first.webhookID {
			t.Fatalf("event %s: delivered %+v after the kill; want once, with a's webhook-id %s", id, got, first.webhookID)
		}
		if wait := got[0].at.Sub(first.at); wait < lease-time.Second {
			t.Fatalf("event %s taken over %s after a's call; want after the lease (%s)", id, wait, lease)
		}
		// The receiver records its answer before b commits the delivery: wait for the
		// commit rather than read the status once.
		waitFor(t, b.served, "event "+id+" delivered on b", 10*time.Second, func() bool {
			st, _, ev := b.call(t, "GET", "/v1/events/"+id, nil, key...)
			expect(t, "GET /v1/events/:id on b", st, 200, ev)
			return ev["status"] == "delivered"
		})
	}
	// Nothing else was delivered again.
	for _, id := range ids {
		if len(seen[id]) != 1 {
			t.Fatalf("event %s: %d deliveries after the kill", id, len(seen[id]))
		}
	}
}
