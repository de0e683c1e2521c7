package server_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestPlatform(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "starter")
	key := []string{"x-svc-api-key", f.key}

	t.Run("NotFoundRoute", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/nope", nil).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("MethodNotAllowed", func(t *testing.T) {
		n := n.on(t)
		n.do("DELETE", "/v1/tenant/me", nil, key...).wantErr(http.StatusMethodNotAllowed, "method_not_allowed")
	})
	t.Run("TrailingSlashIsNotRedirected", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/me/", nil, key...).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("UnsupportedMediaType", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/tenant/dispatch-settings", `{"dispatch_mode":true}`,
			append(key, "Content-Type", "text/plain")...).wantErr(http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("ContentTypeWithCharset", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/tenant/dispatch-settings", `{"dispatch_mode":false}`,
			append(key, "Content-Type", "application/json; charset=utf-8")...).want(http.StatusOK)
	})
	t.Run("InvalidJSON", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/tenant/dispatch-settings", `{"dispatch_mode":`, key...).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("PATCH", "/v1/tenant/dispatch-settings", `[1,2]`, key...).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("PATCH", "/v1/tenant/dispatch-settings", `{} {}`, key...).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("POST", "/v1/auth/login", `nope`).wantErr(http.StatusBadRequest, "invalid_json")
	})
	t.Run("PayloadTooLargeWithContentLength", func(t *testing.T) {
		n := n.on(t)
		big := `{"x":"` + strings.Repeat("a", 1<<20) + `"}`
		n.do("PATCH", "/v1/tenant/dispatch-settings", big, key...).wantErr(http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("PayloadTooLargeChunked", func(t *testing.T) {
		n := n.on(t)
		big := strings.NewReader(`{"x":"` + strings.Repeat("a", 1<<20) + `"}`)
		req, _ := http.NewRequest("PATCH", n.url+"/v1/tenant/dispatch-settings", struct{ *strings.Reader }{big})
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-svc-api-key", f.key)
		resp, err := n.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.ContentLength != -1 && req.ContentLength != 0 {
			t.Fatalf("the request was not sent without a length (%d)", req.ContentLength)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
	})
	t.Run("HealthIsPublic", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/healthz", nil).want(http.StatusOK)
		// The test node runs no scheduler (tests drive it with RunDue): not ready.
		n.do("GET", "/readyz", nil).wantErr(http.StatusServiceUnavailable, "unavailable")
	})
	t.Run("RequestIDsDiffer", func(t *testing.T) {
		n := n.on(t)
		a := n.do("GET", "/v1/tenant/me", nil, key...).want(http.StatusOK)
		b := n.do("GET", "/v1/tenant/me", nil, key...).want(http.StatusOK)
		if a.str("request_id") == b.str("request_id") {
			t.Fatal("two requests share a request_id")
		}
	})
}

// TestAccessLogHoldsNoSecrets drives requests carrying a key, a token and passwords and
// scans the log for them.
func TestAccessLogHoldsNoSecrets(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	token := n.login(f.emails["company_admin"])
	n.do("GET", "/v1/tenant/me?x-svc-api-key="+f.key[:4], nil, "x-svc-api-key", f.key).want(http.StatusOK)
	n.do("GET", "/v1/tenant/me", nil, "Authorization", token).want(http.StatusOK)
	n.do("POST", "/v1/auth/login", map[string]string{"email": f.emails["company_admin"], "password": "wrong password!"}).
		wantErr(http.StatusUnauthorized, "invalid_credentials")
	logs := n.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatalf("no access log line: %s", logs)
	}
	for _, secret := range []string{f.key, strings.TrimPrefix(token, "Bearer "), testPassword, "wrong password!"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the log holds a secret %q", secret)
		}
	}
}
