package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// The delivery end-to-end test drives the real binary with --demo against a flaky HTTPS
// webhook receiver (trusted through SSL_CERT_FILE), a fake SMS gateway and a second tenant
// with its own receiver: retries with one webhook-id and valid signatures, SMS fallback
// bodies that decode, a degraded zone going SMS only, an offline zone whose queued events
// are delivered once it is back online, and tenant isolation.

// hookMsg is the part of a webhook envelope the test reads.
type hookMsg struct {
	Event   string `json:"event"`
	Payload struct {
		EventID string `json:"event_id"`
	} `json:"payload"`
	TenantID string `json:"tenant_id"`
}

// hookReq is one request a receiver saw, with the status it answered.
type hookReq struct {
	header http.Header
	body   []byte
	msg    hookMsg
	status int
}

// flakyReceiver records every request; it answers 500 to the first failFirst attempts of
// each event.created message (by webhook-id) and 200 to everything else.
type flakyReceiver struct {
	failFirst int
	mu        sync.Mutex
	reqs      []hookReq
	tries     map[string]int // webhook-id → event.created attempts
}

func newFlakyReceiver(failFirst int) *flakyReceiver {
	return &flakyReceiver{failFirst: failFirst, tries: map[string]int{}}
}

func (h *flakyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m hookMsg
	_ = json.Unmarshal(body, &m)
	status := http.StatusOK
	h.mu.Lock()
	if m.Event == engine.HookEventCreated {
		id := r.Header.Get(outbound.HeaderWebhookID)
		h.tries[id]++
		if h.tries[id] <= h.failFirst {
			status = http.StatusInternalServerError
		}
	}
	h.reqs = append(h.reqs, hookReq{header: r.Header.Clone(), body: body, msg: m, status: status})
	h.mu.Unlock()
	w.WriteHeader(status)
}

// all returns a copy of the requests seen so far.
func (h *flakyReceiver) all() []hookReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reqs)
}

// of returns the requests of messages named name about the event eventID ("" for any name).
func (h *flakyReceiver) of(name, eventID string) []hookReq {
	var out []hookReq
	for _, q := range h.all() {
		if (name == "" || q.msg.Event == name) && q.msg.Payload.EventID == eventID {
			out = append(out, q)
		}
	}
	return out
}

// smsSent is one message handed to the fake SMS gateway.
type smsSent struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

// fakeSMSGateway records the POST {"to","body"} it receives on /sms and answers 200.
type fakeSMSGateway struct {
	mu   sync.Mutex
	msgs []smsSent
	bad  []string // requests that were not a POST /sms of a JSON {to, body}
}

func (g *fakeSMSGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var m smsSent
	err := json.Unmarshal(raw, &m)
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/sms" || err != nil {
		g.bad = append(g.bad, fmt.Sprintf("%s %s %q", r.Method, r.URL.Path, raw))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	g.msgs = append(g.msgs, m)
	w.WriteHeader(http.StatusOK)
}

func (g *fakeSMSGateway) all() ([]smsSent, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.msgs), slices.Clone(g.bad)
}

// withRef returns the messages whose FR1 line names the event ref (its last 8 hex digits).
func (g *fakeSMSGateway) withRef(ref string) []smsSent {
	msgs, _ := g.all()
	var out []smsSent
	for _, m := range msgs {
		if strings.HasPrefix(m.Body, "FR1|"+ref+"|") {
			out = append(out, m)
		}
	}
	return out
}

// eventRef is the FR1 reference of an event: the last 8 hex digits of its id.
func eventRef(id string) string {
	hex := strings.ReplaceAll(id, "-", "")
	if len(hex) < 8 {
		return hex
	}
	return hex[len(hex)-8:]
}

// waitFor polls cond every 50 ms until it holds, failing the test with the server logs
// after limit.
func waitFor(t *testing.T, s *served, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s\nserver logs:\n%s", limit, what, s.logs)
		case <-tick.C:
		}
	}
}

// demoPhones are the phones of the demo teams (cli/demo.go) by zone and vertical.
var demoPhones = map[string]map[string][]string{
	"lyon": {
		"emergency":  {"+33612345601", "+33612345602", "+33612345603", "+33612345604"},
		"healthcare": {"+33612345601", "+33612345602"},
	},
	"grenoble": {
		"logistics":  {"+33612345605", "+33612345606"},
		"healthcare": {"+33612345605", "+33612345606"},
	},
}

