package cli

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

func TestBenchHistogramBuckets(t *testing.T) {
	for i := range histBuckets {
		lo, hi := histBounds(i)
		if histIndex(lo) != i || histIndex(hi) != i {
			t.Fatalf("bucket %d [%d, %d]: its bounds fall in %d and %d", i, lo, hi, histIndex(lo), histIndex(hi))
		}
		if i > 0 {
			if _, prevHi := histBounds(i - 1); prevHi+1 != lo {
				t.Fatalf("bucket %d starts at %d, the previous one ends at %d", i, lo, prevHi)
			}
		}
		if float64(hi-lo)/float64(lo+1) > 1.0/128 {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/128 of its values", i, lo, hi)
		}
	}
	if histIndex(math.MaxUint64) != histBuckets-1 {
		t.Fatal("a huge value does not land in the last bucket")
	}
}

func TestBenchHistogramPercentiles(t *testing.T) {
	within := func(name string, got, want time.Duration) {
		t.Helper()
		if d := math.Abs(float64(got-want)) / float64(want); d > 0.005 {
			t.Errorf("%s = %v, want %v ±0.5%% (off by %.2f%%)", name, got, want, d*100)
		}
	}
	// Uniform 1 µs … 100 ms in 1 µs steps, recorded in a shuffled order over two
	// histograms that are then merged, as the workers' are.
	values := make([]time.Duration, 100000)
	for i := range values {
		values[i] = time.Duration(i+1) * time.Microsecond
	}
	mrand.Shuffle(len(values), func(i, j int) { values[i], values[j] = values[j], values[i] })
	var a, b latencyHistogram
	for i, v := range values {
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	var h latencyHistogram
	h.merge(&a)
	h.merge(&b)
	if h.n != 100000 {
		t.Fatalf("n = %d", h.n)
	}
	within("p50", h.quantile(0.50), 50*time.Millisecond)
	within("p90", h.quantile(0.90), 90*time.Millisecond)
	within("p99", h.quantile(0.99), 99*time.Millisecond)
	within("p99.9", h.quantile(0.999), 99900*time.Microsecond)
	if got := h.quantile(1); got != 100*time.Millisecond {
		t.Errorf("max = %v, want exactly 100ms", got)
	}
	if h.min != uint64(time.Microsecond) || h.mean() != 50000500*time.Nanosecond {
		t.Errorf("min %d ns, mean %v", h.min, h.mean())
	}
	s := h.summary()
	if math.Abs(s.P50-50) > 0.25 || math.Abs(s.P90-90) > 0.45 || math.Abs(s.P99-99) > 0.5 || s.Max != 100 || s.Min != 0 || s.Mean != 50 {
		t.Errorf("summary in ms: %+v", s)
	}

	// Skewed: 990 answers at 2 ms and 10 at 250 ms, the shape of a node that stalls.
	var sk latencyHistogram
	for i := range 1000 {
		if i%100 == 0 {
			sk.record(250 * time.Millisecond)
		} else {
			sk.record(2 * time.Millisecond)
		}
	}
	within("skewed p50", sk.quantile(0.50), 2*time.Millisecond)
	within("skewed p99", sk.quantile(0.99), 2*time.Millisecond)
	within("skewed p99.5", sk.quantile(0.995), 250*time.Millisecond)
	if sk.quantile(1) != 250*time.Millisecond {
		t.Errorf("skewed max %v", sk.quantile(1))
	}

	// Below 256 ns every value has its bucket: exact.
	var small latencyHistogram
	for v := 1; v <= 200; v++ {
		small.record(time.Duration(v))
	}
	if small.quantile(0.5) != 100 || small.quantile(0.9) != 180 || small.quantile(0.01) != 2 {
		t.Errorf("small: p50 %d p90 %d p1 %d", small.quantile(0.5), small.quantile(0.9), small.quantile(0.01))
	}

	var empty latencyHistogram
	if empty.quantile(0.5) != 0 || empty.mean() != 0 || empty.summary() != (latencySummary{}) {
		t.Error("an empty histogram does not report zeros")
	}
}

// fakeNode is an httptest server that plays POST /v1/events: it checks each body, answers
// 201 JSON, and 500 to every failEvery-th request.
type fakeNode struct {
	srv       *httptest.Server
	failEvery int
	newConns  atomic.Int64

	mu       sync.Mutex
	requests int
	failed   int
	keys     map[string]int
	idem     map[string]bool
	sizes    map[int]int
	problems []string
}

func startFakeNode(t *testing.T, failEvery int, tlsOn bool) *fakeNode {
	t.Helper()
	n := &fakeNode{failEvery: failEvery, keys: map[string]int{}, idem: map[string]bool{}, sizes: map[int]int{}}
	n.srv = httptest.NewUnstartedServer(http.HandlerFunc(n.handle))
	n.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.newConns.Add(1)
		}
	}
	n.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS test's handshake failures
	if tlsOn {
		n.srv.StartTLS()
	} else {
		n.srv.Start()
	}
	t.Cleanup(n.srv.Close)
	return n
}

