package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
)

// Connection caps (docs/decisions/0141-connection-caps.md) through a real socket on
// 127.0.0.0/8: each loopback address is a client address of its own.

// heldListener counts the connections the node holds open, and the most at once.
type heldListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *heldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &heldConn{Conn: c, l: l}, nil
}

type heldConn struct {
	net.Conn
	l    *heldListener
	once sync.Once
}

func (c *heldConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

func (c *heldConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

// cappedNode is a node served by srv.Serve with connection caps.
type cappedNode struct {
	*node
	addr string
	ln   *heldListener
	tls  *tls.Config // the client's, nil for plain HTTP
}

func newCappedNode(t testing.TB, limits server.ConnLimits, withTLS bool) *cappedNode {
	t.Helper()
	db := storetest.MustOpenDB(t)
	n := &node{t: t, clock: model.NewFakeClock(modeltest.Epoch), mailer: &captureMailer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(n.logs, nil))
	n.eng = engine.New(db, engine.Options{Clock: n.clock, Password: cheapPasswords, Mailer: n.mailer, Logger: log})
	// A silent connection is held for as long as the test needs it.
	cfg := server.Config{Logger: log, InternalSecret: testInternalSecret, Conns: limits,
		Timeouts: server.Timeouts{ReadHeader: time.Minute}}
	var err error
	if n.srv, err = server.New(context.Background(), n.eng, cfg); err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cappedNode{node: n, addr: inner.Addr().String(), ln: &heldListener{Listener: inner}}
	var serverTLS *tls.Config
	if withTLS {
		serverTLS, c.tls = selfSignedTLS(t)
		c.tls.NextProtos = []string{"http/1.1"}
	}
	hs := n.srv.HTTPServer(c.addr)
	done := make(chan struct{})
	go func() { defer close(done); _ = n.srv.Serve(hs, c.ln, serverTLS) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	n.url = "http://" + c.addr
	return c
}

// dialFrom opens a raw TCP connection from the loopback address ip.
func (c *cappedNode) dialFrom(t testing.TB, ip string) net.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// clientFrom is an HTTP client whose connections come from the loopback address ip.
func (c *cappedNode) clientFrom(t testing.TB, ip string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

// connMetrics are the connection families of a scrape (through the handler: a scrape
// takes no connection of its own), checked to parse as Prometheus text.
func (c *cappedNode) connMetrics(t testing.TB) map[string]float64 {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("x-svc-internal", testInternalSecret)
	w := httptest.NewRecorder()
	c.srv.Handler().ServeHTTP(w, req)
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes()))
	if w.Code != http.StatusOK || err != nil {
		t.Fatalf("/metrics: %d %v", w.Code, err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += "{" + l.GetValue() + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func (c *cappedNode) wantConnMetrics(t testing.TB, want map[string]float64) {
	t.Helper()
	got := c.connMetrics(t)
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %v, want %v (all: open %v, refused %v/%v, idle closed %v)", k, got[k], v,
				got["fieldrelay_http_connections_open"], got["fieldrelay_http_connections_refused_total{per_address}"],
				got["fieldrelay_http_connections_refused_total{total}"], got["fieldrelay_http_connections_idle_closed_total"])
		}
	}
}

// waitIdle waits until n connections wait idle: net/http marks one idle just after it
// has written the answer, which the client may read first.
func (c *cappedNode) waitIdle(t testing.TB, n float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.connMetrics(t)["fieldrelay_http_connections_idle"] != n {
		if time.Now().After(deadline) {
			t.Fatalf("%v idle connections after 10 s, want %v", c.connMetrics(t)["fieldrelay_http_connections_idle"], n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// answered is what a raw connection read: its first answer and whether the node then
// closed the connection.
type answered struct {
	i      int
	res    *http.Response
	body   map[string]any
	closed bool
	err    error
}

// readAnswer reads the first answer on c in the background and reports it on out.
func readAnswer(i int, c net.Conn, out chan<- answered) {
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			out <- answered{i: i, err: err}
			return
		}
		raw, _ := io.ReadAll(res.Body)
		a := answered{i: i, res: res}
		_ = json.Unmarshal(raw, &a.body)
		if res.Close {
			_, err := br.ReadByte()
			a.closed = errors.Is(err, io.EOF)
		}
		out <- a
	}()
}

// collect waits for n answers (a minute at most).
func collect(t *testing.T, ch <-chan answered, n int) []answered {
	t.Helper()
	var out []answered
	timeout := time.After(time.Minute)
	for len(out) < n {
		select {
		case a := <-ch:
			out = append(out, a)
		case <-timeout:
			t.Fatalf("%d of %d answers within a minute", len(out), n)
		}
	}
	return out
}

// wantRefused checks a refusal: 503 unavailable in the envelope, Retry-After, then a close.
func wantRefused(t *testing.T, a answered, msg string) {
	t.Helper()
	if a.err != nil {
		t.Fatalf("connection %d: %v", a.i, a.err)
	}
	id, _ := a.body["request_id"].(string)
	m, _ := a.body["message"].(string)
	if a.res.StatusCode != http.StatusServiceUnavailable || a.body["error"] != "unavailable" || id == "" ||
		id != a.res.Header.Get("X-Request-Id") || a.res.Header.Get("Retry-After") != "1" || !a.closed ||
		a.res.Header.Get("Content-Type") != "application/json" || !bytes.Contains([]byte(m), []byte(msg)) {
		t.Fatalf("connection %d: %d %v %v closed=%v, want a 503 unavailable (%q) and a close", a.i, a.res.StatusCode,
			a.res.Header, a.body, a.closed, msg)
	}
}

// TestConnCaps: one address opens five times its cap of connections and holds them; the
// node holds no more than the cap and refuses the rest at once (503 in the envelope), a
// client at another address is served, a third address fills the total, and idle
// keep-alive connections make room for new ones. /metrics counts it all.
func TestConnCaps(t *testing.T) {
	const perAddress, total, flood = 20, 30, 100
	c := newCappedNode(t, server.ConnLimits{Total: total, PerAddress: perAddress}, false)
	// Any idle connection may be closed for a new one: what "idle" is, not how long it
	// must last (TestConnLimiter_IdleClosedAtCap), is tested here.
	server.SetMinIdleToClose(c.srv, 0)
	results := make(chan answered, flood+total)

	// 127.0.0.1 opens 100 connections and sends nothing: 20 are held, 80 refused.
	conns := make([]net.Conn, flood)
	for i := range conns {
		conns[i] = c.dialFrom(t, "127.0.0.1")
		readAnswer(i, conns[i], results)
	}
	refused := map[int]bool{}
	for _, a := range collect(t, results, flood-perAddress) {
		wantRefused(t, a, "too many connections from this address")
		refused[a.i] = true
	}
	c.wantConnMetrics(t, map[string]float64{"fieldrelay_http_connections_open": perAddress,
		"fieldrelay_http_connections_max":                        total,
		"fieldrelay_http_connections_refused_total{per_address}": flood - perAddress,
		"fieldrelay_http_connections_refused_total{total}":       0})

	// Another address is served beside them, and keeps its connection alive (idle).
	good := c.clientFrom(t, "127.0.0.2")
	get := func(cl *http.Client) int {
		t.Helper()
		res, err := cl.Get(c.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if status := get(good); status != http.StatusOK {
		t.Fatalf("the second client: %d", status)
	}
	c.waitIdle(t, 1)

	// 127.0.0.3 fills the total: 9 connections fit, the 10th closes the second client's
	// idle one, the other 10 are refused.
	for i := flood; i < flood+perAddress; i++ {
		readAnswer(i, c.dialFrom(t, "127.0.0.3"), results)
	}
	for _, a := range collect(t, results, perAddress/2) {
		wantRefused(t, a, "the node has too many open connections")
	}
	c.wantConnMetrics(t, map[string]float64{"fieldrelay_http_connections_open": total,
		"fieldrelay_http_connections_refused_total{per_address}": flood - perAddress,
		"fieldrelay_http_connections_refused_total{total}":       perAddress / 2,
		"fieldrelay_http_connections_idle_closed_total":          1})

	// The connections 127.0.0.1 holds are served, then wait idle; the second client, its
	// own connection closed, gets a new one in place of the longest idle of them.
	for i, conn := range conns {
		if !refused[i] {
			if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, a := range collect(t, results, perAddress) {
		if a.err != nil || a.res.StatusCode != http.StatusOK || a.i >= flood || refused[a.i] {
			t.Fatalf("connection %d: %+v", a.i, a)
		}
	}
	c.waitIdle(t, perAddress)
	if status := get(good); status != http.StatusOK {
		t.Fatalf("the second client at the total cap: %d", status)
	}
	c.wantConnMetrics(t, map[string]float64{"fieldrelay_http_connections_open": total,
		"fieldrelay_http_connections_refused_total{per_address}": flood - perAddress,
		"fieldrelay_http_connections_refused_total{total}":       perAddress / 2,
		"fieldrelay_http_connections_idle_closed_total":          2})
	// The node never held more than its cap, the refused connections it was still
	// closing (MaxLingering at most: these clients keep theirs open) and the one it was
	// accepting.
	if peak := c.ln.peak.Load(); peak > total+server.MaxLingering+1 {
		t.Fatalf("the node held %d connections at once, cap %d", peak, total)
	}
	t.Logf("most connections held at once: %d (cap %d)", c.ln.peak.Load(), total)
}

// TestConnCaps_TLS: over TLS a connection over the cap is closed before any handshake.
func TestConnCaps_TLS(t *testing.T) {
	const perAddress, flood = 3, 10
	c := newCappedNode(t, server.ConnLimits{PerAddress: perAddress}, true)
	conns := make([]net.Conn, flood)
	for i := range conns {
		conns[i] = c.dialFrom(t, "127.0.0.1")
	}
	var wg sync.WaitGroup
	var ok, closed atomic.Int64
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = conn.SetDeadline(time.Now().Add(time.Minute))
			tc := tls.Client(conn, c.tls)
			if err := tc.Handshake(); err != nil {
				closed.Add(1)
				return
			}
			if _, err := io.WriteString(tc, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
				t.Error(err)
				return
			}
			res, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Errorf("a held connection: %v %v", res, err)
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	if ok.Load() != perAddress || closed.Load() != flood-perAddress {
		t.Fatalf("%d served, %d closed; want %d and %d", ok.Load(), closed.Load(), perAddress, flood-perAddress)
	}
	c.wantConnMetrics(t, map[string]float64{"fieldrelay_http_connections_open": perAddress,
		"fieldrelay_http_connections_refused_total{per_address}": flood - perAddress})
	if _, ok := c.connMetrics(t)["fieldrelay_http_connections_max"]; ok {
		t.Fatal("fieldrelay_http_connections_max without a total cap")
	}
}
