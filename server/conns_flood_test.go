package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server"
)

// TestConnFlood measures the p99 latency of a good client (GET /v1/events?limit=20 from
// 127.0.0.2 at FIELDRELAY_CONNFLOOD_GOOD_RATE requests/s, 200, on keep-alive connections)
// alone, then while one address (127.0.0.1, another process at nice 19: an attacker's CPU
// is not the node's; FIELDRELAY_CONNFLOOD_NICE=0 keeps its priority) opens
// FIELDRELAY_CONNFLOOD (20,000) connections, as fast as it can with 128 dialers or at
// FIELDRELAY_CONNFLOOD_RATE per second, each sending one request and then holding its
// connection, as the flood of the audit did; FIELDRELAY_CONNFLOOD_ROUNDS (2) times. The
// node has serve's default caps (256 per address, 4,096 in all) and garbage collector
// settings. It reports both p99, the refusals, the most connections the node held at once
// and the process's peak resident memory, and fails when the node held more than its cap
// or a good request failed; with FIELDRELAY_CONNFLOOD_MAX_RATIO set, also when the p99
// rose more than that many times. Behind FIELDRELAY_HOSTILE=1 (make hostile): a timing
// measure, which says little on a machine busy with other work.
// FIELDRELAY_CONNFLOOD_CONTROL=1 lifts the caps: the flood as it was.
func TestConnFlood(t *testing.T) {
	if os.Getenv("FIELDRELAY_HOSTILE") == "" {
		t.Skip("a timing measurement: run it with FIELDRELAY_HOSTILE=1 (make hostile)")
	}
	flood := envInt("FIELDRELAY_CONNFLOOD", 20000)
	rounds := envInt("FIELDRELAY_CONNFLOOD_ROUNDS", 2)
	goodRate := envInt("FIELDRELAY_CONNFLOOD_GOOD_RATE", 200)
	limits := server.ConnLimits{Total: 4096, PerAddress: 256}
	control := os.Getenv("FIELDRELAY_CONNFLOOD_CONTROL") != ""
	if control {
		limits = server.ConnLimits{}
	}
	// serve's garbage collector settings (cli.tuneGC), for this test only.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(64 << 20))
	c := newCappedNode(t, limits, false)
	f := c.addTenant("acme", engine.PlanMissionCritical) // unlimited: no 429 in the measure
	good := c.clientFrom(t, "127.0.0.2")
	good.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	get := func() (time.Duration, error) { return timedGood(good, c.url, f.key) }
	// measure sends good requests at goodRate until done is closed (or for d).
	measure := func(d time.Duration, done <-chan struct{}) []time.Duration {
		var (
			mu   sync.Mutex
			lats []time.Duration
			wg   sync.WaitGroup
			errs atomic.Int64
		)
		tick := time.NewTicker(time.Second / time.Duration(goodRate))
		defer tick.Stop()
		end := time.After(d)
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-end:
				break loop
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				lat, err := get()
				if err != nil {
					if errs.Add(1) == 1 {
						t.Errorf("a good request: %v", err)
					}
					return
				}
				mu.Lock()
				lats = append(lats, lat)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if e := errs.Load(); e > 0 {
			t.Fatalf("%d good requests failed", e)
		}
		return lats
	}
	pct := func(l []time.Duration, p int) time.Duration {
		slices.Sort(l)
		return l[(len(l)*p+99)/100-1].Round(time.Microsecond)
	}

	flooder := startConnFlooder(t, c.addr, flood, envInt("FIELDRELAY_CONNFLOOD_RATE", 0))
	measure(time.Second, nil) // connections, caches
	var alone, flooded []time.Duration
	var floodTook time.Duration
	var report []string
	for range rounds {
		alone = append(alone, measure(2*time.Second, nil)...)
		done := make(chan struct{})
		var line string
		start := time.Now()
		go func() { defer close(done); line = flooder.round(t) }()
		flooded = append(flooded, measure(time.Hour, done)...)
		floodTook += time.Since(start)
		report = append(report, line)
	}
	m := c.connMetrics(t)
	a99, f99 := pct(alone, 99), pct(flooded, 99)
	t.Logf("good requests alone:                     n=%d p50=%v p99=%v", len(alone), pct(alone, 50), a99)
	t.Logf("good requests while 127.0.0.1 floods:    n=%d p50=%v p99=%v (%d rounds of %d connections, %v in all)",
		len(flooded), pct(flooded, 50), f99, rounds, flood, floodTook.Round(time.Millisecond))
	t.Logf("p99 ratio %.2f", float64(f99)/float64(a99))
	t.Logf("flooder (served, refused, unanswered when it stopped, failed to connect; per round): %v", report)
	t.Logf("node: most connections held at once %d (cap %d, per address %d); refused per address %v, total %v; idle closed %v",
		c.ln.peak.Load(), limits.Total, limits.PerAddress, m["fieldrelay_http_connections_refused_total{per_address}"],
		m["fieldrelay_http_connections_refused_total{total}"], m["fieldrelay_http_connections_idle_closed_total"])
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				t.Logf("peak resident memory of the test process (node and good client): %s", strings.TrimSpace(line[6:]))
			}
		}
	}
	if !control && c.ln.peak.Load() > int64(limits.Total+server.MaxLingering+1) {
		t.Fatalf("the node held %d connections at once, cap %d", c.ln.peak.Load(), limits.Total)
	}
	if s := os.Getenv("FIELDRELAY_CONNFLOOD_MAX_RATIO"); s != "" {
		maxRatio, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if ratio := float64(f99) / float64(a99); ratio > maxRatio {
			t.Fatalf("the flood raised the good client's p99 from %v to %v (×%.2f, limit ×%.2f)", a99, f99, ratio, maxRatio)
		}
	}
}

