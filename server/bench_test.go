package server_test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkTenantMe measures an authenticated GET /v1/tenant/me through the real router
// and a real store, without the network.
func BenchmarkTenantMe(b *testing.B) {
	n := newNode(b)
	f := n.addTenant("acme", "mission-critical")
	h := n.handler(b)
	for name, hdr := range map[string][2]string{
		"APIKey": {"x-svc-api-key", f.key},
		"JWT":    {"Authorization", n.login(f.emails["company_admin"])},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v1/tenant/me", nil)
				req.Header.Set(hdr[0], hdr[1])
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}

// BenchmarkLogin measures POST /v1/auth/login through the real router with the
// production argon2id costs.
func BenchmarkLogin(b *testing.B) {
	n := newNodeWith(b, nodeOptions{realPasswords: true})
	f := n.addTenant("acme", "mission-critical")
	h := n.handler(b)
	body := `{"email":"` + f.emails["company_admin"] + `","password":"` + testPassword + `"}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/auth/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
