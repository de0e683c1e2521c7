package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRateLimit(t *testing.T) {
	n := newNode(t)
	// Start the clock 10 s into a minute so the window's end is known.
	n.clock.Set(time.Date(2026, 6, 9, 10, 0, 10, 0, time.UTC))
	f := n.addTenant("acme", "starter")
	g := n.addTenant("other", "starter")
	key := []string{"x-svc-api-key", f.key}
	reset := strconv.FormatInt(time.Date(2026, 6, 9, 10, 1, 0, 0, time.UTC).Unix(), 10)

	for i := 1; i <= 500; i++ {
		res := n.do("GET", "/v1/tenant/me", nil, key...).want(200)
		if i == 1 || i == 500 {
			h := res.header
			if h.Get("x-ratelimit-limit") != "500" || h.Get("x-ratelimit-remaining") != strconv.Itoa(500-i) || h.Get("x-ratelimit-reset") != reset {
				t.Fatalf("request %d headers: %v", i, h)
			}
		}
	}
	res := n.do("GET", "/v1/tenant/me", nil, key...).wantErr(http.StatusTooManyRequests, "rate_limited")
	if res.header.Get("Retry-After") != "50" || res.header.Get("x-ratelimit-remaining") != "0" || res.header.Get("x-ratelimit-reset") != reset {
		t.Fatalf("429 headers: %v", res.header)
	}
	// Another tenant has its own window.
	n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", g.key).want(200)
	// Login is limited by the lock, not by the tenant's window.
	n.do("POST", "/v1/auth/login", map[string]string{"email": f.emails["api_user"], "password": testPassword}).want(200)

	n.clock.Advance(50 * time.Second)
	res = n.do("GET", "/v1/tenant/me", nil, key...).want(200)
	if res.header.Get("x-ratelimit-remaining") != "499" {
		t.Fatalf("new window headers: %v", res.header)
	}
}

func TestRateLimitUnlimited(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("big", "mission-critical")
	for i := 0; i < 1100; i++ {
		res := n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", f.key).want(200)
		if res.header.Get("x-ratelimit-limit") != "unlimited" || res.header.Get("x-ratelimit-remaining") != "unlimited" || res.header.Get("x-ratelimit-reset") == "" {
			t.Fatalf("headers: %v", res.header)
		}
	}
}

// TestRateLimitUnrouted: a request no route serves still names a tenant by its
// credentials, so its 404 or 405 carries the rate-limit headers and counts in the window;
// without valid credentials it is the plain 404 or 405.
func TestRateLimitUnrouted(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "starter")
	key := []string{"x-svc-api-key", f.key}
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/nonexistent", http.StatusNotFound, "not_found"},
		{"GET", "/v1/events/", http.StatusNotFound, "not_found"},
		{"DELETE", "/v1/events", http.StatusMethodNotAllowed, "method_not_allowed"},
		{"OPTIONS", "/v1/events", http.StatusMethodNotAllowed, "method_not_allowed"},
	}
	for i, c := range cases {
		res := n.do(c.method, c.path, nil, key...).wantErr(c.status, c.code)
		if res.header.Get("x-ratelimit-limit") != "500" || res.header.Get("x-ratelimit-remaining") != strconv.Itoa(499-i) || res.header.Get("x-ratelimit-reset") == "" {
			t.Fatalf("%s %s headers: %v", c.method, c.path, res.header)
		}
		if c.status == http.StatusMethodNotAllowed && (res.header.Get("Allow") == "" || strings.Contains(res.header.Get("Allow"), "OPTIONS")) {
			t.Fatalf("%s %s Allow: %q", c.method, c.path, res.header.Get("Allow"))
		}
		anon := n.do(c.method, c.path, nil, "x-svc-api-key", "fr_live_"+strings.Repeat("x", 32)).wantErr(c.status, c.code)
		if anon.header.Get("x-ratelimit-limit") != "" {
			t.Fatalf("%s %s with a bad key has rate-limit headers: %v", c.method, c.path, anon.header)
		}
	}
}

// TestRateLimitPublicRoutes: a public route answers credentials that name a tenant with
// the tenant's rate-limit headers, without counting the request in its window.
func TestRateLimitPublicRoutes(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "starter")
	key := []string{"x-svc-api-key", f.key}
	n.do("GET", "/v1/tenant/me", nil, key...).want(http.StatusOK) // 499 left
	for _, path := range []string{"/healthz", "/v1/openapi.json"} {
		res := callRaw(t, n, "GET", path, nil, key...)
		if res.status != http.StatusOK || res.header.Get("x-ratelimit-limit") != "500" || res.header.Get("x-ratelimit-remaining") != "499" {
			t.Fatalf("%s with a key: %d %v", path, res.status, res.header)
		}
		if res := callRaw(t, n, "GET", path, nil); res.status != http.StatusOK || res.header.Get("x-ratelimit-limit") != "" {
			t.Fatalf("%s without credentials: %d %v", path, res.status, res.header)
		}
	}
}