// TestDelivery_EndToEnd runs on both stores (eachStore).
func TestDelivery_EndToEnd(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { deliveryEndToEnd(t, bin, st) })
}

func deliveryEndToEnd(t *testing.T, bin string, store nodeStore) {
	start := time.Now()

	hooksA, hooksB := newFlakyReceiver(2), newFlakyReceiver(0)
	rcvA := httptest.NewTLSServer(hooksA)
	defer rcvA.Close()
	rcvB := httptest.NewTLSServer(hooksB)
	defer rcvB.Close()
	gw := &fakeSMSGateway{}
	gwSrv := httptest.NewServer(gw)
	defer gwSrv.Close()

	var pemBytes []byte
	for _, srv := range []*httptest.Server{rcvA, rcvB} {
		pemBytes = append(pemBytes, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})...)
	}
	caFile := filepath.Join(t.TempDir(), "receivers.pem")
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile) // inherited by the node: it trusts both receivers

	s := store.serveDemo(t, bin, "--allow-loopback-webhooks",
		"--webhook-retry-schedule", "100ms,100ms,100ms", "--sms-gateway", gwSrv.URL+"/sms")

	// Tenant A: the demo tenant, whose key --demo saved in the data dir.
	keyA := s.key()
	st, _, me := s.call(t, "GET", "/v1/tenant/me", nil, keyA...)
	expect(t, "tenant A me", st, 200, me)
	tenantA, _ := me["id"].(string)

	// Tenant B: created with the CLI while the node serves (through the admin socket on bbolt).
	var createdB struct {
		Tenant map[string]any `json:"tenant"`
		APIKey string         `json:"api_key"`
	}
	out := store.cli(t, bin, "", "tenant", "create", "--name", "Beta Logistics", "--slug", "beta",
		"--email", "ops@beta.example", "--country", "fr", "--json")
	if err := json.Unmarshal(out, &createdB); err != nil || createdB.APIKey == "" {
		t.Fatalf("tenant create B: %v %s", err, out)
	}
	keyB := []string{"x-svc-api-key", createdB.APIKey}
	tenantB, _ := createdB.Tenant["id"].(string)
	if tenantA == "" || tenantB == "" || tenantA == tenantB {
		t.Fatalf("tenant ids: A %q (%v), B %q (%v)", tenantA, me, tenantB, createdB.Tenant)
	}

	// Webhooks of both tenants.
	st, _, whA := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": rcvA.URL + "/hook", "events": []string{"event.*"}}, keyA...)
	expect(t, "webhook A", st, 201, whA)
	secretA, _ := whA["secret"].(string)
	whAID, _ := whA["id"].(string)
	if !strings.HasPrefix(secretA, "whsec_") || whAID == "" {
		t.Fatalf("webhook A: %v", whA)
	}
	st, _, whB := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": rcvB.URL + "/hook", "events": []string{"event.*"}}, keyB...)
	expect(t, "webhook B", st, 201, whB)
	secretB, _ := whB["secret"].(string)
	if !strings.HasPrefix(secretB, "whsec_") {
		t.Fatalf("webhook B: %v", whB)
	}

	// One event of tenant B, so that its receiver has something to show.
	st, _, evB := s.call(t, "POST", "/v1/events", map[string]any{"type": "TRUCK_BREAKDOWN", "priority": "high",
		"vertical": "logistics", "idempotency_key": "e2e-b-1"}, keyB...)
	expect(t, "event B", st, 201, evB)
	eventB, _ := evB["event_id"].(string)

	getEvent := func(t *testing.T, key []string, id string) map[string]any {
		t.Helper()
		st, _, ev := s.call(t, "GET", "/v1/events/"+id, nil, key...)
		expect(t, "GET event "+id, st, 200, ev)
		return ev
	}
	waitStatus := func(t *testing.T, key []string, id, want string) map[string]any {
		t.Helper()
		var ev map[string]any
		waitFor(t, s.served, "event "+id+" "+want, 10*time.Second, func() bool {
			ev = getEvent(t, key, id)
			return ev["status"] == want
		})
		return ev
	}
	postEvent := func(t *testing.T, body map[string]any) map[string]any {
		t.Helper()
		st, _, ev := s.call(t, "POST", "/v1/events", body, keyA...)
		expect(t, "POST event "+fmt.Sprint(body["idempotency_key"]), st, 201, ev)
		if id, _ := ev["event_id"].(string); id == "" {
			t.Fatalf("no event_id: %v", ev)
		}
		return ev
	}
	report := func(t *testing.T, zone, state string) {
		t.Helper()
		st, _, body := s.call(t, "POST", "/v1/connectivity/report", map[string]any{"zone_code": zone, "state": state}, keyA...)
		expect(t, "report "+zone+" "+state, st, 200, body)
		st, _, body = s.call(t, "GET", "/v1/connectivity/status?zone_code="+zone, nil, keyA...)
		expect(t, "status "+zone, st, 200, body)
		if body["state"] != state {
			t.Fatalf("zone %s after reporting %s: %v", zone, state, body)
		}
	}
	// checkCreated waits until the receiver A has seen exactly 3 attempts of the
	// event.created message of id (two 500, then 200) and checks them.
	checkCreated := func(t *testing.T, id string) {
		t.Helper()
		waitFor(t, s.served, "a 2xx to event.created of "+id, 10*time.Second, func() bool {
			for _, q := range hooksA.of(engine.HookEventCreated, id) {
				if q.status == 200 {
					return true
				}
			}
			return false
		})
		reqs := hooksA.of(engine.HookEventCreated, id)
		if len(reqs) != 3 {
			t.Fatalf("event %s: receiver A saw %d attempts of event.created, want 3", id, len(reqs))
		}
		wid := reqs[0].header.Get(outbound.HeaderWebhookID)
		for i, q := range reqs {
			if got := q.header.Get(outbound.HeaderWebhookID); got == "" || got != wid {
				t.Errorf("event %s attempt %d: webhook-id %q, first was %q", id, i+1, got, wid)
			}
			if err := outbound.VerifyWebhook(secretA, q.header, q.body); err != nil {
				t.Errorf("event %s attempt %d: signature: %v\nheaders %v\nbody %s", id, i+1, err, q.header, q.body)
			}
			if q.msg.TenantID != tenantA {
				t.Errorf("event %s attempt %d: tenant_id %q, want %q", id, i+1, q.msg.TenantID, tenantA)
			}
			if want := []int{500, 500, 200}[i]; q.status != want {
				t.Errorf("event %s attempt %d answered %d, want %d", id, i+1, q.status, want)
			}
		}
	}

	var idsA []string // every event of tenant A
	var restA []string

	t.Run("retries", func(t *testing.T) {
		ev := postEvent(t, map[string]any{"type": "CARDIAC_ARREST", "priority": "high", "vertical": "emergency",
			"idempotency_key": "e2e-lyon-1", "zone_code": "lyon", "payload": map[string]any{"lat": 45.7597, "lng": 4.8422}})
		id := ev["event_id"].(string)
		idsA, restA = append(idsA, id), append(restA, id)
		if ev["status"] != "pending" || ev["channel_selected"] != "rest_full" {
			t.Fatalf("POST event: %v, want pending on rest_full", ev)
		}
		waitStatus(t, keyA, id, "delivered")
		checkCreated(t, id)
		reqs := hooksA.of(engine.HookEventCreated, id)
		wid := reqs[0].header.Get(outbound.HeaderWebhookID)
		for _, q := range reqs {
			var env struct {
				Event   string         `json:"event"`
				Payload map[string]any `json:"payload"`
			}
			if err := json.Unmarshal(q.body, &env); err != nil || env.Event != "event.created" ||
				env.Payload["event_id"] != id || env.Payload["zone_code"] != "lyon" || env.Payload["type"] != "CARDIAC_ARREST" {
				t.Errorf("event.created body: %v %s", err, q.body)
			}
		}

		// The attempt log: two failures then a success, for that one message.
		var mine []map[string]any
		waitFor(t, s.served, "3 attempts in the deliveries of webhook A", 5*time.Second, func() bool {
			st, _, body := s.call(t, "GET", "/v1/webhooks/"+whAID+"/deliveries?limit=500", nil, keyA...)
			expect(t, "deliveries", st, 200, body)
			list, _ := body["data"].([]any)
			mine = mine[:0]
			for _, a := range list {
				if m, _ := a.(map[string]any); m != nil && m["message_id"] == wid {
					mine = append(mine, m)
				}
			}
			return len(mine) >= 3
		})
		sort.Slice(mine, func(i, j int) bool { return mine[i]["attempt"].(float64) < mine[j]["attempt"].(float64) })
		if len(mine) != 3 {
			t.Fatalf("deliveries of message %s: %d attempts, want 3: %v", wid, len(mine), mine)
		}
		for i, a := range mine {
			wantStatus, wantCode := "failed", 500.0
			if i == 2 {
				wantStatus, wantCode = "succeeded", 200.0
			}
			if a["attempt"] != float64(i+1) || a["status"] != wantStatus || a["status_code"] != wantCode ||
				a["event"] != "event.created" || a["webhook_id"] != whAID {
				t.Errorf("delivery attempt %d: %v, want attempt %d %s %v", i+1, a, i+1, wantStatus, wantCode)
			}
		}
		// event.delivered follows, once.
		waitFor(t, s.served, "event.delivered of "+id, 5*time.Second, func() bool {
			return len(hooksA.of(engine.HookEventDelivered, id)) > 0
		})
	})

	t.Run("degraded zone goes by SMS", func(t *testing.T) {
		report(t, "grenoble", "degraded")
		ev := postEvent(t, map[string]any{"type": "COLD_CHAIN_BREAK", "priority": "normal", "vertical": "healthcare",
			"idempotency_key": "e2e-grenoble-1", "zone_code": "grenoble", "payload": map[string]any{"lat": 45.1885, "lng": 5.7245}})
		id := ev["event_id"].(string)
		idsA = append(idsA, id)
		if ev["status"] != "pending" || ev["channel_selected"] != "sms" {
			t.Fatalf("POST event in a degraded zone: %v, want pending on sms", ev)
		}
		ref := eventRef(id)
		waitFor(t, s.served, "an SMS of "+id, 10*time.Second, func() bool { return len(gw.withRef(ref)) > 0 })
		for _, m := range gw.withRef(ref) {
			dec, err := smscodec.DecodeSMS(m.Body)
			if err != nil {
				t.Fatalf("SMS %q does not decode: %v", m.Body, err)
			}
			if dec.EventRef != ref || dec.Priority != "normal" || dec.ZoneCode != "grenoble" || dec.Type != "COLD_CHAIN_BREAK" ||
				dec.Lat == nil || dec.Lng == nil || *dec.Lat != 45.1885 || *dec.Lng != 5.7245 {
				t.Errorf("SMS %q decodes to %+v", m.Body, dec)
			}
			if !slices.Contains(demoPhones["grenoble"]["healthcare"], m.To) {
				t.Errorf("SMS to %q, not a phone of a grenoble healthcare team", m.To)
			}
		}
		got := waitStatus(t, keyA, id, "delivered")
		if att, _ := got["channels_attempted"].([]any); len(att) != 1 || att[0] != "sms" {
			t.Errorf("channels_attempted %v, want [sms]", got["channels_attempted"])
		}
		if n := len(hooksA.of(engine.HookEventCreated, id)); n != 0 {
			t.Errorf("a degraded zone's event went out by webhook too: %d event.created", n)
		}
	})

	t.Run("offline zone flushes when back online", func(t *testing.T) {
		report(t, "lyon", "offline")
		var ids []string
		for i := range 2 {
			ev := postEvent(t, map[string]any{"type": "STRUCTURE_FIRE", "priority": "high", "vertical": "emergency",
				"idempotency_key": fmt.Sprintf("e2e-offline-%d", i), "zone_code": "lyon"})
			if ev["status"] != "queued_offline" || ev["channel_selected"] != "queued_offline" {
				t.Fatalf("POST event in an offline zone: %v, want queued_offline", ev)
			}
			ids = append(ids, ev["event_id"].(string))
		}
		idsA, restA = append(idsA, ids...), append(restA, ids...)
		// A barrier instead of a sleep: an event of no zone, accepted after them, goes
		// through its whole retry schedule; had they any message due, the scheduler, which
		// takes due messages in order, would have sent it first.
		marker := postEvent(t, map[string]any{"type": "MARKER", "priority": "low", "vertical": "emergency",
			"idempotency_key": "e2e-offline-marker"})
		idsA = append(idsA, marker["event_id"].(string))
		waitStatus(t, keyA, marker["event_id"].(string), "delivered")
		for _, id := range ids {
			if reqs := hooksA.of("", id); len(reqs) != 0 {
				t.Errorf("event %s of an offline zone: receiver A got %d messages, e.g. %s", id, len(reqs), reqs[0].body)
			}
			if msgs := gw.withRef(eventRef(id)); len(msgs) != 0 {
				t.Errorf("event %s of an offline zone: %d SMS, e.g. %v", id, len(msgs), msgs[0])
			}
			if ev := getEvent(t, keyA, id); ev["status"] != "queued_offline" {
				t.Errorf("event %s while offline: status %v", id, ev["status"])
			}
		}
		report(t, "lyon", "online")
		for _, id := range ids {
			waitStatus(t, keyA, id, "delivered")
			checkCreated(t, id)
		}
	})

	t.Run("tenant isolation", func(t *testing.T) {
		if eventB == "" {
			t.Fatal("no event of tenant B")
		}
		waitStatus(t, keyB, eventB, "delivered")
		waitFor(t, s.served, "receiver B got B's event.created", 5*time.Second, func() bool {
			return len(hooksB.of(engine.HookEventCreated, eventB)) > 0
		})
		for _, id := range idsA {
			st, _, body := s.call(t, "GET", "/v1/events/"+id, nil, keyB...)
			if st != 404 || body["error"] != "not_found" {
				t.Errorf("tenant B GET /v1/events/%s (tenant A's): %d %v, want 404 not_found", id, st, body)
			}
		}
		st, _, body := s.call(t, "GET", "/v1/events?limit=500", nil, keyB...)
		expect(t, "tenant B list", st, 200, body)
		list, _ := body["data"].([]any)
		var listed []string
		for _, e := range list {
			m, _ := e.(map[string]any)
			id, _ := m["event_id"].(string)
			listed = append(listed, id)
			if slices.Contains(idsA, id) {
				t.Errorf("tenant B lists tenant A's event %s", id)
			}
		}
		if !slices.Contains(listed, eventB) {
			t.Errorf("tenant B's list %v misses its event %s", listed, eventB)
		}
		st, _, body = s.call(t, "GET", "/v1/webhooks/"+whAID+"/deliveries", nil, keyB...)
		if st != 404 {
			t.Errorf("tenant B reads tenant A's webhook deliveries: %d %v", st, body)
		}
		for _, q := range hooksB.all() {
			if q.msg.TenantID != tenantB || slices.Contains(idsA, q.msg.Payload.EventID) {
				t.Errorf("receiver B got %s", q.body)
			}
			if err := outbound.VerifyWebhook(secretB, q.header, q.body); err != nil {
				t.Errorf("receiver B: signature: %v", err)
			}
		}
		for _, q := range hooksA.all() {
			if q.msg.TenantID != tenantA || q.msg.Payload.EventID == eventB {
				t.Errorf("receiver A got %s", q.body)
			}
		}
	})

	t.Run("every SMS decodes", func(t *testing.T) {
		byRef := map[string]map[string]any{}
		for _, id := range idsA {
			byRef[eventRef(id)] = getEvent(t, keyA, id)
		}
		msgs, bad := gw.all()
		if len(bad) > 0 {
			t.Errorf("the SMS gateway got malformed requests: %q", bad)
		}
		for _, m := range msgs {
			dec, err := smscodec.DecodeSMS(m.Body)
			if err != nil {
				t.Errorf("SMS %q does not decode: %v", m.Body, err)
				continue
			}
			ev := byRef[dec.EventRef]
			if ev == nil {
				t.Errorf("SMS %q names no event of tenant A", m.Body)
				continue
			}
			zone, _ := ev["zone_code"].(string)
			vertical, _ := ev["vertical"].(string)
			if dec.ZoneCode != zone || dec.Priority != ev["priority"] || dec.Type != ev["type"] {
				t.Errorf("SMS %q decodes to %+v, event %v", m.Body, dec, ev)
			}
			if !slices.Contains(demoPhones[zone][vertical], m.To) {
				t.Errorf("SMS %q to %q: not a phone of a %s team of zone %s", m.Body, m.To, vertical, zone)
			}
		}
		t.Logf("%d SMS checked, receiver A saw %d requests, receiver B %d", len(msgs), len(hooksA.all()), len(hooksB.all()))
		// No late duplicate: still exactly three attempts of each event.created.
		for _, id := range restA {
			if n := len(hooksA.of(engine.HookEventCreated, id)); n != 3 {
				t.Errorf("event %s: %d attempts of event.created in the end, want 3", id, n)
			}
		}
	})

	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.logs)
	}
	t.Logf("delivery end-to-end took %s", time.Since(start).Round(time.Millisecond))
}
