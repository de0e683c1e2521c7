package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// The crash loop (issue 8, "Proof"): the real binary is killed with SIGKILL again and
// again while clients post events, sync batches and device syncs, and restarted at once.
// Every client resends what was in flight when the node died with the same idempotency
// key or sequence number. In the end, after a clean stop, every acknowledged write must
// be there exactly once, `fieldrelay check` (bbolt's Tx.Check and fieldrelay's index
// checks, the outbox among them) must be clean, and nothing may be duplicated.
//
// It runs with FIELDRELAY_CRASH=1 (make crash); FIELDRELAY_CRASH_ROUNDS (20) and
// FIELDRELAY_CRASH_CLIENTS (8) size it.

func crashEnv(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// crashNode is one run of `fieldrelay serve` on the crash loop's data directory.
type crashNode struct {
	cmd     *exec.Cmd
	done    chan error
	logs    *syncBuffer
	readyIn time.Duration // from exec to the first 200 of /readyz
}

// startCrashNode starts the node on addr and polls /readyz every 2 ms until it answers
// 200 (at most 30 s).
func startCrashNode(t *testing.T, bin, data, addr string, flags []string) *crashNode {
	t.Helper()
	n := &crashNode{logs: &syncBuffer{}, done: make(chan error, 1)}
	n.cmd = exec.Command(bin, append([]string{"serve", "--data", data, "--addr", addr, "--plain-http"}, flags...)...)
	n.cmd.Stdout, n.cmd.Stderr = n.logs, n.logs
	probe := &http.Client{Timeout: time.Second}
	start := time.Now()
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.done <- n.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if res, err := probe.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				n.readyIn = time.Since(start)
				return n
			}
		}
		select {
		case err := <-n.done:
			t.Fatalf("serve exited before it was ready: %v\n%s", err, n.logs)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			_ = n.cmd.Process.Kill()
			t.Fatalf("serve was not ready within 30 s\n%s", n.logs)
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *crashNode) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.done
}

// crashLedger is what the clients were told: every acknowledged write, and what became of
// the requests that were in flight when the node died.
type crashLedger struct {
	mu sync.Mutex
	// events: idempotency key → the event_id of its acknowledgement (POST /v1/events,
	// sync batch items, device event items).
	events map[string]string
	// devices: device id → acknowledged sequence number → the item's idempotency key
	// ("" for location and connectivity items).
	devices map[string]map[int64]string
	// attempted: every idempotency key ever sent (acknowledged or not).
	attempted map[string]bool
	// writes counts acknowledged writes: events, batch items and device items.
	writes int
	// uncertain counts items whose request failed after it may have reached the node (a
	// reset connection, EOF, a timeout, a 5xx); replayed how many of those the retry
	// found committed already (Idempotent-Replayed, or a duplicate with outcome applied).
	uncertain, replayed int
	failures            []string
}

func (l *crashLedger) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 50 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

// ackEvent records an acknowledged event; the same key must always name the same event.
func (l *crashLedger) ackEvent(key, eventID, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.events[key]; ok && prev != eventID {
		l.failures = append(l.failures, fmt.Sprintf("%s: key %s acknowledged as event %s, earlier as %s", how, key, eventID, prev))
	}
	if eventID == "" {
		l.failures = append(l.failures, fmt.Sprintf("%s: key %s acknowledged with no event_id", how, key))
	}
	l.events[key] = eventID
}

// crashClient sends one write at a time to the node and retries it until acknowledged.
type crashClient struct {
	id     int
	base   string
	key    string
	http   *http.Client
	ledger *crashLedger
	rng    *rand.Rand
}

// errGaveUp is the end of a retry loop: the test is over.
var errGaveUp = errors.New("gave up: the run is over")

