package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeEdges drives `fieldrelay serve` as it starts by default (TLS, self-signed)
// with raw requests over a real socket: what net/http answers by itself is JSON, HEAD is
// served where GET is, and GET / redirects to the console.
func TestServeEdges(t *testing.T) {
	bin := binary(t)
	data := t.TempDir()
	var created struct {
		APIKey string `json:"api_key"`
	}
	out := mustRun(t, bin, "", "tenant", "create", "--data", data, "--name", "Edge", "--slug", "edge",
		"--email", "ops@edge.example", "--country", "fr", "--json")
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatal(err)
	}
	s := serve(t, bin, data, true)
	pem, err := os.ReadFile(filepath.Join(data, "tls", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	addr := strings.TrimPrefix(s.base, "https://")

	// raw sends one request on a new HTTP/1.1 TLS connection and reads the answer.
	raw := func(req string) (*http.Response, []byte) {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { _, _ = io.WriteString(c, req) }()
		method, _, _ := strings.Cut(req, " ")
		res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%.40q: %v", req, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	envelope := func(what string, res *http.Response, body []byte, status int, code string) {
		t.Helper()
		var e map[string]any
		if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != status || e["error"] != code ||
			e["request_id"] == nil || e["request_id"] != res.Header.Get("X-Request-Id") {
			t.Fatalf("%s: %d %v %s, want %d %s", what, res.StatusCode, res.Header, body, status, code)
		}
	}

	res, body := raw("GET /v1/events/%zz HTTP/1.1\r\nHost: node\r\nx-svc-api-key: " + created.APIKey + "\r\n\r\n")
	envelope("a bad %-escape", res, body, 400, "malformed_request")
	res, body = raw("GET /healthz HTTP/1.1\r\nHost: node\r\nX-Big: " + strings.Repeat("b", 100<<10) + "\r\n\r\n")
	envelope("headers over 64 KiB", res, body, 431, "headers_too_large")

	res, body = raw("HEAD /v1/events HTTP/1.1\r\nHost: node\r\nx-svc-api-key: " + created.APIKey + "\r\n\r\n")
	if res.StatusCode != 200 || len(body) != 0 || res.Header.Get("Content-Type") != "application/json" ||
		res.Header.Get("x-ratelimit-limit") != "500" {
		t.Fatalf("HEAD /v1/events: %d %v %q", res.StatusCode, res.Header, body)
	}
	res, body = raw("GET / HTTP/1.1\r\nHost: node\r\n\r\n")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/console/" {
		t.Fatalf("GET /: %d %v %s", res.StatusCode, res.Header, body)
	}

	// Plain HTTP on the TLS port.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n")
	res, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	envelope("plain HTTP to the TLS port", res, body, 400, "malformed_request")

	// The usual client (HTTP/2 where offered) is served as before.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	r, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(s.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 || r.ProtoMajor != 2 {
		t.Fatalf("GET /healthz: %s %d", r.Proto, r.StatusCode)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, s.logs)
	}
}
