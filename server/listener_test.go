package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// Answers below the router (docs/decisions/0083-answers-below-router.md):
// requests net/http cannot read, sent as raw
// bytes over a real socket to srv.Serve, plain and over TLS, are answered in the envelope.

// edgeNode is a node served as `fieldrelay serve` serves it: srv.Serve on 127.0.0.1.
type edgeNode struct {
	*node
	addr string
	tls  *tls.Config // the client's, nil for plain HTTP
}

func newEdgeNode(t *testing.T, withTLS bool, to ...server.Timeouts) *edgeNode {
	t.Helper()
	db := storetest.MustOpenDB(t)
	n := &node{t: t, clock: model.NewFakeClock(modeltest.Epoch),
		mailer: &captureMailer{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(n.logs, nil))
	n.eng = engine.New(db, engine.Options{Clock: n.clock, Password: cheapPasswords, Mailer: n.mailer, Logger: log})
	cfg := server.Config{Logger: log}
	if len(to) > 0 {
		cfg.Timeouts = to[0]
	}
	var err error
	if n.srv, err = server.New(context.Background(), n.eng, cfg); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &edgeNode{node: n, addr: ln.Addr().String()}
	var serverTLS *tls.Config
	if withTLS {
		serverTLS, e.tls = selfSignedTLS(t)
	}
	hs := n.srv.HTTPServer(e.addr)
	done := make(chan error, 1)
	go func() { done <- n.srv.Serve(hs, ln, serverTLS) }()
	t.Cleanup(func() {
		_ = hs.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	})
	scheme, tr := "http://", &http.Transport{}
	if withTLS {
		scheme, tr = "https://", &http.Transport{TLSClientConfig: e.tls.Clone(), ForceAttemptHTTP2: true}
	}
	n.url, n.client = scheme+e.addr, &http.Client{Timeout: 10 * time.Second, Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	return e
}

// dial opens a raw HTTP/1.1 connection (TLS offering only http/1.1).
func (e *edgeNode) dial(t *testing.T) net.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	var c net.Conn
	var err error
	if e.tls != nil {
		cfg := e.tls.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		c, err = tls.DialWithDialer(d, "tcp", e.addr, cfg)
	} else {
		c, err = d.Dial("tcp", e.addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// rawAnswer is an answer read off a raw connection.
type rawAnswer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// exchange writes raw (in the background: the server may answer before reading it all)
// and reads every answer until the server closes the connection.
func exchange(t *testing.T, c net.Conn, raw string) []rawAnswer {
	t.Helper()
	go func() { _, _ = io.WriteString(c, raw) }()
	all, err := io.ReadAll(c)
	if err != nil && len(all) == 0 {
		t.Fatalf("reading the answer to %.60q: %v", raw, err)
	}
	var out []rawAnswer
	br := bufio.NewReader(bytes.NewReader(all))
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return out
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer to %.60q does not parse: %v\n%q", raw, err, all)
		}
		body, _ := io.ReadAll(res.Body)
		a := rawAnswer{status: res.StatusCode, header: res.Header, raw: body}
		_ = json.Unmarshal(body, &a.body)
		out = append(out, a)
	}
}

// wantEnvelope checks an answer is the contract's error envelope.
func (a rawAnswer) wantEnvelope(t *testing.T, status int, code, msg string) {
	t.Helper()
	id, _ := a.body["request_id"].(string)
	if a.status != status || a.body["error"] != code || id == "" || id != a.header.Get("X-Request-Id") ||
		a.header.Get("Content-Type") != "application/json" || !strings.Contains(a.body["message"].(string), msg) {
		t.Fatalf("answer %d %v %s, want %d %s with %q", a.status, a.header, a.raw, status, code, msg)
	}
}

func TestAnswersBelowRouter(t *testing.T) {
	bigHeader := "X-Big: " + strings.Repeat("a", 80<<10) + "\r\n"
	cases := []struct {
		name, request string
		status        int
		code, msg     string
	}{
		{"BadEscape", "GET /v1/events/%zz HTTP/1.1\r\nHost: node\r\n\r\n", 400, "malformed_request", "valid %-escapes"},
		{"BadEscapeAbsolute", "GET http://node/%zz HTTP/1.1\r\nHost: node\r\n\r\n", 400, "malformed_request", "malformed request"},
		{"Garbage", "garbage\r\n\r\n", 400, "malformed_request", "malformed request"},
		{"BadContentLength", "POST /v1/events HTTP/1.1\r\nHost: node\r\nContent-Length: x\r\n\r\n", 400, "malformed_request", "malformed request"},
		{"NoHost", "GET /healthz HTTP/1.1\r\n\r\n", 400, "malformed_request", "malformed request: missing required Host header"},
		{"BadHeaderName", "GET /healthz HTTP/1.1\r\nHost: node\r\nBad Name: 1\r\n\r\n", 400, "malformed_request", "invalid header name"},
		{"HeadersTooLarge", "GET /healthz HTTP/1.1\r\nHost: node\r\n" + bigHeader + "\r\n", 431, "headers_too_large", "larger than 64 KiB"},
		{"UnknownTransferEncoding", "POST /v1/events HTTP/1.1\r\nHost: node\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not_implemented", "chunked"},
		{"HTTPVersion", "GET /healthz HTTP/2.1\r\nHost: node\r\n\r\n", 505, "http_version_not_supported", "unsupported protocol version"},
		{"Expect", "GET /healthz HTTP/1.1\r\nHost: node\r\nExpect: teapot\r\n\r\n", 417, "expectation_failed", "100-continue"},
	}
	for _, withTLS := range []bool{false, true} {
		name := "Plain"
		if withTLS {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) {
			e := newEdgeNode(t, withTLS)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					answers := exchange(t, e.dial(t), c.request)
					if len(answers) != 1 {
						t.Fatalf("%d answers", len(answers))
					}
					answers[0].wantEnvelope(t, c.status, c.code, c.msg)
					if id := answers[0].body["request_id"].(string); !strings.Contains(e.logs.String(), `"request_id":"`+id+`"`) {
						t.Fatalf("the access log has no line for %s:\n%s", id, e.logs)
					}
				})
			}
			t.Run("KeepAlive", func(t *testing.T) {
				// A good request, then a malformed one on the same connection.
				answers := exchange(t, e.dial(t), "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\nGET /%zz HTTP/1.1\r\nHost: node\r\n\r\n")
				if len(answers) != 2 || answers[0].status != 200 || answers[0].body["status"] != "ok" {
					t.Fatalf("answers: %+v", answers)
				}
				answers[1].wantEnvelope(t, 400, "malformed_request", "malformed request")
			})
			t.Run("Served", func(t *testing.T) {
				// Well-formed requests go through untouched, HTTP/2 included over TLS.
				res := e.do("GET", "/healthz", nil).want(200)
				wantProto := 1
				if withTLS {
					wantProto = 2
				}
				r, err := e.client.Get(e.url + "/v1/events/%41")
				if err != nil {
					t.Fatal(err)
				}
				r.Body.Close()
				if r.ProtoMajor != wantProto || r.StatusCode != http.StatusUnauthorized || res.str("status") != "ok" {
					t.Fatalf("%s: %d", r.Proto, r.StatusCode)
				}
			})
		})
	}
}

