package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestStreamFanout measures GET /v1/stream under load: FIELDRELAY_SSE_CLIENTS stream
// clients (200) of one tenant while FIELDRELAY_SSE_RATE events per second (1,000) are
// posted for FIELDRELAY_SSE_SECONDS (10), through the real router over loopback. It
// reports the latency from the start of each POST to each client's receipt (p50, p99,
// max) and fails when p99 reaches 1 s or a client misses an event. It runs only with
// FIELDRELAY_SSE_BENCH=1 (make sse-bench): it takes the machine's cores for its duration.
func TestStreamFanout(t *testing.T) {
	if os.Getenv("FIELDRELAY_SSE_BENCH") == "" {
		t.Skip("SSE fan-out benchmark: set FIELDRELAY_SSE_BENCH=1 (make sse-bench)")
	}
	clients := envInt("FIELDRELAY_SSE_CLIENTS", 200)
	rate := envInt("FIELDRELAY_SSE_RATE", 1000)
	seconds := envInt("FIELDRELAY_SSE_SECONDS", 10)
	n := newStreamNode(t, 0)
	f := n.addTenant("fanout", engine.PlanMissionCritical)
	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	var sent sync.Map // idempotency_key → time.Time
	var delivered atomic.Int64
	type result struct {
		lat            []time.Duration
		resets, errors int
	}
	results := make([]result, clients)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready, done sync.WaitGroup
	for i := range clients {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			r := &results[i]
			req, _ := http.NewRequestWithContext(ctx, "GET", n.url+"/v1/stream", nil)
			req.Header.Set("x-svc-api-key", f.key)
			res, err := hc.Do(req)
			if err != nil || res.StatusCode != 200 {
				r.errors++
				ready.Done()
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			signalled := false
			marker := []byte(`"idempotency_key":"`)
			for sc.Scan() {
				line := sc.Bytes()
				switch {
				case bytes.HasPrefix(line, []byte("event: ready")) && !signalled:
					signalled = true
					ready.Done()
				case bytes.HasPrefix(line, []byte("event: reset")):
					r.resets++
				case bytes.HasPrefix(line, []byte("data: ")):
					at := bytes.Index(line, marker)
					if at < 0 {
						continue
					}
					rest := line[at+len(marker):]
					key := string(rest[:bytes.IndexByte(rest, '"')])
					if v, ok := sent.Load(key); ok {
						r.lat = append(r.lat, time.Since(v.(time.Time)))
						delivered.Add(1)
					}
				}
			}
			if !signalled {
				ready.Done()
			}
		}()
	}
	ready.Wait()

	// Post at the rate, from a pool of workers fed by a ticker.
	total := rate * seconds
	jobs := make(chan int, total)
	var posted, failed atomic.Int64
	var workers sync.WaitGroup
	for range 32 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range jobs {
				key := "fan-" + strconv.Itoa(i)
				body := fmt.Sprintf(`{"type":"FIRE","priority":"normal","vertical":"emergency","idempotency_key":%q,"payload":{"lat":45.76,"lng":4.84}}`, key)
				req, _ := http.NewRequest("POST", n.url+"/v1/events", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-svc-api-key", f.key)
				sent.Store(key, time.Now())
				res, err := hc.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					failed.Add(1)
					continue
				}
				posted.Add(1)
			}
		}()
	}
	start := time.Now()
	const tick = 10 * time.Millisecond
	perTick := rate / int(time.Second/tick)
	ticker := time.NewTicker(tick)
	next := 0
	for next < total {
		<-ticker.C
		for range perTick {
			if next < total {
				jobs <- next
				next++
			}
		}
	}
	ticker.Stop()
	close(jobs)
	workers.Wait()
	elapsed := time.Since(start)

	// Wait until every client has every event, or 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for delivered.Load() < posted.Load()*int64(clients) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	cancel()
	done.Wait()

	var all []time.Duration
	resets, errs, short := 0, 0, 0
	for _, r := range results {
		all = append(all, r.lat...)
		resets += r.resets
		errs += r.errors
		if len(r.lat) < int(posted.Load()) {
			short++
		}
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	t.Logf("SSE fan-out: %d clients, %d events posted in %v (%.0f/s, %d failed), %d deliveries (want %d), %d resets, %d clients short",
		clients, posted.Load(), elapsed.Round(time.Millisecond), float64(posted.Load())/elapsed.Seconds(), failed.Load(),
		len(all), int(posted.Load())*clients, resets, short)
	t.Logf("event POST → stream client latency: p50 %v, p90 %v, p99 %v, max %v",
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	if errs > 0 || failed.Load() > 0 {
		t.Errorf("%d stream clients failed to connect, %d posts failed", errs, failed.Load())
	}
	if short > 0 || resets > 0 {
		t.Errorf("%d clients missed events (%d resets)", short, resets)
	}
	if p99 := pct(0.99); p99 >= time.Second {
		t.Errorf("p99 %v, want < 1 s", p99)
	}
}
