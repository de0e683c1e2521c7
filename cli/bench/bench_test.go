package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/cli/bench/benchtest"
)

func TestBenchBodySize(t *testing.T) {
	if BodySize != benchtest.EventBodySize {
		t.Fatalf("bench posts %d-byte bodies, the fake node expects %d", BodySize, benchtest.EventBodySize)
	}
}

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
	if empty.quantile(0.5) != 0 || empty.mean() != 0 || empty.summary() != (LatencySummary{}) {
		t.Error("an empty histogram does not report zeros")
	}
}

func TestBenchInterruptAndProgress(t *testing.T) {
	node := benchtest.StartFakeNode(t, 0, false)
	cfg := &runConfig{target: node.Server.URL + "/v1/events", conns: 3, duration: time.Hour, warmup: 0,
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
	node.Check(t)
}

func TestBenchEventBody(t *testing.T) {
	w := newBenchWorker(7, &runConfig{timeout: time.Second}, mrand.New(mrand.NewPCG(1, 2)))
	prios := map[string]int{}
	for i := range 2000 {
		b := w.event("run1")
		var ev benchEvent
		if len(b) != BodySize || json.Unmarshal(b, &ev) != nil {
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
		t.Errorf("cpu: %s", benchtest.JSON(t, r))
	}
	if r.DiskBytesSource != "write_bytes" || *r.DiskBytes != 80_000_000 || *r.WriteBytes != 80_000_000 || *r.WChar != 90_000_000 || *r.DiskBytesPerRequest != 800 {
		t.Errorf("disk: %s", benchtest.JSON(t, r))
	}
	if *r.DBBytesBefore != 32<<20 || *r.DBBytesAfter != 64<<20 || *r.DBGrowthBytes != 32<<20 || *r.DBGrowthPerRequest != 335.5 || len(r.Notes) != 0 {
		t.Errorf("db: %s", benchtest.JSON(t, r))
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
		t.Errorf("wchar fallback: %s", benchtest.JSON(t, r))
	}

	// No request measured: totals without figures per request.
	r = p.report(before, before, 0, 0)
	if *r.CPUSeconds != 0 || r.CPUMicrosPerRequest != nil || r.DiskBytesPerRequest != nil || r.DBGrowthPerRequest != nil || r.CPUCores != nil {
		t.Errorf("no requests: %s", benchtest.JSON(t, r))
	}

	// Unreadable /proc and a missing database file are said, and the rest goes on.
	unreadable := serverSample{cpuErr: os.ErrPermission, ioErr: os.ErrPermission, dbErr: os.ErrNotExist}
	r = p.report(unreadable, unreadable, 10, 1)
	if r.CPUSeconds != nil || r.DiskBytes != nil || r.DBGrowthBytes != nil || len(r.Notes) != 3 ||
		!strings.Contains(r.Notes[0], "/proc unreadable") || !strings.Contains(r.Notes[1], "/proc unreadable") {
		t.Errorf("unreadable: %s", benchtest.JSON(t, r))
	}
	text.Reset()
	r.printText(&text)
	if strings.Count(text.String(), "server note: ") != 3 || strings.Contains(text.String(), "server cpu:") {
		t.Errorf("unreadable, as text:\n%s", text.String())
	}

	// A pid that now names another process: counters going backwards are not figures.
	r = p.report(after, before, 10, 1)
	if r.CPUSeconds != nil || r.DiskBytes != nil || len(r.Notes) != 2 {
		t.Errorf("backwards: %s", benchtest.JSON(t, r))
	}
}

func TestBenchLifecycleTeamsWithoutSetUp(t *testing.T) {
	// Without teams made beforehand (runBench on its own), each worker creates its own;
	// an interrupt stops the run and abandons the cycles under way.
	node := benchtest.StartFakeFieldNode(t)
	cfg := &runConfig{target: node.Server.URL + "/v1/events", base: node.Server.URL, workload: WorkloadLifecycle,
		conns: 3, duration: time.Hour, timeout: 5 * time.Second, keys: []string{"k"}, runID: "test", progressEvery: 40 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	progress := &syncBuffer{}
	rep := runBench(ctx, cfg, progress)
	lc := rep.Lifecycle
	if !rep.Interrupted || lc.Cycles == 0 || lc.TeamsSetUp != 0 || lc.TeamsRecreated != 3 || lc.CyclesFailed != 0 {
		t.Errorf("report: %s", benchtest.JSON(t, rep))
	}
	if !strings.Contains(progress.String(), "cycles ") {
		t.Errorf("progress: %q", progress.String())
	}
	node.Mu.Lock()
	if len(node.Problems) > 0 {
		t.Errorf("problems: %v", node.Problems)
	}
	node.Mu.Unlock()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
