package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store"
	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// TestFootprint is the footprint measurement (make footprint; never part of make test):
// FIELDRELAY_FOOTPRINT_EVENTS events (default 1,000,000) of about 300 bytes of payload,
// for 10 tenants, through POST /v1/sync/batch in batches of 1,000 from 4 clients, into the
// real binary on a fresh data directory (fsync on). Then the node is stopped and it reports
// the file's bytes per event and `check --stats`, and restarts it: the time from start to
// /readyz 200 and the process's private memory (smaps_rollup) once ready.
// FIELDRELAY_FOOTPRINT_REPORT names a file the report is also written to.
func TestFootprint(t *testing.T) {
	if os.Getenv("FIELDRELAY_FOOTPRINT") == "" {
		t.Skip("the footprint measurement runs with FIELDRELAY_FOOTPRINT=1 (make footprint)")
	}
	total := 1_000_000
	if v := os.Getenv("FIELDRELAY_FOOTPRINT_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < footprintBatch {
			t.Fatalf("FIELDRELAY_FOOTPRINT_EVENTS=%q: a number of events of at least %d", v, footprintBatch)
		}
		total = n
	}
	bin := binary(t)
	data := t.TempDir()
	const tenants, clients = 10, 4
	keys := make([]string, tenants)
	for i := range keys {
		var created struct {
			APIKey string `json:"api_key"`
		}
		out := mustRun(t, bin, "", "tenant", "create", "--data", data, "--json", "--name", fmt.Sprintf("Footprint %d", i),
			"--slug", fmt.Sprintf("fp-%d", i), "--email", fmt.Sprintf("ops@fp%d.example", i), "--country", "FR", "--plan", "mission-critical")
		if err := json.Unmarshal(out, &created); err != nil || created.APIKey == "" {
			t.Fatalf("tenant create: %v %s", err, out)
		}
		keys[i] = created.APIKey
	}
	s := serve(t, bin, data, false)
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	batches := total / footprintBatch
	var next, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for b := next.Add(1); b <= int64(batches) && failed.Load() == 0; b = next.Add(1) {
				req, _ := http.NewRequest("POST", s.base+"/v1/sync/batch", bytes.NewReader(footprintBody(int(b%tenants))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-svc-api-key", keys[b%tenants])
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					t.Errorf("batch %d: %v", b, err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || !bytes.Contains(body, []byte(`"rejected":0`)) {
					failed.Add(1)
					t.Errorf("batch %d: %d %.300s", b, res.StatusCode, body)
					return
				}
				if b%100 == 0 {
					t.Logf("%d events in %.0f s", b*footprintBatch, time.Since(start).Seconds())
				}
			}
		})
	}
	wg.Wait()
	ingest := time.Since(start)
	if t.Failed() {
		return
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("stopping the node: %v\n%s", err, s.logs)
	}
	events := batches * footprintBatch

	var st syscall.Stat_t
	if err := syscall.Stat(store.Path(data), &st); err != nil {
		t.Fatal(err)
	}
	checkStart := time.Now()
	stats := mustRun(t, bin, "", "check", "--stats", "--data", data)
	checkTime := time.Since(checkStart)
	ready, private, anon := footprintRestart(t, bin, data)

	var rep strings.Builder
	fmt.Fprintf(&rep, "footprint: %d events (10 tenants, POST /v1/sync/batch of %d, %d clients) in %.1f s (%.0f events/s)\n",
		events, footprintBatch, clients, ingest.Seconds(), float64(events)/ingest.Seconds())
	fmt.Fprintf(&rep, "file: %d bytes (%d allocated on disk): %.0f bytes per event\n",
		st.Size, st.Blocks*512, float64(st.Size)/float64(events))
	fmt.Fprintf(&rep, "ready after restart: %.3f s; private memory once ready: %.1f MB (anonymous %.1f MB)\n",
		ready.Seconds(), float64(private)/(1<<20), float64(anon)/(1<<20))
	fmt.Fprintf(&rep, "check --stats: %.1f s\n", checkTime.Seconds())
	rep.Write(stats)
	t.Log("\n" + rep.String())
	if path := fromRoot(os.Getenv("FIELDRELAY_FOOTPRINT_REPORT")); path != "" {
		if err := os.WriteFile(path, []byte(rep.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// footprintBatch is the number of events in one batch of TestFootprint.
const footprintBatch = 1000

// footprintPad makes the payload of an item about 300 bytes.
var footprintPad = strings.Repeat("x", 190)

// footprintBody is a batch of new events: idempotency keys as the field app makes them
// ("field-" and a random UUID), a payload of about 300 bytes.
func footprintBody(tenant int) []byte {
	captured := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04:05.000Z")
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"device_id":"fp-tablet-%d","captured_at":"%s","events":[`, tenant, captured)
	for i := range footprintBatch {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"field-%s",`+
			`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","required_equipment":["defibrillator","stretcher"],"description":"%s"}}`,
			uuid.NewString(), i%1000, i%997, footprintPad)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// footprintRestart starts the node again on data and returns the time from start to
// /readyz 200 and its private and anonymous memory (smapsPrivate) once ready, then stops
// it.
func footprintRestart(t *testing.T, bin, data string) (ready time.Duration, private, anon int64) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", addr, "--plain-http")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, base: "http://" + addr, logs: logs, done: make(chan error, 1),
		client: &http.Client{Timeout: time.Second}}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	for deadline := start.Add(30 * time.Second); ready == 0; {
		if res, err := s.client.Get(s.base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				ready = time.Since(start)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node did not become ready after restart\n%s", logs)
		}
		time.Sleep(2 * time.Millisecond) // a poll of /readyz, bounded by the deadline
	}
	private, anon = smapsPrivate(t, cmd.Process.Pid)
	if err := s.stop(t); err != nil {
		t.Fatalf("stopping the node: %v\n%s", err, logs)
	}
	return ready, private, anon
}

// smapsPrivate reads the private memory of a process (Private_Clean + Private_Dirty of
// /proc/PID/smaps_rollup), and of it the anonymous memory (the process's own, without the
// pages of the mapped bbolt file), in bytes.
func smapsPrivate(t *testing.T, pid int) (private, anon int64) {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		t.Skipf("no smaps_rollup here: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Private_Clean:", "Private_Dirty:":
			private += n << 10
		case "Anonymous:":
			anon += n << 10
		}
	}
	return private, anon
}

// TestCheckStats: `fieldrelay check --stats` reports the pages of each kind of bucket of a
// node's file, events among them, and keeps check's exit codes: 0 when clean, 1 with the
// report when an index is broken, an error while a server holds the directory.
func TestCheckStats(t *testing.T) {
	bin := binary(t)
	data := t.TempDir()
	var created struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--json", "--name", "Stats",
		"--slug", "stats", "--email", "ops@stats.example", "--country", "FR"), &created); err != nil {
		t.Fatal(err)
	}
	key := []string{"x-svc-api-key", created.APIKey}
	s := serve(t, bin, data, false)
	const n = 40
	var items []any
	for i := range n {
		items = append(items, map[string]any{"type": "FLOOD", "vertical": "emergency", "idempotency_key": fmt.Sprintf("stats-%d", i),
			"payload": map[string]any{"severity": "high", "description": footprintPad}})
	}
	status, _, body := s.call(t, "POST", "/v1/sync/batch", map[string]any{"device_id": "tablet",
		"captured_at": time.Now().UTC().Format(time.RFC3339Nano), "events": items}, key...)
	expect(t, "sync batch", status, 200, body)
	if body["accepted"] != float64(n) {
		t.Fatalf("batch answer: %v", body)
	}
	if out, stderr, err := runCLI(bin, "", "check", "--stats", "--data", data); err == nil || !bytes.Contains(stderr, []byte("is running")) {
		t.Errorf("check --stats on a served directory: %v\n%s%s", err, out, stderr)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("stopping the node: %v\n%s", err, s.logs)
	}

	text := string(mustRun(t, bin, "", "check", "--stats", "--data", data))
	for _, want := range []string{"OK\n", "t/*/events ", "t/*/events_by_idem ", "t/*/batches ", "fill%"} {
		if !strings.Contains(text, want) {
			t.Errorf("check --stats does not say %q:\n%s", want, text)
		}
	}
	var report store.CheckReport
	if err := json.Unmarshal(mustRun(t, bin, "", "check", "--stats", "--json", "--data", data), &report); err != nil {
		t.Fatal(err)
	}
	fp := report.Footprint
	if !report.OK || fp == nil || fp.FileBytes == 0 || fp.PageSize == 0 || fp.Pages == 0 {
		t.Fatalf("check --stats --json: %+v", report)
	}
	rows := map[string]store.BucketFootprint{}
	for _, b := range fp.Buckets {
		rows[b.Name] = b
	}
	for _, name := range []string{"t/*/events", "t/*/events_by_idem", "t/*/batches", "tenants"} {
		if r := rows[name]; r.Keys == 0 || r.Buckets == 0 {
			t.Errorf("bucket %s: %+v", name, r)
		}
	}
	if ev := rows["t/*/events"]; ev.Keys != n || ev.Bytes == 0 && ev.Inline == 0 {
		t.Errorf("t/*/events: %+v", ev)
	}
	if bytes.Contains(mustRun(t, bin, "", "check", "--json", "--data", data), []byte(`"footprint"`)) {
		t.Errorf("check without --stats reports a footprint")
	}

	// A broken index: one event's idempotency reply is gone. check --stats exits 1 with
	// both reports.
	db, err := bolt.Open(store.Path(data), 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		root := btx.Bucket([]byte("t"))
		tk, _ := root.Cursor().First()
		return root.Bucket(tk).Bucket([]byte("events_by_idem")).Delete([]byte("stats-7"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(bin, "", "check", "--stats", "--data", data)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !bytes.Contains(out, []byte("stats-7")) || !bytes.Contains(out, []byte("t/*/events ")) {
		t.Errorf("check --stats on a broken index: %v\n%s", err, out)
	}
}
