package server_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fieldrelay/fieldrelay/store/storetest"
)

// BenchmarkTenantMe measures an authenticated GET /v1/tenant/me through the real router
// and a real store, without the network.
func BenchmarkTenantMe(b *testing.B) {
	n := newNode(b)
	f := n.addTenant("acme", "mission-critical")
	h := n.handler(b)
	for name, hdr := range map[string][2]string{
		"APIKey": {"x-svc-api-key", f.key},
		"JWT":    {"Authorization", n.login(f.emails["company_admin"])},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v1/tenant/me", nil)
				req.Header.Set(hdr[0], hdr[1])
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}

// BenchmarkLogin measures POST /v1/auth/login through the real router with the
// production argon2id costs.
func BenchmarkLogin(b *testing.B) {
	n := newNodeWith(b, nodeOptions{realPasswords: true})
	f := n.addTenant("acme", "mission-critical")
	h := n.handler(b)
	body := `{"email":"` + f.emails["company_admin"] + `","password":"` + testPassword + `"}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/auth/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkIngestEvents measures POST /v1/events from 64 concurrent clients over 10
// tenants through the real router and a real, fsynced store, without the network: the
// hot path of `fieldrelay bench`, for profiling.
func BenchmarkIngestEvents(b *testing.B) {
	db := storetest.MustOpenDB(b)
	// The system clock, as a node runs: under the fake one every id of a record made with
	// model.NewIDAt (alerts) carries one millisecond and random bits, and lands anywhere in
	// its bucket instead of at its end.
	n := newNodeWith(b, nodeOptions{store: db, systemClock: true})
	var keys []string
	for i := range 10 {
		keys = append(keys, n.addTenant(fmt.Sprintf("t%d", i), "mission-critical").key)
	}
	h := n.handler(b)
	pad := strings.Repeat("x", 260)
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32) // × GOMAXPROCS (2 here) = 64 clients
	w0, s0 := diskWrites(b), db.Stats()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			body := fmt.Sprintf(`{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"bench-%d",`+
				`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","required_equipment":["defibrillator","stretcher"],"description":"%s"}}`,
				i, i%1000, i%997, pad)
			req := httptest.NewRequest("POST", "/v1/events", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-svc-api-key", keys[i%int64(len(keys))])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 201 {
				b.Fatal(w.Code, w.Body.String())
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(diskWrites(b)-w0)/float64(b.N), "disk-B/op")
	s1 := db.Stats()
	// Pages bbolt wrote and commits made: the load-independent figures of the layout.
	b.ReportMetric(float64(s1.PagesWritten-s0.PagesWritten)/float64(b.N), "pages/op")
	b.ReportMetric(float64(b.N)/float64(s1.WriteTxTotal-s0.WriteTxTotal), "events/commit")
}

// diskWrites returns the bytes this process has caused to be written to storage
// (Linux /proc/self/io write_bytes), or 0 where that is not available.
func diskWrites(tb testing.TB) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
