package server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// Slow and hostile clients against a real http.Server (srv.HTTPServer, the node's own
// timeouts, here short ones) on a loopback socket whose reads are counted.

// countingListener counts the bytes the server reads from all its connections.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.read}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// hostileNode is a node served by srv.HTTPServer with the given timeouts.
type hostileNode struct {
	*node
	addr string
	ln   *countingListener
}

func newHostileNode(t testing.TB, to server.Timeouts) *hostileNode {
	t.Helper()
	db := storetest.MustOpenDB(t)
	n := &node{t: t, clock: model.NewFakeClock(modeltest.Epoch),
		mailer: &captureMailer{}, logs: &syncBuffer{}}
	// The access log is formatted as in production, then dropped.
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	n.eng = engine.New(db, engine.Options{Clock: n.clock, Password: cheapPasswords, Mailer: n.mailer, Logger: log})
	var err error
	if n.srv, err = server.New(context.Background(), n.eng, server.Config{Logger: log, Timeouts: to}); err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	hs := n.srv.HTTPServer(inner.Addr().String())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.srv.Serve(hs, ln, nil) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	n.url = "http://" + inner.Addr().String()
	n.client = &http.Client{Timeout: 10 * time.Second}
	return &hostileNode{node: n, addr: inner.Addr().String(), ln: ln}
}

// shortTimeouts cut slow clients within a second.
var shortTimeouts = server.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 500 * time.Millisecond,
	Write: 2 * time.Second, Idle: 2 * time.Second}

// dial opens a raw connection to the node.
func (h *hostileNode) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dribble writes s one byte every step in the background until it is written, the
// connection fails or stop is closed; it reports how many bytes went out.
func dribble(c net.Conn, s string, step time.Duration, stop <-chan struct{}) <-chan int {
	sent := make(chan int, 1)
	go func() {
		tick := time.NewTicker(step)
		defer tick.Stop()
		n := 0
		defer func() { sent <- n }()
		for n < len(s) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte{s[n]}); err != nil {
				return
			}
			n++
		}
	}()
	return sent
}

// readUntilClosed reads what the server sends until it closes the connection (or
// within), and returns it with the time it took.
func readUntilClosed(t *testing.T, c net.Conn, within time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(within))
	var got strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server still held the connection after %v (read %q)", within, got.String())
			}
			return got.String(), time.Since(start)
		}
	}
}

