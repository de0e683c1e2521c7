package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/server/servertest"
)

// HEAD wherever GET (docs/decisions/0081-head.md): the same status and headers, no body,
// through the same credentials and rate limit.

// send sends method path with headers (name, value pairs) and returns the answer and its
// body, following no redirect. A stream's body is not read.
func send(t *testing.T, n *node, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := servertest.NewRequest(t, ctx, method, n.url+path, nil, headers...)
	client := *n.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") == "text/event-stream" {
		return res, nil
	}
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// headersOf are an answer's headers but those that differ from one request to the next.
func headersOf(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range []string{"Date", "X-Request-Id", "X-Ratelimit-Remaining"} {
		out.Del(k)
	}
	return out
}

func TestHead_EveryGetRoute(t *testing.T) {
	const secret = "0123456789abcdef-internal"
	n := newNodeWith(t, nodeOptions{internalSecret: secret})
	f := n.addTenant("acme", "mission-critical")
	callers := map[string][]string{
		"none":           nil,
		"key":            {"x-svc-api-key", f.key},
		"field_operator": {"Authorization", n.login(f.emails["field_operator"])},
	}
	var gets int
	for _, r := range server.Routes(n.srv) {
		if r.Method != "GET" {
			continue
		}
		gets++
		path := strings.NewReplacer(":id", "0190b8a0-0000-7000-8000-000000000000", ":code", "Z1",
			"*file", "js/app.js").Replace(r.Path)
		for name, creds := range callers {
			if r.Path == "/metrics" {
				creds = append(slices.Clone(creds), "x-svc-internal", secret)
			}
			get, getBody := send(t, n, "GET", path, creds...)
			head, headBody := send(t, n, "HEAD", path, creds...)
			want, got := headersOf(get.Header), headersOf(head.Header)
			if r.Path == "/metrics" { // the counters move between the two
				want.Del("Content-Length")
				got.Del("Content-Length")
			}
			if head.StatusCode != get.StatusCode || len(headBody) != 0 || !equalHeaders(want, got) {
				t.Errorf("%s as %s: GET %d %v, HEAD %d %v (%d body bytes)", path, name,
					get.StatusCode, want, head.StatusCode, got, len(headBody))
			}
			if get.StatusCode != http.StatusOK && len(getBody) == 0 && get.Header.Get("Content-Type") != "text/event-stream" &&
				get.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s as %s: %d without a body", path, name, get.StatusCode)
			}
		}
	}
	if gets < 20 {
		t.Fatalf("only %d GET routes", gets)
	}
	// HEAD is counted under its own method, its series made on first use.
	_, metrics := send(t, n, "GET", "/metrics", "x-svc-internal", secret)
	for _, want := range []string{`fieldrelay_http_requests_total{method="HEAD",route="/healthz",status="200"} 3`,
		`fieldrelay_http_requests_total{method="GET",route="/healthz",status="200"} 3`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Series are made as they occur, for HEAD as for GET (docs/decisions/0067-metrics-series.md).
	if strings.Contains(string(metrics), `route="/healthz",status="500"`) {
		t.Error("a series of a status never answered is exported")
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestHead_NoBodyOnTheWire reads raw answers: a HEAD answer ends with its headers, the
// stream's too (it opens no stream).
func TestHead_NoBodyOnTheWire(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	u, _ := url.Parse(n.url)
	for _, path := range []string{"/v1/events", "/console/", "/console/js/app.js", "/healthz", "/v1/openapi.json", "/v1/stream", "/", "/nope"} {
		c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "HEAD "+path+" HTTP/1.1\r\nHost: node\r\nx-svc-api-key: "+f.key+"\r\nConnection: close\r\n\r\n")
		raw, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("HEAD %s: %v after %q", path, err, raw)
		}
		res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), &http.Request{Method: "HEAD"})
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		head := strings.Index(string(raw), "\r\n\r\n") + 4
		if head != len(raw) || res.Header.Get("X-Request-Id") == "" {
			t.Errorf("HEAD %s: %d bytes after the headers: %q", path, len(raw)-head, raw)
		}
		if path == "/v1/events" && (res.StatusCode != 200 || res.Header.Get("Content-Length") == "" || res.Header.Get("x-ratelimit-limit") != "1000") {
			t.Errorf("HEAD /v1/events: %q", raw)
		}
		if path == "/nope" && res.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD /nope: %d", res.StatusCode)
		}
	}
}

// HEAD counts in the tenant's window and is refused over it, as GET is.
func TestHead_RateLimited(t *testing.T) {
	n := newNode(t)
	n.clock.Set(time.Date(2026, 6, 9, 10, 0, 10, 0, time.UTC))
	f := n.addTenant("acme", "starter")
	key := []string{"x-svc-api-key", f.key}
	for i := 1; i <= 500; i++ {
		method := "HEAD"
		if i%2 == 0 {
			method = "GET"
		}
		res, _ := send(t, n, method, "/v1/tenant/me", key...)
		if res.StatusCode != 200 || res.Header.Get("x-ratelimit-remaining") != strconv.Itoa(500-i) {
			t.Fatalf("%s %d: %d, remaining %s", method, i, res.StatusCode, res.Header.Get("x-ratelimit-remaining"))
		}
	}
	for _, method := range []string{"HEAD", "GET"} {
		res, _ := send(t, n, method, "/v1/tenant/me", key...)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "50" {
			t.Fatalf("%s over the limit: %d %v", method, res.StatusCode, res.Header)
		}
	}
	// Credentials are checked as for GET.
	if res, _ := send(t, n, "HEAD", "/v1/events"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HEAD without credentials: %d", res.StatusCode)
	}
}

// The 405 of a path served by GET lists HEAD in Allow.
func TestHead_Allow(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	for path, want := range map[string]string{
		"/v1/events":     "GET, HEAD, POST",
		"/v1/tenant/me":  "GET, HEAD",
		"/console/":      "GET, HEAD",
		"/v1/auth/login": "POST",
	} {
		res := n.do("PUT", path, nil, "x-svc-api-key", f.key).wantErr(http.StatusMethodNotAllowed, "method_not_allowed")
		if got := res.header.Get("Allow"); got != want {
			t.Errorf("PUT %s: Allow %q, want %q", path, got, want)
		}
	}
}

// GET / sends a browser to the console; both redirects answer JSON with request_id.
func TestRedirects(t *testing.T) {
	n := newNode(t)
	for path, status := range map[string]int{"/": http.StatusFound, "/console": http.StatusMovedPermanently} {
		res, raw := send(t, n, "GET", path)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if res.StatusCode != status || res.Header.Get("Location") != "/console/" || body["location"] != "/console/" ||
			body["request_id"] == nil || body["request_id"] != res.Header.Get("X-Request-Id") ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %v %s", path, res.StatusCode, res.Header, raw)
		}
	}
}
