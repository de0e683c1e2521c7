package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store"
)

// smallDisk mounts a tmpfs of size bytes for the test and unmounts it at the end; the test
// is skipped, with the reason, where that cannot be done (not Linux, not root, no mount).
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("a full disk is made with a size-limited tmpfs: Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("a full disk is made with a size-limited tmpfs, which needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): a full disk cannot be made here", err)
	}
	// Registered after the mount, so it runs after the cleanups of the node that uses it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the filesystem has at most leave bytes free (0: until
// a write fails with ENOSPC), and returns its path.
func fillDisk(t *testing.T, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("filler-%d", time.Now().UnixNano()))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if free := int64(st.Bavail) * st.Bsize; leave > 0 && free <= leave {
			return path
		}
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) && leave == 0 {
				return path
			}
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
	t.Fatalf("filling %s: still room after 4 GiB", dir)
	return ""
}

// metricValue reads one gauge or counter without labels from /metrics.
func metricValue(t *testing.T, s *served, secret, name string) float64 {
	t.Helper()
	families, text := scrapeMetrics(t, s, secret)
	if families[name] == nil {
		t.Fatalf("metrics: %s missing\n%s", name, text)
	}
	m := families[name].GetMetric()[0]
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestFullDisk: a node whose data directory's filesystem fills up (a real ENOSPC first,
// then the free-space threshold) refuses writes at once with 503 unavailable and
// Retry-After, keeps serving reads and its stream, says why on /readyz and /metrics,
// takes writes again without a restart once space is freed, and loses no acknowledged
// write: every one is there and `fieldrelay check`
// is clean (docs/decisions/0112-full-disk.md).
func TestFullDisk(t *testing.T) {
	bin := binary(t)
	disk := smallDisk(t, 24<<20)
	data := filepath.Join(disk, "data")
	const secret = "full disk internal secret 0123"
	big := strings.Repeat("x", 16<<10) // events with 16 KiB payloads fill the file fast
	var acked []string
	post := func(n *demoNode, key string) (int, http.Header, map[string]any) {
		status, hdr, body := n.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "low",
			"vertical": "emergency", "idempotency_key": key, "payload": map[string]any{"note": big}}, n.key()...)
		if status == 201 {
			acked = append(acked, body["event_id"].(string))
		}
		return status, hdr, body
	}
	refused := func(what string, status int, hdr http.Header, body map[string]any) {
		t.Helper()
		if status != 503 || body["error"] != "unavailable" || hdr.Get("Retry-After") != "30" ||
			!strings.Contains(fmt.Sprint(body["message"]), "disk is full") {
			t.Fatalf("%s: %d %v %v, want 503 unavailable, Retry-After 30, a message that says the disk is full", what, status, hdr, body)
		}
	}
	readyz := func(n *demoNode) (int, map[string]any) {
		status, _, body := n.call(t, "GET", "/readyz", nil)
		return status, body
	}

	// 1. Only a real ENOSPC refuses writes (--disk-min-free-mb 0).
	n := serveDemo(t, bin, data, "--internal-secret", secret, "--disk-min-free-mb", "0", "--disk-warn-free-mb", "8")
	for i := range 3 {
		if status, _, body := post(n, fmt.Sprintf("before-%d", i)); status != 201 {
			t.Fatalf("POST /v1/events with room: %d %v", status, body)
		}
	}
	live := stream(t, n, n.key()...)
	live.next(t, "ready", 5*time.Second)
	filler := fillDisk(t, disk, 0)
	var status int
	var hdr http.Header
	var body map[string]any
	for i := 0; i < 2000; i++ {
		if status, hdr, body = post(n, fmt.Sprintf("enospc-%d", i)); status != 201 {
			break
		}
	}
	refused("the write that met ENOSPC", status, hdr, body)
	start := time.Now()
	status, hdr, body = post(n, "refused-at-once")
	refused("the write after it", status, hdr, body)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a refused write took %s", took)
	}
	if status, body := readyz(n); status != 503 || !strings.Contains(fmt.Sprint(body["message"]), "disk is full") {
		t.Fatalf("/readyz on a full disk: %d %v", status, body)
	}
	if v := metricValue(t, n.served, secret, "fieldrelay_disk_full"); v != 1 {
		t.Fatalf("fieldrelay_disk_full %v on a full disk", v)
	}
	if v := metricValue(t, n.served, secret, "fieldrelay_disk_low"); v != 1 {
		t.Fatalf("fieldrelay_disk_low %v on a full disk", v)
	}
	// Reads still work, and see every acknowledged write.
	if got := len(list(t, n.served, "/v1/events", n.key())); got != len(acked) {
		t.Fatalf("GET /v1/events on a full disk: %d events, %d acknowledged", got, len(acked))
	}
	if !strings.Contains(n.logs.String(), "writes are refused until space is freed") {
		t.Fatalf("no log line says the disk is full:\n%s", n.logs)
	}

	// Space returns: writes resume without a restart, and the stream opened before shows them.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, n.served, "writes to resume once space is freed", 20*time.Second, func() bool {
		status, _, _ := post(n, fmt.Sprintf("resumed-%d", time.Now().UnixNano()))
		return status == 201
	})
	for m := live.next(t, "event.created", 5*time.Second); m.data["event_id"] != acked[len(acked)-1]; {
		m = live.next(t, "event.created", 5*time.Second)
	}
	waitFor(t, n.served, "/readyz to answer ready again", 10*time.Second, func() bool {
		status, _ := readyz(n)
		return status == 200
	})
	if err := n.stop(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, n.logs)
	}

	// 2. The free-space threshold refuses writes before the disk is full.
	n = serveDemo(t, bin, data, "--internal-secret", secret, "--disk-min-free-mb", "4", "--disk-warn-free-mb", "8")
	filler = fillDisk(t, disk, 2<<20)
	waitFor(t, n.served, "/readyz to say the disk is full", 10*time.Second, func() bool {
		status, _ := readyz(n)
		return status == 503
	})
	status, hdr, body = post(n, "below-min-free")
	refused("a write below --disk-min-free-mb", status, hdr, body)
	if v := metricValue(t, n.served, secret, "fieldrelay_disk_free_bytes"); v <= 0 || v > 2<<20 {
		t.Fatalf("fieldrelay_disk_free_bytes %v, want at most 2 MiB", v)
	}
	if got := len(list(t, n.served, "/v1/events", n.key())); got != len(acked) {
		t.Fatalf("GET /v1/events below the threshold: %d events, %d acknowledged", got, len(acked))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, n.served, "writes to resume above the threshold", 20*time.Second, func() bool {
		status, _, _ := post(n, fmt.Sprintf("above-%d", time.Now().UnixNano()))
		return status == 201
	})
	if err := n.stop(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, n.logs)
	}

	// Nothing acknowledged is lost, and the file is sound.
	out, stderr, err := runCLI(bin, "", "check", "--data", data, "--json")
	var report store.CheckReport
	if jerr := json.Unmarshal(out, &report); jerr != nil || err != nil || !report.OK {
		t.Fatalf("fieldrelay check after a full disk: %v %v\n%s%s", err, jerr, out, stderr)
	}
	n = serveDemo(t, bin, data, "--internal-secret", secret, "--disk-min-free-mb", "1")
	have := map[string]bool{}
	for _, ev := range list(t, n.served, "/v1/events", n.key()) {
		have[ev["event_id"].(string)] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Errorf("acknowledged event %s is missing after the disk filled", id)
		}
	}
	if t.Failed() {
		t.Logf("%d acknowledged, %d present", len(acked), len(have))
	}
}
