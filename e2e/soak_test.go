package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/servertest"
	"github.com/fieldrelay/fieldrelay/store"
)

// The soak (make soak, never in make test): the real binary runs for FIELDRELAY_SOAK_DURATION
// (default 1h) under a steady mixed load: events, sync batches, device syncs, the dispatch
// lifecycle, webhooks to a receiver that fails one call in five, 50 stream clients, the
// retention sweep (at start, then hourly) and a backup every 10 minutes. Every
// FIELDRELAY_SOAK_SAMPLE (default 1m) it samples anonymous RSS, Go heap, goroutines, open files, the
// bbolt file's size per acknowledged event, outbox depth and the p99 of POST /v1/events,
// and it fails when one of them trends upward past its bound (soakBounds), when the node
// fails a request during the run, or when an acknowledged event is missing at the end or
// `fieldrelay check` is not clean.

// soakSample is one sample of the node.
type soakSample struct {
	at                      time.Duration
	rss, rssFile, heap      float64 // bytes: anonymous and file-backed resident memory, Go heap
	goroutines, fds, outbox float64
	dbBytes                 float64
	acked                   int
	p99                     time.Duration
}

// soakBounds: how much the last third of the samples may exceed the first third (after the
// first sample, the warm-up) before the soak fails: growth past these is a leak.
var soakBounds = []struct {
	name       string
	of         func(s soakSample) float64
	factor     float64 // last third's max ≤ first third's mean × factor + slack
	slack      float64
	unitFormat string
}{
	// The file-backed part of RSS is the mapped bbolt file's pages, which grows with the file
	// (bounded by bytes per event below); the anonymous part is the process's own memory.
	{"anonymous RSS", func(s soakSample) float64 { return s.rss }, 1.5, 32 << 20, "%.0f B"},
	{"Go heap in use", func(s soakSample) float64 { return s.heap }, 2, 32 << 20, "%.0f B"},
	{"goroutines", func(s soakSample) float64 { return s.goroutines }, 1.2, 50, "%.0f"},
	{"open files", func(s soakSample) float64 { return s.fds }, 1.2, 20, "%.0f"},
	{"outbox depth", func(s soakSample) float64 { return s.outbox }, 2, 2000, "%.0f"},
	{"bbolt bytes per acknowledged event", func(s soakSample) float64 {
		return s.dbBytes / float64(max(s.acked, 1))
	}, 1.5, 1024, "%.0f B"},
	{"p99 of POST /v1/events", func(s soakSample) float64 { return s.p99.Seconds() }, 3, 0.05, "%.3f s"},
}

