package server_test

import (
	"net/http"
	"strconv"
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
