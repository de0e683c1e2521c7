package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"io"
	"log"
	"math"

	"github.com/fieldrelay/fieldrelay/engine/model"

	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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
		!slices.Contains(model.StandardVerticals, ev.Vertical) || ev.IdempotencyKey == "":
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
	// One keep-alive connection per worker: the five first dials, and far fewer than
	// requests (on a starved machine a worker may rarely dial again, so not exactly five).
	if c := node.newConns.Load(); c < 5 || c > 10 || uint64(c) != rep.ConnectionsOpened || int(c) >= got/4 {
		t.Errorf("the node saw %d new connections for %d requests and the report %d, want 5 (one keep-alive per worker)",
			c, got, rep.ConnectionsOpened)
	}
	if rep.Requests == 0 || int(rep.Requests) >= got {
		t.Errorf("report %d requests, node %d: the warm-up must be sent and left out", rep.Requests, got)
	}
	if rep.DurationSeconds < 0.3 || rep.WarmupSeconds != 0.15 || rep.Errors != 0 || rep.OK != rep.Requests {
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
	fake := startFakeServer(t, data)
	node := startFakeNode(t, 0, false)
	r := run(t, a, "", "bench", "--url", node.srv.URL, "--data", data, "--tenants", "3", "--conns", "2",
		"--count", "30", "--warmup", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	node.check(t)
	if ops := fake.ran(); len(ops) != 3 || ops[0] != admin.OpTenantCreate {
		t.Fatalf("admin operations %v, want 3 × tenant.create", ops)
	}
	ts, err := fake.eng.AdminTenants(context.Background())
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
	if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "serve") {
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
		{"server-pid", []string{"bench", "--api-key", "k", "--server-pid", "-1"}},
		{"workload", []string{"bench", "--api-key", "k", "--workload", "dispatch"}},
		{"ca", []string{"bench", "--api-key", "k", "--ca", filepath.Join(t.TempDir(), "missing.pem")}},
	} {
		e := runJSONError(t, a, "", c.args...)
		if e.Error != string(model.KindValidation) || e.Field != c.field {
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

func TestBenchParseProcStat(t *testing.T) {
	// From a real /proc/PID/stat: utime 1234 and stime 567 are fields 14 and 15.
	const line = "4242 (fieldrelay) S 1 4242 4242 0 -1 4194560 51234 0 12 0 1234 567 0 0 20 0 18 0 1419171 1536000000 9876 " +
		"18446744073709551615 4194304 20000000 140724114843968 0 0 0 0 0 2143420159 0 0 0 17 3 0 0 2 0 0\n"
	cpu, err := parseProcStat(line)
	if err != nil || cpu != (procCPU{utime: 1234, stime: 567}) {
		t.Errorf("real line: %+v %v", cpu, err)
	}
	// A command name may hold spaces and parentheses: the fields count from its last ')'.
	odd := "77 (my (odd) name) R 1 77 77 0 -1 0 0 0 0 0 9 8 7 6 20 0 1 0 5 100 10"
	if cpu, err := parseProcStat(odd); err != nil || cpu != (procCPU{utime: 9, stime: 8}) {
		t.Errorf("odd name: %+v %v", cpu, err)
	}
	for _, bad := range []string{"", "4242 fieldrelay S 1 2 3", "4242 (fieldrelay) S 1 4242 4242 0 -1", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 5 0 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseProcStat(string(b)); err != nil {
			t.Errorf("/proc/self/stat: %v\n%s", err, b)
		}
	}
}

func TestBenchParseProcIO(t *testing.T) {
	const line = "rchar: 6976\nwchar: 123456789\nsyscr: 10\nsyscw: 42\nread_bytes: 0\nwrite_bytes: 98304000\ncancelled_write_bytes: 4096\n"
	got, err := parseProcIO(line)
	if err != nil || got != (procIO{writeBytes: 98304000, wchar: 123456789, hasWriteBytes: true, hasWchar: true}) {
		t.Errorf("real: %+v %v", got, err)
	}
	// Without block I/O accounting only the character counters are there.
	got, err = parseProcIO("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\n")
	if err != nil || got != (procIO{wchar: 2, hasWchar: true}) {
		t.Errorf("wchar only: %+v %v", got, err)
	}
	if _, err := parseProcIO("rchar: 1\nread_bytes: 2\n"); err == nil {
		t.Error("a file without write_bytes and wchar parsed")
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/self/io")
		if err != nil {
			t.Skipf("/proc/self/io: %v", err)
		}
		if got, err := parseProcIO(string(b)); err != nil || !got.hasWchar {
			t.Errorf("/proc/self/io: %+v %v\n%s", got, err, b)
		}
	}
}

func TestBenchClockTicks(t *testing.T) {
	auxv := func(word int, pairs ...uint64) []byte {
		var b []byte
		for _, v := range pairs {
			if word == 4 {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			} else {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		}
		return b
	}
	for _, word := range []int{4, 8} {
		// AT_PAGESZ 4096, AT_CLKTCK 100, AT_NULL.
		if hz, ok := auxvClockTicks(auxv(word, 6, 4096, 17, 100, 0, 0), word, binary.LittleEndian); !ok || hz != 100 {
			t.Errorf("%d-byte words: %d %v", word, hz, ok)
		}
		if _, ok := auxvClockTicks(auxv(word, 6, 4096, 0, 0, 17, 100), word, binary.LittleEndian); ok {
			t.Errorf("%d-byte words: AT_CLKTCK read past AT_NULL", word)
		}
	}
	if _, ok := auxvClockTicks(nil, 8, binary.LittleEndian); ok {
		t.Error("an empty vector has a clock")
	}
	if hz := clockTicks(filepath.Join(t.TempDir(), "missing")); hz != defaultClockTicks {
		t.Errorf("no auxv: %d Hz", hz)
	}
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		if hz := clockTicks("/proc/self/auxv"); hz != 100 {
			t.Errorf("CLK_TCK of this process: %d, want 100 as `getconf CLK_TCK` says", hz)
		}
	}
}

func TestBenchServerPIDFromAdminSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	if runtime.GOOS != "linux" {
		if _, err := adminSocketPID(context.Background(), path); err == nil {
			t.Error("a pid without a socket")
		}
		t.Skip("SO_PEERCRED is Linux only")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	pid, err := adminSocketPID(context.Background(), path)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("pid %d %v, want this test's %d", pid, err, os.Getpid())
	}
	if _, err := adminSocketPID(context.Background(), path+".missing"); err == nil {
		t.Error("a pid from a missing socket")
	}
}

func TestBenchServerReport(t *testing.T) {
	p := &serverProbe{pid: 4242, pidFrom: "--server-pid", dbPath: "/data/fieldrelay.db", clkTck: 100}
	before := serverSample{cpu: procCPU{utime: 1000, stime: 200}, io: procIO{writeBytes: 1 << 20, wchar: 5 << 20, hasWriteBytes: true, hasWchar: true}, dbSize: 32 << 20}
	after := serverSample{cpu: procCPU{utime: 1600, stime: 400}, io: procIO{writeBytes: 1<<20 + 80_000_000, wchar: 5<<20 + 90_000_000, hasWriteBytes: true, hasWchar: true}, dbSize: 64 << 20}
	r := p.report(before, after, 100_000, 10)
	// 8 s of CPU over 100000 requests is 80 µs each; 80 MB written is 800 bytes each.
	if r.CPUSeconds == nil || *r.CPUSeconds != 8 || *r.CPUUserSeconds != 6 || *r.CPUSystemSeconds != 2 || *r.CPUCores != 0.8 ||
		*r.CPUMicrosPerRequest != 80 || r.ClkTck != 100 {
		t.Errorf("cpu: %s", benchJSON(t, r))
	}
	if r.DiskBytesSource != "write_bytes" || *r.DiskBytes != 80_000_000 || *r.WriteBytes != 80_000_000 || *r.WChar != 90_000_000 || *r.DiskBytesPerRequest != 800 {
		t.Errorf("disk: %s", benchJSON(t, r))
	}
	if *r.DBBytesBefore != 32<<20 || *r.DBBytesAfter != 64<<20 || *r.DBGrowthBytes != 32<<20 || *r.DBGrowthPerRequest != 335.5 || len(r.Notes) != 0 {
		t.Errorf("db: %s", benchJSON(t, r))
	}
	var text strings.Builder
	r.printText(&text)
	for _, want := range []string{
		"server:      pid 4242 (from --server-pid)",
		"server cpu:  8.000s (user 6.000s, system 2.000s, 0.80 cores; /proc/4242/stat at 100 Hz) = 80.0 µs/request",
		"disk writes: 76.29 MiB (write_bytes of /proc/4242/io) = 800 bytes/request (800 B)",
		"db file:     /data/fieldrelay.db 32.00 MiB -> 64.00 MiB (+33554432 bytes = 336 bytes/request)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}

	// write_bytes that does not move (tmpfs) gives way to wchar, with a note.
	after.io.writeBytes = before.io.writeBytes
	r = p.report(before, after, 1000, 1)
	if r.DiskBytesSource != "wchar" || *r.DiskBytes != 90_000_000 || *r.WriteBytes != 0 || *r.DiskBytesPerRequest != 90_000 ||
		len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "wchar") {
		t.Errorf("wchar fallback: %s", benchJSON(t, r))
	}

	// No request measured: totals without figures per request.
	r = p.report(before, before, 0, 0)
	if *r.CPUSeconds != 0 || r.CPUMicrosPerRequest != nil || r.DiskBytesPerRequest != nil || r.DBGrowthPerRequest != nil || r.CPUCores != nil {
		t.Errorf("no requests: %s", benchJSON(t, r))
	}

	// Unreadable /proc and a missing database file are said, and the rest goes on.
	unreadable := serverSample{cpuErr: os.ErrPermission, ioErr: os.ErrPermission, dbErr: os.ErrNotExist}
	r = p.report(unreadable, unreadable, 10, 1)
	if r.CPUSeconds != nil || r.DiskBytes != nil || r.DBGrowthBytes != nil || len(r.Notes) != 3 ||
		!strings.Contains(r.Notes[0], "/proc unreadable") || !strings.Contains(r.Notes[1], "/proc unreadable") {
		t.Errorf("unreadable: %s", benchJSON(t, r))
	}
	text.Reset()
	r.printText(&text)
	if strings.Count(text.String(), "server note: ") != 3 || strings.Contains(text.String(), "server cpu:") {
		t.Errorf("unreadable, as text:\n%s", text.String())
	}

	// A pid that now names another process: counters going backwards are not figures.
	r = p.report(after, before, 10, 1)
	if r.CPUSeconds != nil || r.DiskBytes != nil || len(r.Notes) != 2 {
		t.Errorf("backwards: %s", benchJSON(t, r))
	}
}

func benchJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBenchServerFigures(t *testing.T) {
	// The fake node runs in this process, so this process is the server to measure.
	node := startFakeNode(t, 0, false)
	rep := runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "4", "--duration", "300ms",
		"--warmup", "50ms", "--server-pid", strconv.Itoa(os.Getpid()))
	node.check(t)
	s := rep.Server
	if s == nil {
		t.Fatal("no server figures with --server-pid")
	}
	if runtime.GOOS != "linux" {
		if len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "/proc unreadable") {
			t.Errorf("without /proc: %s", benchJSON(t, s))
		}
		return
	}
	if s.PID != os.Getpid() || s.PIDFrom != "--server-pid" || s.CPUSeconds == nil || *s.CPUSeconds <= 0 ||
		s.CPUMicrosPerRequest == nil || *s.CPUMicrosPerRequest <= 0 || s.DiskBytes == nil || s.DBFile != "" {
		t.Errorf("server figures: %s", benchJSON(t, s))
	}

	// With --data the pid is the one behind the admin socket (this process too), and the
	// database file is measured; FIELDRELAY_SERVER_PID of a process that is gone is said.
	data := t.TempDir()
	startFakeServer(t, data)
	r := run(t, newTestApp(nil), "", "bench", "--url", node.srv.URL, "--api-key", "k", "--data", data,
		"--conns", "2", "--duration", "200ms", "--warmup", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("server:      pid %d (from %s)", os.Getpid(), adminSocket(data)),
		"server cpu:  ", "µs/request", "disk writes: ",
		"db file:     " + filepath.Join(data, "fieldrelay.db"),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	gone := newTestApp(map[string]string{"FIELDRELAY_SERVER_PID": "999999999"})
	rep = runJSON[benchReport](t, gone, "", "bench", "--url", node.srv.URL, "--api-key", "k", "--count", "5", "--warmup", "0")
	if rep.OK != 5 || rep.Server == nil || rep.Server.PID != 999999999 || rep.Server.CPUSeconds != nil ||
		len(rep.Server.Notes) != 2 || !strings.Contains(rep.Server.Notes[0], "/proc unreadable") {
		t.Errorf("a pid that is gone: %+v %s", rep, benchJSON(t, rep.Server))
	}
	node.check(t)
}

// fakeFieldNode is an httptest server that plays the field-response API minimally, with
// its state in maps: POST /v1/events, POST /v1/teams, POST /v1/teams/dispatch, PATCH
// /v1/missions/:id/status (the lifecycle, ACK straight from CREATED, FAILED from any open
// state, COMPLETED and FAILED free the team and close the event) and GET /v1/missions/:id.
// It answers failStatus, without any effect, to every failEvery-th request of failStep,
// and 403 to POST /v1/teams when refuseTeams is set. It does not use the engine.
type fakeFieldNode struct {
	srv         *httptest.Server
	failStep    string
	failEvery   int
	failStatus  int
	refuseTeams bool

	mu       sync.Mutex
	seq      int
	events   map[string]*fakeEvent
	teams    map[string]*fakeTeam
	missions map[string]*fakeMission
	steps    map[string]int // requests by step name
	failed   map[string]int // injected failures by step name
	problems []string
}

type fakeEvent struct {
	key, vertical string
	closed        bool
}

type fakeTeam struct {
	key, name, vertical, status string
}

type fakeMission struct {
	event, team, status string
	feedback            map[string]any
}

func startFakeFieldNode(t *testing.T) *fakeFieldNode {
	t.Helper()
	n := &fakeFieldNode{events: map[string]*fakeEvent{}, teams: map[string]*fakeTeam{}, missions: map[string]*fakeMission{},
		steps: map[string]int{}, failed: map[string]int{}}
	n.srv = httptest.NewServer(http.HandlerFunc(n.handle))
	t.Cleanup(n.srv.Close)
	return n
}

// fakeMoves are the moves the fake node allows, besides FAILED from any open state.
var fakeMoves = map[string]string{"CREATED": "ACK", "ACK": "ON_ROUTE", "ON_ROUTE": "ON_SITE", "ON_SITE": "COMPLETED"}

func (n *fakeFieldNode) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	key := r.Header.Get("x-svc-api-key")
	answer := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	fail := func(status int, code string) { answer(status, map[string]string{"error": code, "message": code}) }
	n.mu.Lock()
	defer n.mu.Unlock()
	problem := func(format string, args ...any) { n.problems = append(n.problems, fmt.Sprintf(format, args...)) }
	if r.Header.Get("Content-Type") != "application/json" || key == "" {
		problem("%s %s: content type %q, key %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"), key)
	}
	n.seq++
	id := fmt.Sprintf("0190a0b0-0000-7000-8000-%012d", n.seq)

	// step names the request as the report does, for injected failures and counts.
	step := ""
	var move struct {
		Status   string         `json:"status"`
		Feedback map[string]any `json:"feedback"`
	}
	rest, underMissions := strings.CutPrefix(r.URL.Path, "/v1/missions/")
	missionID, isStatus := strings.CutSuffix(rest, "/status")
	isMove := underMissions && isStatus
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/events":
		step = "event"
	case r.Method == "POST" && r.URL.Path == "/v1/teams/dispatch":
		step = "dispatch"
	case r.Method == "PATCH" && isMove:
		if err := json.Unmarshal(raw, &move); err != nil {
			problem("PATCH %s: %v", r.URL.Path, err)
		}
		step = strings.ToLower(move.Status)
	}
	if step != "" {
		n.steps[step]++
		if step == n.failStep && n.failEvery > 0 && n.steps[step]%n.failEvery == 0 {
			n.failed[step]++
			fail(n.failStatus, "injected")
			return
		}
	}

	switch {
	case step == "event":
		var ev struct {
			Vertical string `json:"vertical"`
			Payload  struct {
				Lat float64 `json:"lat"`
				Lng float64 `json:"lng"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || len(raw) != benchBodySize || ev.Payload.Lat < 45.7 || ev.Payload.Lat > 45.8 {
			problem("event body: %v: %s", err, raw)
		}
		n.events[id] = &fakeEvent{key: key, vertical: ev.Vertical}
		answer(http.StatusCreated, map[string]string{"event_id": id, "status": "delivered"})

	case r.Method == "POST" && r.URL.Path == "/v1/teams":
		if n.refuseTeams {
			fail(http.StatusForbidden, "forbidden")
			return
		}
		var in model.TeamInput
		if err := json.Unmarshal(raw, &in); err != nil || in.Name == "" || len(in.Verticals) != 1 || len(in.Equipment) == 0 ||
			len(in.Members) != 1 || in.Members[0].Lat == nil || in.Members[0].Lng == nil ||
			math.Abs(*in.Members[0].Lat-45.75) > 0.05 || math.Abs(*in.Members[0].Lng-4.85) > 0.05 {
			problem("team body: %v: %s", err, raw)
			fail(http.StatusBadRequest, "validation_error")
			return
		}
		n.teams[id] = &fakeTeam{key: key, name: in.Name, vertical: in.Verticals[0], status: "available"}
		answer(http.StatusCreated, map[string]any{"id": id, "name": in.Name, "status": "available"})

	case step == "dispatch":
		var in struct {
			EventID string `json:"event_id"`
			TeamID  string `json:"team_id"`
		}
		_ = json.Unmarshal(raw, &in)
		ev, team := n.events[in.EventID], n.teams[in.TeamID]
		switch {
		case ev == nil || team == nil || ev.key != key || team.key != key:
			problem("dispatch of an unknown event or team, or another tenant's: %s", raw)
			fail(http.StatusNotFound, "not_found")
		case ev.closed:
			problem("dispatch to a closed event: %s", raw)
			fail(http.StatusConflict, "event_closed")
		case team.status != "available":
			problem("dispatch of a busy team: %s", raw)
			fail(http.StatusConflict, "team_unavailable")
		default:
			if ev.vertical != team.vertical {
				problem("team %s (%s) sent to a %s event", team.name, team.vertical, ev.vertical)
			}
			team.status = "on_mission"
			n.missions[id] = &fakeMission{event: in.EventID, team: in.TeamID, status: "CREATED"}
			answer(http.StatusCreated, map[string]string{"id": id, "event_id": in.EventID, "team_id": in.TeamID, "mission_id": id})
		}

	case r.Method == "PATCH" && isMove:
		m := n.missions[missionID]
		switch {
		case m == nil || n.teams[m.team].key != key:
			problem("move of an unknown mission %s", missionID)
			fail(http.StatusNotFound, "not_found")
		case m.status == "COMPLETED" || m.status == "FAILED":
			fail(http.StatusConflict, "mission_closed")
		case move.Status != "FAILED" && fakeMoves[m.status] != move.Status:
			problem("move %s → %s", m.status, move.Status)
			fail(http.StatusConflict, "invalid_transition")
		default:
			m.status = move.Status
			if move.Feedback != nil {
				m.feedback = move.Feedback
			}
			if move.Status == "COMPLETED" || move.Status == "FAILED" {
				if note, _ := move.Feedback["note"].(string); note == "" {
					problem("%s without a feedback note: %s", move.Status, raw)
				}
				n.teams[m.team].status = "available"
				n.events[m.event].closed = true
			}
			answer(http.StatusOK, map[string]any{"id": missionID, "status": m.status, "feedback": m.feedback})
		}

	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/missions/"):
		if m := n.missions[strings.TrimPrefix(r.URL.Path, "/v1/missions/")]; m != nil {
			answer(http.StatusOK, map[string]any{"status": m.status})
			return
		}
		fail(http.StatusNotFound, "not_found")

	default:
		problem("unexpected %s %s", r.Method, r.URL.Path)
		fail(http.StatusNotFound, "not_found")
	}
}

// check fails on anything the node did not like and on a mission or team left open:
// every cycle ends its mission. It returns the missions by status.
func (n *fakeFieldNode) check(t *testing.T) map[string]int {
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
	byStatus := map[string]int{}
	for _, m := range n.missions {
		byStatus[m.status]++
	}
	if byStatus["COMPLETED"]+byStatus["FAILED"] != len(n.missions) {
		t.Errorf("missions left open: %v", byStatus)
	}
	for id, tm := range n.teams {
		if tm.status != "available" {
			t.Errorf("team %s (%s) left %s", id, tm.name, tm.status)
		}
	}
	return byStatus
}

func TestBenchLifecycleCount(t *testing.T) {
	node := startFakeFieldNode(t)
	rep := runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k1,k2", "--conns", "4", "--count", "60",
		"--warmup", "0", "--workload", "lifecycle")
	missions := node.check(t)
	lc := rep.Lifecycle
	if rep.Workload != "lifecycle" || lc == nil {
		t.Fatalf("report: %s", benchJSON(t, rep))
	}
	if lc.Cycles != 60 || lc.CyclesFailed != 0 || missions["COMPLETED"] != 60 || len(missions) != 1 {
		t.Errorf("cycles %d failed %d, missions on the node %v, want exactly 60 completed", lc.Cycles, lc.CyclesFailed, missions)
	}
	if rep.Requests != 360 || rep.OK != 360 || rep.Errors != 0 || lc.RequestsPerCycle != 6 || lc.CyclesPerSec <= 0 ||
		rep.RequestsPerSec < 5*lc.CyclesPerSec {
		t.Errorf("requests %d ok %d errors %d, %.2f cycles/s, %.2f req/s", rep.Requests, rep.OK, rep.Errors, lc.CyclesPerSec, rep.RequestsPerSec)
	}
	var names []string
	for _, s := range lc.Steps {
		names = append(names, s.Step)
		if s.Requests != 60 || s.OK != 60 || s.Errors != 0 || s.LatencyMS.Max <= 0 || s.LatencyMS.P50 > s.LatencyMS.P99 {
			t.Errorf("step %s: %+v", s.Step, s)
		}
	}
	if strings.Join(names, ",") != "event,dispatch,ack,on_route,on_site,completed" {
		t.Errorf("steps %v", names)
	}
	if l := lc.CycleLatencyMS; l.Max <= 0 || l.Mean < lc.Steps[0].LatencyMS.Mean || l.P50 > l.P99 {
		t.Errorf("cycle latency %+v", l)
	}
	node.mu.Lock()
	keys := map[string]int{}
	for _, tm := range node.teams {
		keys[tm.key]++
	}
	node.mu.Unlock()
	if lc.TeamsSetUp != 4 || lc.TeamsRecreated != 0 || len(node.teams) != 4 || keys["k1"] != 2 || keys["k2"] != 2 {
		t.Errorf("teams: set up %d, recreated %d, by key %v", lc.TeamsSetUp, lc.TeamsRecreated, keys)
	}

	// The text report has the cycles and a line per step.
	r := run(t, newTestApp(nil), "", "bench", "--url", node.srv.URL, "--api-key", "k", "--conns", "2", "--count", "10",
		"--warmup", "0", "--workload", "lifecycle")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"lifecycle workload", "teams:       2 created before the run", "cycles:      10 ok, 0 failed",
		"requests:    60 (60 ok", "\n  event ", "\n  dispatch ", "\n  ack ", "\n  on_route ", "\n  on_site ", "\n  completed ", "\n  cycle "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "created 2 teams") {
		t.Errorf("stderr: %s", r.stderr)
	}
	node.check(t)
}

func TestBenchLifecycleErrorsByStep(t *testing.T) {
	// Every 7th ON_SITE answers 500: the cycle fails at that step, the mission is moved
	// to FAILED to free the team, and the next cycle goes on with the same team.
	node := startFakeFieldNode(t)
	node.failStep, node.failEvery, node.failStatus = "on_site", 7, http.StatusInternalServerError
	rep := runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "3", "--count", "70",
		"--warmup", "0", "--workload", "lifecycle")
	missions := node.check(t)
	lc := rep.Lifecycle
	failed := uint64(node.failed["on_site"])
	if failed != 10 || lc.Cycles+lc.CyclesFailed != 70 || lc.CyclesFailed != failed || lc.Recoveries != failed ||
		lc.RecoveryErrors != 0 || lc.TeamsRecreated != 0 {
		t.Fatalf("injected %d failures; report: %s", failed, benchJSON(t, lc))
	}
	if missions["COMPLETED"] != int(lc.Cycles) || missions["FAILED"] != int(failed) {
		t.Errorf("missions on the node %v", missions)
	}
	for _, s := range lc.Steps {
		want := uint64(70)
		if s.Step == "completed" {
			want = lc.Cycles
		}
		errs := uint64(0)
		if s.Step == "on_site" {
			errs = failed
		}
		if s.Requests != want || s.Errors != errs || s.ErrorsByStatus["500"] != errs || s.OK != want-errs {
			t.Errorf("step %s: %+v", s.Step, s)
		}
	}
	if rep.Errors != failed || rep.ErrorsByStatus["500"] != failed || rep.Requests != 70*5+lc.Cycles {
		t.Errorf("totals: requests %d errors %d %v", rep.Requests, rep.Errors, rep.ErrorsByStatus)
	}

	// Every 5th dispatch answers 409 team_unavailable: the worker takes a new team before
	// its next cycle (the last failure may end the run before that).
	node = startFakeFieldNode(t)
	node.failStep, node.failEvery, node.failStatus = "dispatch", 5, http.StatusConflict
	rep = runBenchJSON(t, "--url", node.srv.URL, "--api-key", "k", "--conns", "2", "--count", "40",
		"--warmup", "0", "--workload", "lifecycle")
	node.check(t)
	lc = rep.Lifecycle
	if lc.CyclesFailed != 8 || lc.Cycles != 32 || lc.TeamsRecreated < 6 || lc.TeamsRecreated > 8 || lc.Recoveries != 0 ||
		lc.Steps[1].ErrorsByStatus["409"] != 8 || lc.Steps[2].Requests != 32 || uint64(len(node.teams)) != 2+lc.TeamsRecreated {
		t.Errorf("409 on dispatch: %s (teams on the node: %d)", benchJSON(t, lc), len(node.teams))
	}
}

func TestBenchLifecycleDurationWarmupAndEnv(t *testing.T) {
	node := startFakeFieldNode(t)
	a := newTestApp(map[string]string{"FIELDRELAY_WORKLOAD": "lifecycle"})
	rep := runJSON[benchReport](t, a, "", "bench", "--url", node.srv.URL, "--api-key", "k", "--conns", "3",
		"--duration", "300ms", "--warmup", "100ms")
	missions := node.check(t) // the cycles under way when the time was up were finished
	lc := rep.Lifecycle
	if rep.Workload != "lifecycle" || lc == nil || lc.Cycles == 0 || lc.CyclesFailed != 0 {
		t.Fatalf("report: %s", benchJSON(t, rep))
	}
	if int(lc.Cycles) >= missions["COMPLETED"] {
		t.Errorf("%d cycles reported, %d on the node: the warm-up's must be left out", lc.Cycles, missions["COMPLETED"])
	}
	if rep.Requests != 6*lc.Cycles || rep.DurationSeconds < 0.3 || rep.WarmupSeconds != 0.1 {
		t.Errorf("report: %s", benchJSON(t, rep))
	}
}

func TestBenchLifecycleTeams(t *testing.T) {
	// A node that refuses teams: the run does not start.
	node := startFakeFieldNode(t)
	node.refuseTeams = true
	e := runJSONError(t, newTestApp(nil), "", "bench", "--url", node.srv.URL, "--api-key", "k", "--count", "5",
		"--workload", "lifecycle")
	if e.Error != string(model.KindUnavailable) || !strings.Contains(e.Message, "team") || !strings.Contains(e.Message, "403") {
		t.Errorf("teams refused: %+v", e)
	}
	node.mu.Lock()
	if node.steps["event"] != 0 {
		t.Errorf("%d events posted without a team", node.steps["event"])
	}
	node.mu.Unlock()

	// Without teams made beforehand (runBench on its own), each worker creates its own;
	// an interrupt stops the run and abandons the cycles under way.
	node = startFakeFieldNode(t)
	cfg := &benchConfig{target: node.srv.URL + "/v1/events", base: node.srv.URL, workload: benchWorkloadLifecycle,
		conns: 3, duration: time.Hour, timeout: 5 * time.Second, keys: []string{"k"}, runID: "test", progressEvery: 40 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	progress := &syncBuffer{}
	rep := runBench(ctx, cfg, progress)
	lc := rep.Lifecycle
	if !rep.Interrupted || lc.Cycles == 0 || lc.TeamsSetUp != 0 || lc.TeamsRecreated != 3 || lc.CyclesFailed != 0 {
		t.Errorf("report: %s", benchJSON(t, rep))
	}
	if !strings.Contains(progress.String(), "cycles ") {
		t.Errorf("progress: %q", progress.String())
	}
	node.mu.Lock()
	if len(node.problems) > 0 {
		t.Errorf("problems: %v", node.problems)
	}
	node.mu.Unlock()
}

func TestBenchLifecycleAgainstServe(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	s := startServe(t, a, "--data", data, "--plain-http")
	rep := runBenchJSON(t, "--url", s.base, "--data", data, "--tenants", "2", "--conns", "4", "--count", "20",
		"--warmup", "0", "--workload", "lifecycle")
	if lc := rep.Lifecycle; lc == nil || lc.Cycles != 20 || rep.Requests != 120 || rep.Errors != 0 || lc.TeamsSetUp != 4 {
		t.Fatalf("against serve: %s", benchJSON(t, rep))
	}
}
