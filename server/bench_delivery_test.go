package server_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// BenchmarkDelivery measures whether webhook delivery keeps up with ingest: b.N events
// posted by 64 concurrent clients to one tenant (through the real router and a real,
// fsynced store, without the network), each delivered by the running scheduler and the
// real HTTPS sender to every one of the tenant's subscriptions, each an HTTP/1.1 TLS
// receiver on loopback that answers 200. It reports the ingest rate (ingest-ev/s), the
// delivery rate over the whole run (delivered-msg/s: messages over the time from the
// first POST to the last message received) and how long the last message came after
// the last POST (lag-s). Run it with a fixed count, e.g.
// go test ./server -run XXX -bench Delivery -benchtime 10000x.
func BenchmarkDelivery(b *testing.B) {
	for _, subs := range []int{1, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) { benchDelivery(b, subs) })
	}
}

func benchDelivery(b *testing.B, subs int) {
	var got atomic.Int64
	var seen sync.Map
	pool := x509.NewCertPool()
	var urls []string
	for range subs {
		rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, dup := seen.LoadOrStore(r.Header.Get("webhook-id"), true); !dup {
				got.Add(1)
			}
		}))
		rcv.StartTLS()
		b.Cleanup(rcv.Close)
		pool.AddCert(rcv.Certificate())
		urls = append(urls, rcv.URL)
	}
	policy := netguard.AddressPolicy{AllowLoopback: true}
	n := newNodeWith(b, nodeOptions{systemClock: true, webhookPolicy: policy,
		sender: outbound.NewHTTPSender(outbound.HTTPSenderOptions{Policy: policy, RootCAs: pool})})
	f := n.addTenant("acme", "mission-critical")
	for _, u := range urls {
		n.do("POST", "/v1/webhooks", map[string]any{"url": u, "events": []string{"event.created"}},
			"x-svc-api-key", f.key).want(http.StatusCreated)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := n.eng.StartScheduler(ctx); err != nil {
		b.Fatal(err)
	}
	defer n.eng.StopScheduler()
	h := n.handler(b)
	pad := strings.Repeat("x", 260)
	var seq atomic.Int64
	want := int64(b.N * subs)
	b.SetParallelism(32) // × GOMAXPROCS (2 here) = 64 clients
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			body := fmt.Sprintf(`{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"bench-%d",`+
				`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","description":"%s"}}`, i, i%1000, i%997, pad)
			req := httptest.NewRequest("POST", "/v1/events", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-svc-api-key", f.key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 201 {
				b.Fatal(w.Code, w.Body.String())
			}
		}
	})
	ingested := time.Since(start)
	deadline := time.Now().Add(10 * time.Minute)
	for got.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages delivered after 10 minutes", got.Load(), want)
		}
		time.Sleep(5 * time.Millisecond) // poll the receivers' count
	}
	delivered := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/ingested.Seconds(), "ingest-ev/s")
	b.ReportMetric(float64(want)/delivered.Seconds(), "delivered-msg/s")
	b.ReportMetric((delivered - ingested).Seconds(), "lag-s")
}
