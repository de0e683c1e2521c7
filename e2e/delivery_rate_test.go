package e2e

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDeliveryRate measures, through the binary, whether webhook delivery keeps up with
// ingest: FIELDRELAY_DELIVERY_RATE=1 (never in make test) posts FIELDRELAY_DELIVERY_EVENTS
// (10,000) events from 64 connections to a node whose tenant has FIELDRELAY_DELIVERY_SUBS
// (1) subscriptions, each an HTTPS receiver on loopback answering 204, and logs how long
// ingest took and when the last message arrived (docs/bench.md, "Webhook delivery against
// ingest"). It fails only when a message is missing after 10 minutes.
func TestDeliveryRate(t *testing.T) {
	if os.Getenv("FIELDRELAY_DELIVERY_RATE") == "" {
		t.Skip("measures with FIELDRELAY_DELIVERY_RATE=1")
	}
	events, subs := 10000, 1
	if v, err := strconv.Atoi(os.Getenv("FIELDRELAY_DELIVERY_EVENTS")); err == nil && v > 0 {
		events = v
	}
	if v, err := strconv.Atoi(os.Getenv("FIELDRELAY_DELIVERY_SUBS")); err == nil && v > 0 {
		subs = v
	}
	bin := binary(t)
	data := t.TempDir()
	var got atomic.Int64
	var seen sync.Map
	var pemCerts []byte
	var urls []string
	for range subs {
		rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if _, dup := seen.LoadOrStore(r.Header.Get("webhook-id"), true); !dup {
				got.Add(1)
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		defer rcv.Close()
		pemCerts = append(pemCerts, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw})...)
		urls = append(urls, rcv.URL+"/hook")
	}
	caFile := filepath.Join(t.TempDir(), "receivers.pem")
	if err := os.WriteFile(caFile, pemCerts, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	var created struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--name", "Rate", "--slug", "rate",
		"--email", "ops@rate.example", "--country", "FR", "--plan", "mission-critical", "--json"), &created); err != nil {
		t.Fatal(err)
	}
	s := serve(t, bin, data, false, "--allow-loopback-webhooks")
	for _, u := range urls {
		st, _, out := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": u, "events": []string{"event.created"}},
			"x-svc-api-key", created.APIKey)
		expect(t, "webhook", st, 201, out)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	pad := strings.Repeat("x", 260)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(events) {
					return
				}
				body := fmt.Sprintf(`{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"rate-%d",`+
					`"payload":{"lat":45.7%03d,"lng":4.8%03d,"severity":"high","description":"%s"}}`, i, i%1000, i%997, pad)
				req, _ := http.NewRequest("POST", s.base+"/v1/events", bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-svc-api-key", created.APIKey)
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 201 {
					t.Errorf("POST /v1/events: %d", res.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	ingested := time.Since(start)
	atIngest := got.Load()
	want := int64(events * subs)
	waitFor(t, s, "every message delivered", 10*time.Minute, func() bool { return got.Load() >= want })
	delivered := time.Since(start)
	t.Logf("delivery rate: %d events in %.2fs (%.0f/s), %d of %d messages delivered by then; all %d at %.2fs (%.0f msg/s, %.2fs after ingest)",
		events, ingested.Seconds(), float64(events)/ingested.Seconds(), atIngest, want, want, delivered.Seconds(),
		float64(want)/delivered.Seconds(), (delivered - ingested).Seconds())
}
