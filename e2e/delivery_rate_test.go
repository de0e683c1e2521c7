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
// (10,000) events from 64 connections, spread over FIELDRELAY_DELIVERY_TENANTS (1)
// tenants, each with FIELDRELAY_DELIVERY_SUBS (1; 0 for none, the bare node)
// subscriptions, each an HTTPS receiver on loopback answering 204; with
// FIELDRELAY_DELIVERY_SMS=1 the node has an SMS gateway too (an HTTP one on loopback), as a
// site's node does. It logs how long ingest took and when the last message arrived
// (docs/bench.md, "Webhook delivery against ingest"): the node's CPU per event and per
// message (/proc), and when the outbox depth (fieldrelay_outbox_depth) was back to its start
// after the last POST. It fails when a message is missing after 10 minutes, or when a
// subscriber received one twice.
func TestDeliveryRate(t *testing.T) {
	if os.Getenv("FIELDRELAY_DELIVERY_RATE") == "" {
		t.Skip("measures with FIELDRELAY_DELIVERY_RATE=1")
	}
	events, subs, tenants := 10000, 1, 1
	if v, err := strconv.Atoi(os.Getenv("FIELDRELAY_DELIVERY_EVENTS")); err == nil && v > 0 {
		events = v
	}
	if v, err := strconv.Atoi(os.Getenv("FIELDRELAY_DELIVERY_SUBS")); err == nil && v >= 0 {
		subs = v
	}
	if v, err := strconv.Atoi(os.Getenv("FIELDRELAY_DELIVERY_TENANTS")); err == nil && v > 0 {
		tenants = v
	}
	withSMS := os.Getenv("FIELDRELAY_DELIVERY_SMS") == "1"
	bin := binary(t)
	data := t.TempDir()
	var got, dups atomic.Int64
	var seen sync.Map
	var pemCerts []byte
	var urls []string
	for range subs {
		rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			// A webhook-id names one message to one subscription.
			if _, dup := seen.LoadOrStore(r.Header.Get("webhook-id"), true); !dup {
				got.Add(1)
			} else {
				dups.Add(1)
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
	var keys []string
	for i := range tenants {
		var created struct {
			APIKey string `json:"api_key"`
		}
		if err := json.Unmarshal(mustRun(t, bin, "", "tenant", "create", "--data", data, "--name", fmt.Sprintf("Rate %d", i),
			"--slug", fmt.Sprintf("rate-%d", i), "--email", fmt.Sprintf("ops%d@rate.example", i), "--country", "FR",
			"--plan", "mission-critical", "--json"), &created); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, created.APIKey)
	}
	const secret = "delivery rate internal secret 0123"
	flags := []string{"--allow-loopback-webhooks", "--internal-secret", secret}
	if withSMS {
		gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
		}))
		defer gateway.Close()
		flags = append(flags, "--sms-gateway", gateway.URL+"/sms")
	}
	s := serve(t, bin, data, false, flags...)
	depth := func() float64 { return soakMetrics(t, s, secret)["fieldrelay_outbox_depth"] }
	for _, key := range keys {
		for _, u := range urls {
			st, _, out := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": u, "events": []string{"event.created"}},
				"x-svc-api-key", key)
			expect(t, "webhook", st, 201, out)
		}
	}

	startDepth := depth()
	cpu0 := procCPU(t, s.cmd.Process.Pid)
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
				req.Header.Set("x-svc-api-key", keys[int(i)%len(keys)])
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
	var delivered, drained time.Duration
	waitFor(t, s, "every message delivered and the outbox back to its start", 10*time.Minute, func() bool {
		if delivered == 0 && got.Load() >= want {
			delivered = time.Since(start)
		}
		// The depth counts the entries waiting, not those in flight: it is back to its
		// start once every message arrived.
		if delivered > 0 && drained == 0 && depth() <= startDepth {
			drained = time.Since(start)
		}
		return delivered > 0 && drained > 0
	})
	cpu := procCPU(t, s.cmd.Process.Pid) - cpu0
	perMessage := ""
	if want > 0 {
		perMessage = fmt.Sprintf("%d µs per message, ", cpu.Microseconds()/want)
	}
	t.Logf("delivery rate (%d tenants, %d subscriptions each, SMS gateway %v): %d events in %.2fs (%.0f/s), "+
		"%d of %d messages delivered by then; all %d at %.2fs (%.0f msg/s, %.2fs after ingest); "+
		"outbox depth back to %.0f %.2fs after ingest; node CPU %.2fs: %s%.0f µs per event and its messages",
		tenants, subs, withSMS, events, ingested.Seconds(), float64(events)/ingested.Seconds(), atIngest, want, want, delivered.Seconds(),
		float64(want)/delivered.Seconds(), (delivered - ingested).Seconds(), startDepth, (drained - ingested).Seconds(),
		cpu.Seconds(), perMessage, float64(cpu.Microseconds())/float64(events))
	if n := dups.Load(); n > 0 {
		t.Errorf("%d messages reached their subscriber more than once", n)
	}
}

// procCPU is the CPU time (user and system) a process has used, from /proc (Linux).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which ends at the last ')': utime and stime are
	// the 14th and 15th of the line, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