func (n *fakeNode) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var ev struct {
		Type           string `json:"type"`
		Priority       string `json:"priority"`
		Vertical       string `json:"vertical"`
		IdempotencyKey string `json:"idempotency_key"`
		Payload        struct {
			Lat               float64  `json:"lat"`
			Lng               float64  `json:"lng"`
			Severity          string   `json:"severity"`
			RequiredEquipment []string `json:"required_equipment"`
			Description       string   `json:"description"`
		} `json:"payload"`
	}
	var problem string
	switch err := json.Unmarshal(raw, &ev); {
	case err != nil:
		problem = fmt.Sprintf("invalid JSON: %v: %s", err, raw)
	case r.Method != http.MethodPost || r.URL.Path != "/v1/events" || r.Header.Get("Content-Type") != "application/json":
		problem = fmt.Sprintf("%s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	case ev.Type == "" || !slices.Contains([]string{"critical", "high", "normal", "low"}, ev.Priority) ||
		!slices.Contains(engine.StandardVerticals, ev.Vertical) || ev.IdempotencyKey == "":
		problem = fmt.Sprintf("bad event fields: %s", raw)
	case ev.Payload.Lat < 45.7 || ev.Payload.Lat > 45.8 || ev.Payload.Lng < 4.8 || ev.Payload.Lng > 4.9 ||
		!slices.Contains([]string{"critical", "high", "medium", "low"}, ev.Payload.Severity) || len(ev.Payload.RequiredEquipment) == 0 || ev.Payload.Description == "":
		problem = fmt.Sprintf("bad payload: %s", raw)
	}
	n.mu.Lock()
	n.requests++
	fail := n.failEvery > 0 && n.requests%n.failEvery == 0
	if fail {
		n.failed++
	}
	n.keys[r.Header.Get("x-svc-api-key")]++
	if n.idem[ev.IdempotencyKey] {
		problem = "idempotency key repeated: " + ev.IdempotencyKey
	}
	n.idem[ev.IdempotencyKey] = true
	n.sizes[len(raw)]++
	if problem != "" {
		n.problems = append(n.problems, problem)
	}
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"internal_error","message":"boom","request_id":"r"}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"event_id":"0190a0b0-0000-7000-8000-000000000000","status":"delivered","channel_selected":"rest_full","created_at":"2026-06-09T10:11:12.345Z","request_id":"r"}`)
}

// check fails on any body the node did not like and returns the number of requests.
func (n *fakeNode) check(t *testing.T) int {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, p := range n.problems {
		if i == 5 {
			t.Errorf("… and %d more", len(n.problems)-5)
			break
		}
		t.Error(p)
	}
	for size, c := range n.sizes {
		if size != benchBodySize {
			t.Errorf("%d bodies of %d bytes, want %d", c, size, benchBodySize)
		}
	}
	return n.requests
}

func runBenchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	return runJSON[benchReport](t, newTestApp(nil), "", append([]string{"bench"}, args...)...)
}

func TestBenchCountAndErrors(t *testing.T) {
	node := startFakeNode(t, 25, false)
	rep := runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k1", "--api-key", "k2,k3",
		"--conns", "6", "--count", "500", "--warmup", "0")
	got := node.check(t)
	if got != 500 || rep.Requests != 500 {
		t.Fatalf("the node got %d requests and the report says %d, want exactly 500", got, rep.Requests)
	}
	if rep.Errors != 20 || rep.ErrorsByStatus["500"] != 20 || rep.OK != 480 || len(rep.TransportErrors) != 0 {
		t.Errorf("errors %d by status %v transport %v ok %d, want 20 × 500 and 480 ok",
			rep.Errors, rep.ErrorsByStatus, rep.TransportErrors, rep.OK)
	}
	if len(node.keys) != 3 || node.keys["k1"] < 100 || node.keys["k2"] < 100 || node.keys["k3"] < 100 {
		t.Errorf("keys used: %v, want k1, k2, k3 in turn", node.keys)
	}
	l := rep.LatencyMS
	if rep.Conns != 6 || rep.Tenants != 3 || rep.BodyBytes != benchBodySize || rep.RequestsPerSec <= 0 || rep.DurationSeconds <= 0 ||
		l.Max <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || rep.Interrupted {
		t.Errorf("report: %+v", rep)
	}
}

func TestBenchDurationConnsAndWarmup(t *testing.T) {
	node := startFakeNode(t, 0, false)
	rep := runBenchJSON(t, "--url", node.srv.URL+"/", "--api-key", "k", "--conns", "5",
		"--duration", "300ms", "--warmup", "150ms")
	got := node.check(t)
	if c := node.newConns.Load(); c != 5 || rep.ConnectionsOpened != 5 {
		t.Errorf("the node saw %d new connections and the report %d, want 5 (one keep-alive per worker)", c, rep.ConnectionsOpened)
	}
	if rep.Requests == 0 || int(rep.Requests) >= got {
		t.Errorf("report %d requests, node %d: the warm-up must be sent and left out", rep.Requests, got)
	}
	if rep.DurationSeconds < 0.3 || rep.DurationSeconds > 1 || rep.WarmupSeconds != 0.15 || rep.Errors != 0 || rep.OK != rep.Requests {
		t.Errorf("report: %+v", rep)
	}
}

func TestBenchTransportAndTLSErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	rep := runBenchJSON(t, "--url", closed, "--api-key", "k", "--conns", "2", "--count", "10", "--warmup", "0")
	if rep.Requests != 10 || rep.Errors != 10 || rep.TransportErrors["connection_refused"] != 10 || rep.OK != 0 ||
		rep.TransportExamples["connection_refused"] == "" {
		t.Errorf("against a closed port: %+v", rep)
	}

	node := startFakeNode(t, 0, true)
	rep = runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0")
	if rep.TransportErrors["tls"] != 4 {
		t.Errorf("an unknown certificate: transport errors %v", rep.TransportErrors)
	}
	rep = runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0", "--insecure")
	if rep.OK != 4 {
		t.Errorf("--insecure: %+v", rep)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: node.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "2", "--count", "4", "--warmup", "0", "--ca", ca)
	if rep.OK != 4 {
		t.Errorf("--ca: %+v", rep)
	}
	node.check(t)
}

func TestBenchInterruptAndProgress(t *testing.T) {
	node := startFakeNode(t, 0, false)
	cfg := &benchConfig{target: node.srv.URL + "/v1/events", conns: 3, duration: time.Hour, warmup: 0,
		timeout: 5 * time.Second, keys: []string{"k"}, runID: "test", progressEvery: 40 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	progress := &syncBuffer{}
	begin := time.Now()
	rep := runBench(ctx, cfg, progress)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("the run took %v after the interrupt", took)
	}
	if !rep.Interrupted || rep.Requests == 0 || rep.Errors != 0 {
		t.Errorf("report: %+v", rep)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "req/s") || !strings.Contains(lines[0], "errors 0") || strings.Contains(progress.String(), "\r") {
		t.Errorf("progress (not a terminal): %q", progress.String())
	}
	var text strings.Builder
	rep.printText(&text)
	for _, want := range []string{"conns:       3 (3 connections opened)", "interrupted", "req/s", "p50 ", "p99 ", "max "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}

	// On a terminal the line is rewritten in place and ended once.
	cfg.tty, cfg.count, cfg.warmup = true, 0, 100*time.Millisecond
	cfg.duration, cfg.runID = 100*time.Millisecond, "test2" // a new run: new idempotency keys
	progress = &syncBuffer{}
	runBench(context.Background(), cfg, progress)
	out := progress.String()
	if !strings.HasPrefix(out, "\r") || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || !strings.Contains(out, "warm-up") {
		t.Errorf("progress on a terminal: %q", out)
	}
	node.check(t)
}

func TestBenchCreatesTenants(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	admin := startFakeServer(t, data)
	node := startFakeNode(t, 0, false)
	r := run(t, a, "", "bench", "--url", node.srv.URL, "--data", data, "--tenants", "3", "--conns", "2",
		"--count", "30", "--warmup", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	node.check(t)
	if ops := admin.ran(); len(ops) != 3 || ops[0] != opTenantCreate {
		t.Fatalf("admin operations %v, want 3 × tenant.create", ops)
	}
	ts, err := admin.eng.Tenants(context.Background())
	if err != nil || len(ts) != 3 {
		t.Fatalf("tenants %v %v", ts, err)
	}
	for _, tn := range ts {
		if !strings.HasPrefix(tn.Slug, "bench-") || tn.LicenseType != engine.PlanMissionCritical {
			t.Errorf("tenant %s plan %s", tn.Slug, tn.LicenseType)
		}
		if !strings.Contains(r.stderr, tn.Slug) || !strings.Contains(r.stdout, tn.Slug) {
			t.Errorf("the tenant %s is not named in the output\nstdout: %s\nstderr: %s", tn.Slug, r.stdout, r.stderr)
		}
	}
	if len(node.keys) != 3 || !strings.Contains(r.stdout, "requests:    30 (30 ok") {
		t.Errorf("keys used %v\n%s", node.keys, r.stdout)
	}

	// Without a server on the data directory there is no tenant to create.
	e := runJSONError(t, a, "", "bench", "--url", node.srv.URL, "--data", t.TempDir(), "--count", "1")
	if e.Error != string(engine.KindUnavailable) || !strings.Contains(e.Message, "serve") {
		t.Errorf("no server: %+v", e)
	}
}

func TestBenchAgainstServe(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data, "--plain-http")
	rep := runBenchJSON(t, "--url", s.base, "--data", data, "--tenants", "2", "--conns", "4", "--count", "120", "--warmup", "0")
	if rep.ErrorsByStatus["404"] == 120 {
		t.Skip("this build does not serve POST /v1/events yet")
	}
	if rep.Requests != 120 || rep.OK != 120 || rep.Errors != 0 || len(rep.TenantsCreated) != 2 {
		t.Fatalf("against serve: %+v", rep)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	a := newTestApp(nil)
	for _, c := range []struct {
		field string
		args  []string
	}{
		{"api-key", []string{"bench"}},
		{"url", []string{"bench", "--api-key", "k", "--url", "ftp://x"}},
		{"path", []string{"bench", "--api-key", "k", "--path", "v1/events"}},
		{"conns", []string{"bench", "--api-key", "k", "--conns", "0"}},
		{"count", []string{"bench", "--api-key", "k", "--count", "-1"}},
		{"duration", []string{"bench", "--api-key", "k", "--duration", "0s"}},
		{"tenants", []string{"bench", "--data", "x", "--tenants", "0"}},
		{"ca", []string{"bench", "--api-key", "k", "--ca", filepath.Join(t.TempDir(), "missing.pem")}},
	} {
		e := runJSONError(t, a, "", c.args...)
		if e.Error != string(engine.KindValidation) || e.Field != c.field {
			t.Errorf("%v: %+v, want a validation_error on %s", c.args, e, c.field)
		}
	}
}

func TestBenchEventBody(t *testing.T) {
	w := newBenchWorker(7, &benchConfig{timeout: time.Second}, mrand.New(mrand.NewPCG(1, 2)))
	prios := map[string]int{}
	for i := range 2000 {
		b := w.event("run1")
		var ev benchEvent
		if len(b) != benchBodySize || json.Unmarshal(b, &ev) != nil {
			t.Fatalf("body %d: %d bytes: %s", i, len(b), b)
		}
		if want := fmt.Sprintf("bench-run1-7-%d", i); ev.IdempotencyKey != want {
			t.Fatalf("key %q, want %q", ev.IdempotencyKey, want)
		}
		prios[ev.Priority]++
	}
	if prios["normal"] < prios["high"] || prios["high"] < prios["low"] || prios["low"] < prios["critical"] || prios["critical"] == 0 {
		t.Errorf("priorities %v, want normal > high > low > critical > 0", prios)
	}
}