// connFlooder is a child process (this test binary, TestConnFlooder) that floods the node
// each time it reads a line, and answers with its counts.
type connFlooder struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startConnFlooder(t *testing.T, addr string, n, rate int) *connFlooder {
	t.Helper()
	args := []string{os.Args[0], "-test.run=^TestConnFlooder$", "-test.count=1"}
	// At the lowest priority the flooder stands for an attacker on another machine: on
	// a small one, at the node's own priority, it measures its share of the cores.
	if nice, err := exec.LookPath("nice"); err == nil && os.Getenv("FIELDRELAY_CONNFLOOD_NICE") != "0" {
		args = append([]string{nice, "-n", "19"}, args...)
	}
	in, out := startChild(t, args, "FIELDRELAY_CONNFLOODER_ADDR="+addr, "FIELDRELAY_CONNFLOODER_N="+strconv.Itoa(n),
		"FIELDRELAY_CONNFLOODER_RATE="+strconv.Itoa(rate))
	return &connFlooder{in: in, out: out}
}

// round runs one flood and returns the child's counts.
func (f *connFlooder) round(t *testing.T) string {
	if _, err := io.WriteString(f.in, "go\n"); err != nil {
		t.Errorf("flooder: %v", err)
		return ""
	}
	for f.out.Scan() {
		if s, ok := strings.CutPrefix(f.out.Text(), "flooded "); ok {
			return s
		}
	}
	t.Errorf("flooder: %v", f.out.Err())
	return ""
}

// TestConnFlooder is the flooding child of TestConnFlood; it does nothing otherwise. Each
// round it opens n connections from 127.0.0.1 with 128 dialers (rate per second when not 0:
// the flooder's pace, not a wait for the node), sends one request on each
// and holds it until the node closes it; at the end of the round it closes the ones left.
func TestConnFlooder(t *testing.T) {
	addr := os.Getenv("FIELDRELAY_CONNFLOODER_ADDR")
	if addr == "" {
		t.Skip("the child process of TestConnFlood")
	}
	n, _ := strconv.Atoi(os.Getenv("FIELDRELAY_CONNFLOODER_N"))
	rate, _ := strconv.Atoi(os.Getenv("FIELDRELAY_CONNFLOODER_RATE"))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var served, refused, unanswered, failed atomic.Int64
		var next atomic.Int64
		var mu sync.Mutex
		var open []net.Conn
		var readers, dialers sync.WaitGroup
		start := time.Now()
		for range 128 {
			dialers.Add(1)
			go func() {
				defer dialers.Done()
				d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					if rate > 0 { // the i-th connection opens at i/rate
						time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						failed.Add(1)
						continue
					}
					mu.Lock()
					open = append(open, c)
					mu.Unlock()
					readers.Add(1)
					go func() {
						defer readers.Done()
						defer c.Close()
						_ = c.SetDeadline(time.Now().Add(time.Minute))
						if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
							unanswered.Add(1)
							return
						}
						br := bufio.NewReader(c)
						res, err := http.ReadResponse(br, nil)
						if err != nil {
							unanswered.Add(1)
							return
						}
						_, _ = io.Copy(io.Discard, res.Body)
						if res.StatusCode == http.StatusServiceUnavailable {
							refused.Add(1)
						} else {
							served.Add(1)
						}
						_, _ = br.ReadByte() // held until the node closes it
					}()
				}
			}()
		}
		dialers.Wait()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		open = nil
		mu.Unlock()
		readers.Wait()
		fmt.Printf("flooded %d %d %d %d\n", served.Load(), refused.Load(), unanswered.Load(), failed.Load())
	}
}