func soakEnv(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

func TestSoak(t *testing.T) {
	if os.Getenv("FIELDRELAY_SOAK") == "" {
		t.Skip("the soak runs with FIELDRELAY_SOAK=1 (make soak)")
	}
	duration := soakEnv(t, "FIELDRELAY_SOAK_DURATION", time.Hour)
	every := soakEnv(t, "FIELDRELAY_SOAK_SAMPLE", time.Minute)
	bin := binary(t)
	data := t.TempDir()

	// A receiver that fails one call in five, over TLS that the node trusts.
	var hooks, hookFails atomic.Int64
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if hooks.Add(1)%5 == 0 {
			hookFails.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)

	var created struct {
		Tenant struct {
			ID string `json:"id"`
		} `json:"tenant"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--name", "Soak", "--slug", "soak", "--email", "ops@soak.example",
		"--country", "FR", "--plan", "mission-critical", "--json"), &created); err != nil {
		t.Fatal(err)
	}
	const secret = "soak internal secret 0123456789"
	s := serve(t, bin, data, false, "--internal-secret", secret, "--allow-loopback-webhooks",
		"--webhook-retry-schedule", "1s,5s,30s", "--backup-every", "10m", "--backup-keep", "3")
	key := []string{"x-svc-api-key", created.APIKey}
	setup := func(what, method, path string, body any) map[string]any {
		st, _, out := s.call(t, method, path, body, key...)
		if st != 200 && st != 201 {
			t.Fatalf("%s: %d %v", what, st, out)
		}
		return out
	}
	setup("webhook", "POST", "/v1/webhooks", map[string]any{"url": rcv.URL + "/hook", "events": []string{"event.created", "mission.*"}})
	square := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{4.7, 45.7}, {5.0, 45.7}, {5.0, 45.9}, {4.7, 45.9}, {4.7, 45.7}}}}
	setup("zone", "POST", "/v1/zones", map[string]any{"code": "soak", "name": "Soak", "boundary": square})
	team := setup("team", "POST", "/v1/teams", map[string]any{"name": "Soak team", "verticals": []string{"gov"}, "zone_code": "soak",
		"members": []map[string]any{{"name": "Crew", "phone": "+33612340001"}}})
	teamID := team["id"].(string)
	memberID := team["members"].([]any)[0].(map[string]any)["id"].(string)
	dev := setup("device", "POST", "/v1/devices/register", map[string]any{"name": "soak tablet", "platform": "android",
		"team_id": teamID, "hardware_id": "soak-hw-1"})
	deviceID := dev["device_id"].(string)

	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	post := func(method, path string, body any) (int, map[string]any, time.Duration) {
		req := servertest.NewRequest(t, ctx, method, s.base+path, body, key...)
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, 0
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out, time.Since(start)
	}

	var mu sync.Mutex
	acked := map[string]bool{} // event ids acknowledged
	var latencies []time.Duration
	var completed atomic.Int64
	failures := map[string]int{} // "METHOD path status" → count, of requests the node failed
	fail := func(method, path string, st int) {
		if ctx.Err() != nil {
			return // cut by the end of the run, not failed by the node
		}
		mu.Lock()
		failures[fmt.Sprintf("%s %s %d", method, path, st)]++
		mu.Unlock()
	}
	ack := func(id string) {
		mu.Lock()
		acked[id] = true
		mu.Unlock()
	}
	var wg sync.WaitGroup
	loop := func(period time.Duration, fn func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(period)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					fn(n)
				}
			}
		}()
	}
	event := func(key string) map[string]any {
		return map[string]any{"type": "SOAK", "priority": "normal", "vertical": "gov", "idempotency_key": key,
			"zone_code": "soak", "payload": map[string]any{"note": strings.Repeat("p", 300)}}
	}
	// Events: 4 × 25/s.
	for w := range 4 {
		loop(40*time.Millisecond, func(n int) {
			st, out, took := post("POST", "/v1/events", event(fmt.Sprintf("ev-%d-%d", w, n)))
			if st != 201 {
				fail("POST", "/v1/events", st)
				return
			}
			ack(out["event_id"].(string))
			mu.Lock()
			latencies = append(latencies, took)
			mu.Unlock()
		})
	}
	// Sync batches: 10 events every second.
	loop(time.Second, func(n int) {
		items := make([]any, 10)
		for i := range items {
			items[i] = event(fmt.Sprintf("sb-%d-%d", n, i))
		}
		st, out, _ := post("POST", "/v1/sync/batch", map[string]any{"device_id": "soak-batch", "events": items,
			"captured_at": time.Now().UTC().Format(model.TimeLayout)})
		if st != 200 {
			fail("POST", "/v1/sync/batch", st)
			return
		}
		for _, it := range out["items"].([]any) {
			if id, ok := it.(map[string]any)["event_id"].(string); ok {
				ack(id)
			}
		}
	})
	// Device syncs: an event, a position and a connectivity report every second.
	var seq atomic.Int64
	loop(time.Second, func(n int) {
		now := time.Now().UTC().Format(model.TimeLayout)
		items := []any{
			map[string]any{"sequence_number": seq.Add(1), "kind": "event", "captured_at": now, "payload": event(fmt.Sprintf("dev-%d", n))},
			map[string]any{"sequence_number": seq.Add(1), "kind": "location", "captured_at": now,
				"payload": map[string]any{"member_id": memberID, "lat": 45.8, "lng": 4.85}},
			map[string]any{"sequence_number": seq.Add(1), "kind": "connectivity", "captured_at": now,
				"payload": map[string]any{"zone_code": "soak", "state": "online", "signal_dbm": -70}},
		}
		st, out, _ := post("POST", "/v1/devices/sync", map[string]any{"device_id": deviceID, "items": items, "sent_at": now})
		if st != 200 {
			fail("POST", "/v1/devices/sync", st)
			return
		}
		for _, r := range out["results"].([]any) {
			if id, ok := r.(map[string]any)["event_id"].(string); ok {
				ack(id)
			}
		}
	})
	// The dispatch lifecycle: an event, a dispatch of the team, four moves, every 2 s.
	loop(2*time.Second, func(n int) {
		st, ev, _ := post("POST", "/v1/events", event(fmt.Sprintf("dispatch-%d", n)))
		if st != 201 {
			fail("POST", "/v1/events", st)
			return
		}
		ack(ev["event_id"].(string))
		st, d, _ := post("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev["event_id"], "team_id": teamID})
		if st != 201 {
			fail("POST", "/v1/teams/dispatch", st)
			return
		}
		for _, to := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted} {
			if st, _, _ := post("PATCH", "/v1/missions/"+d["mission_id"].(string)+"/status", map[string]any{"status": to}); st != 200 {
				fail("PATCH", "/v1/missions/{id}/status", st)
				return
			}
		}
		completed.Add(1)
	})
	// 50 stream clients, reading until the end.
	var streamed atomic.Int64
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/v1/stream", nil)
			req.Header.Set(key[0], key[1])
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "event: ") {
					streamed.Add(1)
				}
			}
		}()
	}

	// Sampling.
	pid := s.cmd.Process.Pid
	var samples []soakSample
	began := time.Now()
	sample := func() {
		fam := soakMetrics(t, s, secret)
		mu.Lock()
		lat := latencies
		latencies = nil
		n := len(acked)
		mu.Unlock()
		anon, file := soakRSS(pid)
		smp := soakSample{at: time.Since(began).Round(time.Second), rss: anon, rssFile: file, heap: fam["go_memstats_heap_inuse_bytes"],
			goroutines: fam["go_goroutines"], fds: fam["process_open_fds"], outbox: fam["fieldrelay_outbox_depth"],
			dbBytes: fam["fieldrelay_bbolt_size_bytes"], acked: n, p99: p99(lat)}
		samples = append(samples, smp)
		t.Logf("soak %8s: rss anon %6.1f MB file %6.1f MB, heap %6.1f MB, goroutines %4.0f, fds %3.0f, outbox %5.0f, bbolt %7.1f MB, acked %7d, p99 %s",
			smp.at, smp.rss/(1<<20), smp.rssFile/(1<<20), smp.heap/(1<<20), smp.goroutines, smp.fds, smp.outbox, smp.dbBytes/(1<<20), smp.acked, smp.p99)
	}
	tick := time.NewTicker(every)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			sample()
		}
	}
	tick.Stop()
	wg.Wait()
	sample()
	t.Logf("soak: %d events acknowledged, %d missions completed, %d webhook calls (%d answered 503), %d stream messages",
		len(acked), completed.Load(), hooks.Load(), hookFails.Load(), streamed.Load())
	// A request the node failed (an error status, or no answer) while the run lasted is a
	// defect under a load this light; the ones in flight when the run ended are not counted.
	if len(failures) > 0 {
		t.Errorf("requests failed during the run (request and status: count; 0 is no answer): %v", failures)
	}

	if completed.Load() == 0 || hooks.Load() == 0 || streamed.Load() == 0 {
		t.Errorf("some load never ran: %d missions completed, %d webhook calls, %d stream messages", completed.Load(), hooks.Load(), streamed.Load())
	}
	if len(samples) >= 4 {
		body := samples[1:]
		third := max(len(body)/3, 1)
		first, last := body[:third], body[len(body)-third:]
		for _, b := range soakBounds {
			var mean, worst float64
			for _, smp := range first {
				mean += b.of(smp) / float64(len(first))
			}
			for _, smp := range last {
				worst = max(worst, b.of(smp))
			}
			if limit := mean*b.factor + b.slack; worst > limit {
				t.Errorf("%s trends upward: "+b.unitFormat+" in the last third against a mean of "+b.unitFormat+
					" in the first (bound "+b.unitFormat+")", b.name, worst, mean, limit)
			}
		}
	} else {
		t.Logf("soak: %d samples, too few to judge trends (run longer, or sample more often)", len(samples))
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v", err)
	}
	out, stderr, err := runCLI(bin, "", "check", "--data", data, "--json")
	var report store.CheckReport
	if jerr := json.Unmarshal(out, &report); jerr != nil || err != nil || !report.OK {
		t.Fatalf("fieldrelay check after the soak: %v %v\n%s%s", err, jerr, out, stderr)
	}
	db, err := store.Open(data, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	present := map[string]bool{}
	err = db.View(context.Background(), func(tx model.Tx) error {
		events, _, err := tx.Events(created.Tenant.ID, model.EventFilter{}, model.Page{Limit: 1 << 30})
		for _, ev := range events {
			present[ev.ID] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for id := range acked {
		if !present[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events are missing after the soak", missing, len(acked))
	}
}

// soakMetrics reads the node's /metrics into name → value (the first series of each).
func soakMetrics(t *testing.T, s *served, secret string) map[string]float64 {
	t.Helper()
	families, _ := scrapeMetrics(t, s, secret)
	out := map[string]float64{}
	for name, f := range families {
		if ms := f.GetMetric(); len(ms) > 0 {
			if g := ms[0].GetGauge(); g != nil {
				out[name] = g.GetValue()
			}
		}
	}
	return out
}

// soakRSS reads a process's anonymous and file-backed resident memory from /proc (0
// where there is none).
func soakRSS(pid int) (anon, file float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "RssAnon:" || f[0] == "RssFile:") {
			kb, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "RssAnon:" {
				anon = kb * 1024
			} else {
				file = kb * 1024
			}
		}
	}
	return anon, file
}

// p99 is the 99th percentile of ds (0 for none).
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*99/100)]
}