// send posts body until it gets a 2xx, and returns that answer and whether an earlier
// attempt may have reached the node. A 4xx is a failure of the test (errGaveUp is
// returned after recording it). hard ends the retries.
func (c *crashClient) send(hard context.Context, path string, body any) (int, http.Header, map[string]any, bool, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, nil, false, err
	}
	uncertain := false
	backoff := 5 * time.Millisecond
	for {
		req, _ := http.NewRequestWithContext(hard, "POST", c.base+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-svc-api-key", c.key)
		res, err := c.http.Do(req)
		if err == nil {
			var out map[string]any
			derr := json.NewDecoder(res.Body).Decode(&out)
			res.Body.Close()
			switch {
			case res.StatusCode >= 200 && res.StatusCode < 300 && derr == nil:
				return res.StatusCode, res.Header, out, uncertain, nil
			case res.StatusCode >= 200 && res.StatusCode < 300:
				uncertain = true // the answer was cut: the write may be committed
			case res.StatusCode >= 500:
				uncertain = true
			default:
				c.ledger.fail("client %d: POST %s answered %d: %v", c.id, path, res.StatusCode, out)
				return 0, nil, nil, false, errGaveUp
			}
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			// Refused: nothing reached a node. Anything else may have.
			uncertain = true
		}
		select {
		case <-hard.Done():
			return 0, nil, nil, uncertain, errGaveUp
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

func (c *crashClient) countUncertain(uncertain, replayed bool) {
	if !uncertain {
		return
	}
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	c.ledger.uncertain++
	if replayed {
		c.ledger.replayed++
	}
}

var crashPriorities = []string{"low", "normal", "high", "critical"}

func (c *crashClient) eventBody(key string, n int) map[string]any {
	return map[string]any{"type": "CRASH_LOOP", "priority": crashPriorities[n%4], "vertical": "gov",
		"idempotency_key": key, "payload": map[string]any{"client": c.id, "n": n}}
}

// runEvents posts events, one in five rounds a sync batch of 2–20 events, until load
// ends; the write in progress is finished (retried until acknowledged) first.
func (c *crashClient) runEvents(load, hard context.Context) {
	for n := 0; load.Err() == nil; n++ {
		if c.rng.IntN(5) > 0 {
			key := fmt.Sprintf("ev-%d-%d", c.id, n)
			c.ledger.mu.Lock()
			c.ledger.attempted[key] = true
			c.ledger.mu.Unlock()
			status, hdr, body, uncertain, err := c.send(hard, "/v1/events", c.eventBody(key, n))
			if err != nil {
				return
			}
			replayed := hdr.Get("Idempotent-Replayed") == "true"
			if status != 201 {
				c.ledger.fail("POST /v1/events %s: status %d", key, status)
			}
			id, _ := body["event_id"].(string)
			c.ledger.ackEvent(key, id, "POST /v1/events")
			c.countUncertain(uncertain, replayed)
			c.ledger.mu.Lock()
			c.ledger.writes++
			c.ledger.mu.Unlock()
			continue
		}
		items := make([]map[string]any, 2+c.rng.IntN(19))
		keys := make([]string, len(items))
		c.ledger.mu.Lock()
		for i := range items {
			keys[i] = fmt.Sprintf("batch-%d-%d-%d", c.id, n, i)
			items[i] = c.eventBody(keys[i], n+i)
			c.ledger.attempted[keys[i]] = true
		}
		c.ledger.mu.Unlock()
		_, _, body, uncertain, err := c.send(hard, "/v1/sync/batch", map[string]any{"events": items,
			"device_id": fmt.Sprintf("crash-client-%d", c.id), "captured_at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")})
		if err != nil {
			return
		}
		res, _ := body["items"].([]any)
		if len(res) != len(items) {
			c.ledger.fail("sync batch of client %d: %d items answered for %d sent: %v", c.id, len(res), len(items), body)
			continue
		}
		replayed := false
		for i, r := range res {
			m, _ := r.(map[string]any)
			id, _ := m["event_id"].(string)
			switch m["status"] {
			case "accepted":
			case "duplicate":
				replayed = true
				if !uncertain {
					c.ledger.fail("sync batch item %s: duplicate on its first delivery", keys[i])
				}
			default:
				c.ledger.fail("sync batch item %s: %v", keys[i], m)
				continue
			}
			c.ledger.ackEvent(keys[i], id, "POST /v1/sync/batch")
		}
		c.countUncertain(uncertain, replayed)
		c.ledger.mu.Lock()
		c.ledger.writes += len(items)
		c.ledger.mu.Unlock()
	}
}

// crashItem is a device item the client has not seen acknowledged yet.
type crashItem struct {
	seq  int64
	key  string // the idempotency key of an event item
	body map[string]any
}

// runDevice syncs one device: each sync sends every unacknowledged item (those of a
// failed sync again, with the same sequence numbers) and 1–4 new ones: events, positions
// of the team's member and connectivity reports of the zone.
func (c *crashClient) runDevice(load, hard context.Context, deviceID, memberID, zone string) {
	var next int64
	var pending []crashItem
	for load.Err() == nil || len(pending) > 0 {
		if load.Err() == nil {
			for range 1 + c.rng.IntN(4) {
				next++
				at := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
				it := crashItem{seq: next}
				switch c.rng.IntN(3) {
				case 0:
					it.key = fmt.Sprintf("dev-%d-%d", c.id, next)
					it.body = map[string]any{"kind": "event", "payload": c.eventBody(it.key, int(next))}
					c.ledger.mu.Lock()
					c.ledger.attempted[it.key] = true
					c.ledger.mu.Unlock()
				case 1:
					it.body = map[string]any{"kind": "location", "payload": map[string]any{"member_id": memberID,
						"lat": 45 + c.rng.Float64()/10, "lng": 4.8 + c.rng.Float64()/10}}
				default:
					it.body = map[string]any{"kind": "connectivity", "payload": map[string]any{"zone_code": zone,
						"state": []string{"online", "degraded"}[c.rng.IntN(2)], "signal_dbm": -60 - c.rng.IntN(40)}}
				}
				it.body["sequence_number"], it.body["captured_at"] = next, at
				pending = append(pending, it)
			}
		}
		items := make([]map[string]any, len(pending))
		for i := range pending {
			items[i] = pending[i].body
		}
		_, _, body, uncertain, err := c.send(hard, "/v1/devices/sync", map[string]any{"device_id": deviceID, "items": items})
		if err != nil {
			return
		}
		res, _ := body["results"].([]any)
		if len(res) != len(pending) {
			c.ledger.fail("device %s: %d results for %d items: %v", deviceID, len(res), len(pending), body)
			return
		}
		if at, _ := body["applied_through"].(float64); int64(at) != next {
			c.ledger.fail("device %s: applied_through %v after sending through %d", deviceID, body["applied_through"], next)
		}
		replayed := false
		c.ledger.mu.Lock()
		for i, r := range res {
			m, _ := r.(map[string]any)
			it := pending[i]
			status, _ := m["status"].(string)
			if status == "duplicate" {
				replayed = true
				status, _ = m["outcome"].(string)
				if !uncertain {
					c.ledger.failures = append(c.ledger.failures, fmt.Sprintf("device %s item %d: duplicate on its first delivery", deviceID, it.seq))
				}
			}
			if status != "applied" || m["sequence_number"] != float64(it.seq) {
				c.ledger.failures = append(c.ledger.failures, fmt.Sprintf("device %s item %d: %v", deviceID, it.seq, m))
				continue
			}
			c.ledger.devices[deviceID][it.seq] = it.key
			c.ledger.writes++
			if it.key != "" {
				id, _ := m["event_id"].(string)
				if prev, ok := c.ledger.events[it.key]; (ok && prev != id) || id == "" {
					c.ledger.failures = append(c.ledger.failures, fmt.Sprintf("device %s item %d: event %q, earlier %q", deviceID, it.seq, id, prev))
				}
				c.ledger.events[it.key] = id
			}
		}
		c.ledger.mu.Unlock()
		c.countUncertain(uncertain, replayed)
		pending = pending[:0]
	}
}

// failingReceiver answers 500 to every webhook: the outbox keeps its messages.
type failingReceiver struct{ calls atomic.Int64 }

func (h *failingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h.calls.Add(1)
	w.WriteHeader(http.StatusInternalServerError)
}

// withoutRequests drops the access log lines of a node's output.
func withoutRequests(out string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if !strings.Contains(line, `"msg":"request"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// TestCrashLoop kills -9 a node under load, round after round, and checks the bbolt file
// (`fieldrelay check`) and every acknowledged write. It runs on bbolt only: the file, its
// check and its recovery are what it tests (`check --database`
// refuses, docs/decisions/0095-database-refuses-backup.md).
func TestCrashLoop(t *testing.T) {
	if os.Getenv("FIELDRELAY_CRASH") != "1" {
		t.Skip("the crash loop runs with FIELDRELAY_CRASH=1 (make crash)")
	}
	rounds := crashEnv(t, "FIELDRELAY_CRASH_ROUNDS", 20)
	clients := crashEnv(t, "FIELDRELAY_CRASH_CLIENTS", 8)
	began := time.Now()
	bin := binary(t)
	built := time.Since(began)

	// A webhook receiver that fails every message, trusted by the node.
	hooks := &failingReceiver{}
	rcv := httptest.NewUnstartedServer(hooks)
	rcv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by kill -9
	rcv.StartTLS()
	defer rcv.Close()
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)

	data := t.TempDir()
	var created struct {
		Tenant struct {
			ID string `json:"id"`
		} `json:"tenant"`
		APIKey string `json:"api_key"`
	}
	// Mission-Critical: no rate limit.
	if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--json", "--name", "Crash",
		"--slug", "crash", "--email", "ops@crash.example", "--country", "FR", "--plan", "mission-critical"), &created); err != nil {
		t.Fatal(err)
	}
	tenantID, key := created.Tenant.ID, created.APIKey
	// Three attempts within ~3 s, then one in 10 minutes: most messages stay pending, and
	// the scheduler writes beside the clients.
	flags := []string{"--allow-loopback-webhooks", "--webhook-retry-schedule", "500ms,2s,10m"}
	addr := freeAddr(t)
	node := startCrashNode(t, bin, data, addr, flags)
	defer func() {
		if t.Failed() {
			t.Logf("the last node's output, request lines left out:\n%s", withoutRequests(node.logs.String()))
		}
		if node.cmd.ProcessState == nil {
			_ = node.cmd.Process.Kill()
			<-node.done
		}
	}()
	s := &served{base: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}, logs: node.logs}
	hdr := []string{"x-svc-api-key", key}
	st, _, body := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": rcv.URL + "/hook", "events": []string{"event.created"}}, hdr...)
	expect(t, "webhook", st, 201, body)
	square := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{4.7, 45.7}, {5.0, 45.7}, {5.0, 45.9}, {4.7, 45.9}, {4.7, 45.7}}}}
	st, _, body = s.call(t, "POST", "/v1/zones", map[string]any{"code": "crashzone", "name": "Crash zone", "boundary": square}, hdr...)
	expect(t, "zone", st, 201, body)

	ledger := &crashLedger{events: map[string]string{}, devices: map[string]map[int64]string{}, attempted: map[string]bool{}}
	load, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	hard, stopHard := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stopHard()
	var wg sync.WaitGroup
	for i := range clients {
		c := &crashClient{id: i, base: s.base, key: key, ledger: ledger, rng: rand.New(rand.NewPCG(uint64(i), uint64(began.UnixNano()))),
			http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}}
		if i%2 == 0 {
			wg.Add(1)
			go func() { defer wg.Done(); c.runEvents(load, hard) }()
			continue
		}
		// A device of its own team, whose one member it reports.
		st, _, team := s.call(t, "POST", "/v1/teams", map[string]any{"name": fmt.Sprintf("Crash team %d", i), "verticals": []string{"gov"},
			"members": []map[string]any{{"name": "Crew", "phone": fmt.Sprintf("+3361234%04d", i)}}}, hdr...)
		expect(t, "team", st, 201, team)
		teamID, _ := team["id"].(string)
		members, _ := team["members"].([]any)
		if len(members) != 1 {
			t.Fatalf("team: %v", team)
		}
		memberID, _ := members[0].(map[string]any)["id"].(string)
		st, _, dev := s.call(t, "POST", "/v1/devices/register", map[string]any{"name": fmt.Sprintf("tablet %d", i), "platform": "android",
			"team_id": teamID, "hardware_id": fmt.Sprintf("crash-hw-%d", i)}, hdr...)
		expect(t, "register", st, 201, dev)
		deviceID, _ := dev["device_id"].(string)
		ledger.devices[deviceID] = map[int64]string{}
		wg.Add(1)
		go func() { defer wg.Done(); c.runDevice(load, hard, deviceID, memberID, "crashzone") }()
	}

	// The loop: load for 0.2–1.5 s, kill -9, restart.
	rng := rand.New(rand.NewPCG(1, uint64(began.UnixNano())))
	loadStart := time.Now()
	var restarts []time.Duration
	for round := 1; round <= rounds; round++ {
		<-time.After(200*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond))))
		node.kill(t)
		node = startCrashNode(t, bin, data, addr, flags)
		restarts = append(restarts, node.readyIn)
		if node.readyIn > time.Second {
			t.Logf("round %d: restart took %s:\n%s", round, node.readyIn, withoutRequests(node.logs.String()))
		}
	}
	// A last stretch of load on the node that will stop cleanly, then the clients finish
	// the write they are on, then SIGTERM.
	<-time.After(300 * time.Millisecond)
	stopLoad()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		stopHard()
		<-finished
		t.Errorf("the clients did not finish their last write within a minute")
	}
	loadTime := time.Since(loadStart)
	// check refuses a directory a server holds.
	if out, _, err := runCLI(bin, "", "check", "--data", data, "--json"); err == nil || !bytes.Contains(out, []byte("is running")) {
		t.Errorf("fieldrelay check on a served directory: %v\n%s", err, out)
	}
	if err := node.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-node.done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, node.logs)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("serve did not stop after SIGTERM\n%s", node.logs)
	}

	// fieldrelay check: bbolt's Tx.Check and the index checks, the outbox among them.
	out, stderr, err := runCLI(bin, "", "check", "--data", data, "--json")
	var report store.CheckReport
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("fieldrelay check: %v %v\n%s%s", err, jerr, out, stderr)
	}
	if err != nil || !report.OK {
		t.Errorf("fieldrelay check is not clean (%v):\n%s", err, store.FormatCheck(&report))
	}

	// Every acknowledged write, exactly once.
	db, err := store.Open(data, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lost, duplicates, strays := 0, 0, 0
	var lostSamples []string
	err = db.View(context.Background(), func(tx model.Tx) error {
		events, _, err := tx.Events(tenantID, model.EventFilter{}, model.Page{Limit: 1 << 30})
		if err != nil {
			return err
		}
		byKey := map[string][]string{}
		for _, ev := range events {
			byKey[ev.IdempotencyKey] = append(byKey[ev.IdempotencyKey], ev.ID)
			// A webhook wants event.created from the start: every event planned its
			// delivery, and check holds its messages against the outbox.
			if ev.Delivery.Started == 0 || ev.Status == model.EventPending && ev.Delivery.Outstanding == 0 {
				t.Errorf("event %s (%s): delivery %+v, status %s: its outbox messages are missing", ev.ID, ev.IdempotencyKey, ev.Delivery, ev.Status)
			}
		}
		for k, ids := range byKey {
			duplicates += len(ids) - 1
			if !ledger.attempted[k] {
				strays++
				t.Errorf("event %v has key %q, which no client sent", ids, k)
			}
		}
		for k, id := range ledger.events {
			if ids := byKey[k]; len(ids) == 0 || ids[0] != id {
				lost++
				lostSamples = append(lostSamples, fmt.Sprintf("event %s (%s): found %v", k, id, ids))
			}
		}
		for deviceID, seqs := range ledger.devices {
			d, err := tx.Device(tenantID, deviceID)
			if err != nil {
				return err
			}
			for seq, k := range seqs {
				it, err := tx.DeviceItem(tenantID, deviceID, seq)
				if err != nil {
					return err
				}
				switch {
				case it == nil || it.Status != model.ItemApplied || seq > d.Sync.AppliedThrough:
					lost++
					lostSamples = append(lostSamples, fmt.Sprintf("device %s item %d: %+v, applied_through %d", deviceID, seq, it, d.Sync.AppliedThrough))
				case k != "" && it.EventID != ledger.events[k]:
					lost++
					lostSamples = append(lostSamples, fmt.Sprintf("device %s item %d made event %s, acknowledged %s", deviceID, seq, it.EventID, ledger.events[k]))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	loadavg, _ := os.ReadFile("/proc/loadavg") // restart times depend on what else the machine runs
	t.Logf("crash loop: %d kill -9 rounds, %d clients, %s of load (build %s, whole run %s; load average %s)",
		rounds, clients, loadTime.Round(time.Millisecond), built.Round(time.Millisecond), time.Since(began).Round(time.Millisecond),
		bytes.TrimSpace(loadavg))
	t.Logf("lost=%d/%d duplicates=%d (in flight when the node died: %d writes, %d of them found committed on retry)",
		lost, ledger.writes, duplicates, ledger.uncertain, ledger.replayed)
	t.Logf("restart to /readyz: p50 %s p99 %s max %s (%d restarts)", percentile(restarts, 0.5).Round(time.Microsecond),
		percentile(restarts, 0.99).Round(time.Microsecond), slices.Max(restarts).Round(time.Microsecond), len(restarts))
	t.Logf("check: bbolt %d error(s), %d problem(s); %d events (%d pending, %d messages outstanding), %d outbox entries, %d device items; receiver refused %d attempts",
		len(report.Bolt), report.ProblemCount, report.Counts.Events, report.Counts.PendingEvents, report.Counts.OutstandingMsg,
		report.Counts.OutboxEntries, report.Counts.DeviceItems, hooks.calls.Load())
	for _, f := range ledger.failures {
		t.Errorf("client: %s", f)
	}
	for i, l := range lostSamples {
		if i == 20 {
			t.Errorf("… and %d more lost", len(lostSamples)-20)
			break
		}
		t.Errorf("lost: %s", l)
	}
	if lost > 0 || duplicates > 0 || strays > 0 {
		t.Errorf("lost=%d duplicates=%d strays=%d", lost, duplicates, strays)
	}
	if ledger.writes == 0 || ledger.uncertain == 0 {
		t.Errorf("the loop proved little: %d acknowledged writes, %d in flight at a kill", ledger.writes, ledger.uncertain)
	}
}