// Plain HTTP sent to the TLS port is answered in plain HTTP, in the envelope.
func TestAnswersBelowRouter_PlainHTTPToTLS(t *testing.T) {
	e := newEdgeNode(t, true)
	c, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	answers := exchange(t, c, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n")
	if len(answers) != 1 {
		t.Fatalf("%d answers", len(answers))
	}
	answers[0].wantEnvelope(t, 400, "malformed_request", "this port speaks HTTPS")
}

// A client that opens a connection to the TLS port and never says hello is cut at the
// handshake timeout, and holds no one else up meanwhile.
func TestAnswersBelowRouter_SlowHandshake(t *testing.T) {
	e := newEdgeNode(t, true, shortTimeouts)
	idle, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	start := time.Now()
	e.do("GET", "/healthz", nil).want(200)
	if took := time.Since(start); took > shortTimeouts.ReadHeader {
		t.Fatalf("a request took %v beside a silent connection", took)
	}
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := idle.Read(make([]byte, 1))
	if took := time.Since(start); n != 0 || err != io.EOF || took < shortTimeouts.ReadHeader/2 || took > 3*time.Second {
		t.Fatalf("the silent connection: %d bytes, %v after %v; want EOF after about %v", n, err, took, shortTimeouts.ReadHeader)
	}
}

// selfSignedTLS makes a self-signed certificate as a node does and answers the server's
// TLS configuration and a client's that trusts it (for 127.0.0.1).
func selfSignedTLS(t testing.TB) (serverTLS, clientTLS *tls.Config) {
	t.Helper()
	cert, err := server.EnsureSelfSigned(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if serverTLS, _, err = server.LoadTLSConfig(cert.CertFile, cert.KeyFile); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(cert.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return serverTLS, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}
