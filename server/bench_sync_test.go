package server_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server"
)

// syncBenchItems is the number of events in each benchmark batch: the largest batch.
const syncBenchItems = 1000

// syncBenchBody returns a batch of syncBenchItems events of about 500 bytes each (the
// event of BenchmarkIngestEvents), whose idempotency keys start with the placeholder
// KEYPREFIX, so that each request makes new keys with one ReplaceAll.
func syncBenchBody() []byte {
	pad := strings.Repeat("x", 260)
	var b bytes.Buffer
	b.WriteString(`{"device_id":"bench-tablet","captured_at":"2026-06-09T09:00:00.000Z","events":[`)
	for i := range syncBenchItems {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"KEYPREFIX-%04d",`+
			`"captured_at":"2026-06-09T09:%02d:%02d.000Z",`+
			`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","required_equipment":["defibrillator","stretcher"],"description":"%s"}}`,
			i, i/60%60, i%60, i%1000, i%997, pad)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// newRealClockNode is newNode with the system clock. Under the fake clock, which never
// moves by itself, every event id would carry the same millisecond and sort by the random
// bits that follow it, so each batch would write all over the events bucket instead of
// appending to it as it does in production.
func newRealClockNode(b *testing.B) *node {
	b.Helper()
	db := storetest.MustOpenDB(b)
	n := &node{t: b, mailer: &captureMailer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(n.logs, nil))
	n.eng = engine.New(db, engine.Options{Password: cheapPasswords, Mailer: n.mailer, Logger: log})
	var err error
	if n.srv, err = server.New(context.Background(), n.eng, server.Config{Logger: log}); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkSyncBatch measures POST /v1/sync/batch with batches of 1,000 new events
// through the real router and a real, fsynced store, without the network, from one client
// and from four at once. One op is one batch; events/s counts the events of every batch
// over the wall time, and p50/p99 are the latencies of the batches.
//
//	go test ./server -run XXX -bench SyncBatch -benchtime 200x
func BenchmarkSyncBatch(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			// The collector settings of `fieldrelay serve` (cli/serve.go, tuneGC).
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
			n := newRealClockNode(b)
			key := n.addTenant("bench", "mission-critical").key
			h := n.handler(b)
			tmpl := syncBenchBody()
			var seq atomic.Int64
			lat := make([][]time.Duration, clients)
			b.ReportAllocs()
			b.SetBytes(int64(len(tmpl)))
			w0 := diskWrites(b)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					for i := seq.Add(1); i <= int64(b.N); i = seq.Add(1) {
						body := bytes.ReplaceAll(tmpl, []byte("KEYPREFIX"), fmt.Appendf(nil, "b%d", i))
						req := httptest.NewRequest("POST", "/v1/sync/batch", bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("x-svc-api-key", key)
						w := httptest.NewRecorder()
						t0 := time.Now()
						h.ServeHTTP(w, req)
						lat[c] = append(lat[c], time.Since(t0))
						if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"rejected":0`)) {
							b.Errorf("status %d: %.300s", w.Code, w.Body.String())
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			pct := func(p float64) float64 {
				return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(len(all)*syncBenchItems)/elapsed.Seconds(), "events/s")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(diskWrites(b)-w0)/float64(len(all)*syncBenchItems), "disk-B/event")
		})
	}
}