func TestSlowloris(t *testing.T) {
	h := newHostileNode(t, shortTimeouts)
	// Each dribble would take 10 s; the server must cut it within its timeouts (plus
	// scheduling slack on a loaded machine), long before.
	const step = 40 * time.Millisecond
	t.Run("HeadersByteByByte", func(t *testing.T) {
		c := h.dial(t)
		stop := make(chan struct{}) // a failed test leaves the dribble to end with c
		sent := dribble(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"+strings.Repeat("X-Slow: y\r\n", 25)+"\r\n", step, stop)
		got, took := readUntilClosed(t, c, 5*time.Second)
		// net/http answers a header cut short with a 400 (or 408) and closes, or just
		// closes; never a 200.
		if got != "" && !strings.HasPrefix(got, "HTTP/1.1 400") && !strings.HasPrefix(got, "HTTP/1.1 408") {
			t.Fatalf("the server answered %q to a dribbled header", got)
		}
		if took < shortTimeouts.ReadHeader/2 || took > 3*time.Second {
			t.Fatalf("the connection closed after %v, want about ReadHeaderTimeout (%v)", took, shortTimeouts.ReadHeader)
		}
		close(stop)
		n := <-sent
		t.Logf("header dribble cut after %v, %d bytes sent", took, n)
	})
	t.Run("BodyByteByByte", func(t *testing.T) {
		c := h.dial(t)
		if _, err := io.WriteString(c, "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			"Content-Length: 250\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{}) // a failed test leaves the dribble to end with c
		sent := dribble(c, `{"email":"a@b.example","password":"`+strings.Repeat("p", 250)[:250-36]+`"}`, step, stop)
		got, took := readUntilClosed(t, c, 5*time.Second)
		// The body's read fails at ReadTimeout: the request is refused (400) or the
		// connection closed, and never served.
		if got != "" && !strings.HasPrefix(got, "HTTP/1.1 400") && !strings.HasPrefix(got, "HTTP/1.1 408") {
			t.Fatalf("the server answered %q to a dribbled body", got)
		}
		if took > 3*time.Second {
			t.Fatalf("the connection closed after %v, want about ReadTimeout (%v)", took, shortTimeouts.Read)
		}
		close(stop)
		n := <-sent
		t.Logf("body dribble cut after %v, %d of 250 body bytes sent; answer %q", took, n, firstLine(got))
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// TestHugeBody sends 100 MB bodies, declared and chunked: the node answers 413 and reads
// only a bounded prefix (at most the 1 MiB limit and net/http's 256 KiB drain).
func TestHugeBody(t *testing.T) {
	h := newHostileNode(t, server.Timeouts{})
	f := h.addTenant("acme", engine.PlanStarter)
	const size = 100 << 20
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = ' ' // valid JSON white space, were it ever read whole
	}
	for _, tc := range []struct {
		name, path, key string
		chunked         bool
		maxRead         int64
	}{
		{"DeclaredLogin", "/v1/auth/login", "", false, 512 << 10},
		{"DeclaredEvents", "/v1/events", f.key, false, 512 << 10},
		{"ChunkedLogin", "/v1/auth/login", "", true, 2 << 20},
		{"ChunkedEvents", "/v1/events", f.key, true, 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.ln.read.Load()
			c := h.dial(t)
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
			if tc.key != "" {
				head += "x-svc-api-key: " + tc.key + "\r\n"
			}
			if tc.chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += "Content-Length: " + strconv.Itoa(size) + "\r\n\r\n"
			}
			var wrote atomic.Int64
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(c, head); err != nil {
					return
				}
				for wrote.Load() < size {
					if tc.chunked {
						if _, err := fmt.Fprintf(c, "%x\r\n", len(chunk)); err != nil {
							return
						}
					}
					n, err := c.Write(chunk)
					wrote.Add(int64(n))
					if err != nil {
						return
					}
					if tc.chunked {
						if _, err := io.WriteString(c, "\r\n"); err != nil {
							return
						}
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v (client wrote %d bytes)", err, wrote.Load())
			}
			body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"payload_too_large"`) {
				t.Fatalf("status %d %s, want 413 payload_too_large", res.StatusCode, body)
			}
			c.Close() // ends the writer
			<-writerDone
			read := h.ln.read.Load() - before
			t.Logf("%s: 413; the client wrote %d bytes before the connection failed, the server read %d", tc.name, wrote.Load(), read)
			if read > tc.maxRead {
				t.Fatalf("the server read %d bytes of a %d-byte body, want at most %d", read, size, tc.maxRead)
			}
			if wrote.Load() >= size {
				t.Fatalf("the client wrote the whole %d bytes: the server kept reading", size)
			}
		})
	}
}

// TestBadKeyFlood measures the p99 latency of good requests alone, then while a flood of
// bad-key requests (FIELDRELAY_BADKEY_FLOOD, default 10,000, half well-formed unknown
// keys and half malformed) goes on, and reports both and their ratio. It fails when the
// ratio is above FIELDRELAY_BADKEY_MAX_RATIO (default 1.2). Behind FIELDRELAY_HOSTILE=1
// (make hostile): it takes about 2 × FIELDRELAY_BADKEY_SECONDS (10) seconds. A timing
// measure: on a machine busy with other work its ratio says little.
// FIELDRELAY_BADKEY_CONTROL=1 sends the flood to /healthz without credentials instead:
// the share of the rise that is the flood's volume, not its bad keys.
func TestBadKeyFlood(t *testing.T) {
	if os.Getenv("FIELDRELAY_HOSTILE") == "" {
		t.Skip("a timing measurement: run it with FIELDRELAY_HOSTILE=1 (make hostile)")
	}
	flood := envInt("FIELDRELAY_BADKEY_FLOOD", 10000)
	seconds := envInt("FIELDRELAY_BADKEY_SECONDS", 10)
	goodRate := envInt("FIELDRELAY_BADKEY_GOOD_RATE", 200)
	maxRatio := 1.2
	if s := os.Getenv("FIELDRELAY_BADKEY_MAX_RATIO"); s != "" {
		var err error
		if maxRatio, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	h := newHostileNode(t, server.Timeouts{})
	f := h.addTenant("acme", engine.PlanMissionCritical) // unlimited: no 429 in the measure
	for i := range 20 {
		h.do("POST", "/v1/events", map[string]any{"type": "fire", "priority": "normal", "vertical": "emergency",
			"idempotency_key": "seed-" + strconv.Itoa(i), "payload": map[string]any{"n": i}},
			"x-svc-api-key", f.key).want(http.StatusCreated)
	}
	good := func(c *http.Client) (time.Duration, error) { return timedGood(c, h.url, f.key) }
	// Good load: open loop at goodRate requests/s, so that the flood cannot slow the good
	// clients' own pace; latencies are measured per request. The measure alternates
	// one-second rounds alone and with the flood (flood/seconds bad-key requests each), so
	// that other work on the machine weighs on both alike.
	gc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer gc.CloseIdleConnections()
	// The flood comes from another process, as an attacker's would: in this one its
	// client goroutines would share the node's two Ps and measure the Go scheduler of the
	// test rather than the node.
	flooder := startFlooder(t, h.url, flood/seconds)
	round := func(withFlood bool, lats *[]time.Duration) (bad int) {
		var (
			mu   sync.Mutex
			wg   sync.WaitGroup
			errs atomic.Int64
		)
		if withFlood {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bad = flooder.round(t)
			}()
		}
		tick := time.NewTicker(time.Second / time.Duration(goodRate))
		defer tick.Stop()
		end := time.Now().Add(time.Second)
		for time.Now().Before(end) {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				lat, err := good(gc)
				if err != nil {
					errs.Add(1)
					return
				}
				mu.Lock()
				*lats = append(*lats, lat)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if e := errs.Load(); e > 0 {
			t.Fatalf("%d good requests failed", e)
		}
		return bad
	}
	var warm, alone, flooded []time.Duration
	round(false, &warm) // connections, caches
	bad := 0
	start := time.Now()
	for range seconds {
		round(false, &alone)
		bad += round(true, &flooded)
	}
	took := time.Since(start)
	pct := func(l []time.Duration, p int) time.Duration {
		slices.Sort(l)
		return l[(len(l)*p+99)/100-1].Round(time.Microsecond)
	}
	a99, b99 := pct(alone, 99), pct(flooded, 99)
	ratio := float64(b99) / float64(a99)
	t.Logf("good requests alone:                       n=%d p50=%v p99=%v", len(alone), pct(alone, 50), a99)
	t.Logf("good requests with %d bad-key requests: n=%d p50=%v p99=%v (%d rounds of 1 s each, %v in all)",
		bad, len(flooded), pct(flooded, 50), b99, seconds, took.Round(time.Millisecond))
	t.Logf("p99 ratio %.2f (limit %.2f)", ratio, maxRatio)
	if bad != flood/seconds*seconds {
		t.Fatalf("%d of %d bad-key requests were answered 401", bad, flood/seconds*seconds)
	}
	if ratio > maxRatio {
		t.Fatalf("the bad-key flood raised the good requests' p99 from %v to %v (×%.2f, limit ×%.2f)", a99, b99, ratio, maxRatio)
	}
}

// flooder is a child process (this test binary, TestBadKeyFlooder) that sends one
// second of bad-key requests each time it reads a line, and answers how many got 401.
type flooder struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startFlooder(t *testing.T, url string, perRound int) *flooder {
	t.Helper()
	in, out := startChild(t, []string{os.Args[0], "-test.run=^TestBadKeyFlooder$", "-test.count=1"},
		"FIELDRELAY_FLOODER_URL="+url, "FIELDRELAY_FLOODER_N="+strconv.Itoa(perRound))
	return &flooder{in: in, out: out}
}

// startChild runs args (this test binary, naming the test that plays the child) with env
// added to the environment, and returns its standard input and a scanner of its output;
// closing the input ends it, which the test's cleanup does and waits for.
func startChild(t *testing.T, args []string, env ...string) (io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	return in, bufio.NewScanner(out)
}

// round floods for one second and returns how many requests were answered 401.
func (f *flooder) round(t *testing.T) int {
	if _, err := io.WriteString(f.in, "go\n"); err != nil {
		t.Errorf("flooder: %v", err)
		return 0
	}
	for f.out.Scan() {
		if n, ok := strings.CutPrefix(f.out.Text(), "flooded "); ok {
			v, _ := strconv.Atoi(n)
			return v
		}
	}
	t.Errorf("flooder: %v", f.out.Err())
	return 0
}

// TestBadKeyFlooder is the flooding child of TestBadKeyFlood; it does nothing otherwise.
func TestBadKeyFlooder(t *testing.T) {
	url := os.Getenv("FIELDRELAY_FLOODER_URL")
	if url == "" {
		t.Skip("the child process of TestBadKeyFlood")
	}
	n, _ := strconv.Atoi(os.Getenv("FIELDRELAY_FLOODER_N"))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		bad, _ := badKeyFlood(t, url, n, time.Second)
		fmt.Printf("flooded %d\n", bad)
	}
}

// badKeyFlood sends n requests with bad API keys, spread over d by 16 senders, and
// returns how many were answered 401 and how long it took.
func badKeyFlood(t *testing.T, url string, n int, d time.Duration) (int, time.Duration) {
	const senders = 16
	control := os.Getenv("FIELDRELAY_BADKEY_CONTROL") != ""
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	defer c.CloseIdleConnections()
	var unauthorized atomic.Int64
	var next atomic.Int64
	start := time.Now()
	per := d / time.Duration(n) * senders // each sender's pace
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(per)
			defer tick.Stop()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				<-tick.C
				key := "fr_live_" + rand.Text()[:26] + "xxxxxx" // well-formed, unknown
				if i%2 == 0 {
					key = "not-a-key-" + strconv.FormatInt(i, 10)
				}
				req, _ := http.NewRequest("GET", url+"/v1/events?limit=20", nil)
				req.Header.Set("x-svc-api-key", key)
				if control {
					// The same volume of cheap requests without credentials: what the
					// flood's volume costs by itself.
					req, _ = http.NewRequest("GET", url+"/healthz", nil)
				}
				res, err := c.Do(req)
				if err != nil {
					t.Errorf("bad-key request: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusUnauthorized || control && res.StatusCode == http.StatusOK {
					unauthorized.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(unauthorized.Load()), time.Since(start)
}

// BenchmarkAuthPaths compares the server-side cost of a request with a good key, an
// unknown well-formed key (hashed and looked up), the same unknown key again, a malformed
// key (refused by its shape) and no credentials, through the router without the network.
func BenchmarkAuthPaths(b *testing.B) {
	n := newNode(b)
	f := n.addTenant("acme", engine.PlanMissionCritical)
	h := n.handler(b)
	unknown := "fr_live_" + strings.Repeat("Q", 32)
	for _, bc := range []struct {
		name, key string
		status    int
		fresh     bool // a new unknown key on every request
	}{
		{"GoodKey", f.key, http.StatusOK, false},
		{"UnknownKeyRepeated", unknown, http.StatusUnauthorized, false},
		{"UnknownKeyFresh", "", http.StatusUnauthorized, true},
		{"MalformedKey", "not-a-key", http.StatusUnauthorized, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest("GET", "/v1/tenant/me", nil)
				key := bc.key
				if bc.fresh {
					key = "fr_live_" + rand.Text()[:26] + "xxxxxx"
				}
				req.Header.Set("x-svc-api-key", key)
				w := &discardWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				if w.status != bc.status {
					b.Fatalf("status %d, want %d", w.status, bc.status)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// timedGood makes one good request of the flood measures (GET /v1/events?limit=20 with
// key) through c and answers how long it took; an answer other than 200 is an error.
func timedGood(c *http.Client, url, key string) (time.Duration, error) {
	req, _ := http.NewRequest("GET", url+"/v1/events?limit=20", nil)
	req.Header.Set("x-svc-api-key", key)
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("good request: status %d", res.StatusCode)
	}
	return time.Since(start), nil
}
