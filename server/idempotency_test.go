package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestIdempotentWrites(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	g := n.addTenant("other", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}

	t.Run("ReplayReturnsTheOriginal", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"email": "idem@acme.example", "name": "Idem", "role": "api_user", "password": "long enough pw"}
		a := n.do("POST", "/v1/tenant/users", body, append(admin, "Idempotency-Key", "create-idem-1")...).want(201)
		b := n.do("POST", "/v1/tenant/users", body, append(admin, "Idempotency-Key", "create-idem-1")...).want(201)
		if string(a.raw) != string(b.raw) || b.header.Get("Idempotent-Replayed") != "true" || a.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("replay differs:\n%s\n%s", a.raw, b.raw)
		}
		if b.header.Get("X-Request-Id") != a.str("request_id") {
			t.Fatal("the replay's X-Request-Id is not the original's")
		}
	})
	t.Run("BodyFieldKey", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"dispatch_threshold": 0.3, "idempotency_key": "settings-1"}
		a := n.do("PATCH", "/v1/tenant/dispatch-settings", body, admin...).want(200)
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.5}, admin...).want(200)
		b := n.do("PATCH", "/v1/tenant/dispatch-settings", body, admin...).want(200)
		if string(a.raw) != string(b.raw) || b.header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("the body-field key did not replay")
		}
		if n.do("GET", "/v1/tenant/me", nil, admin...).num("dispatch_threshold") != 0.5 {
			t.Fatal("the replay ran the write again")
		}
	})
	t.Run("SameJSONWrittenOtherwise", func(t *testing.T) {
		// The same JSON with its keys in another order and other white space is the same
		// request: a replay, not idempotency_key_reused.
		n := n.on(t)
		h := append(admin, "Idempotency-Key", "settings-json")
		a := n.do("PATCH", "/v1/tenant/dispatch-settings", `{"dispatch_threshold":0.25,"reinforcement_timeout_min":0}`, h...).want(200)
		b := n.do("PATCH", "/v1/tenant/dispatch-settings", "{ \"reinforcement_timeout_min\" : 0,\n  \"dispatch_threshold\": 0.25 }", h...).want(200)
		if string(a.raw) != string(b.raw) || b.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the same JSON written otherwise did not replay:\n%s\n%s", a.raw, b.raw)
		}
	})
	t.Run("ErrReusedWithAnotherBody", func(t *testing.T) {
		n := n.on(t)
		h := append(admin, "Idempotency-Key", "settings-2")
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.3}, h...).want(200)
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.4}, h...).wantErr(422, "idempotency_key_reused")
	})
	t.Run("ScopedToTenantAndRoute", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"dispatch_mode": true}
		n.do("PATCH", "/v1/tenant/dispatch-settings", body, append(admin, "Idempotency-Key", "shared")...).want(200)
		res := n.do("PATCH", "/v1/tenant/dispatch-settings", body, "Authorization", n.login(g.emails["company_admin"]), "Idempotency-Key", "shared").want(200)
		if res.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a key of another tenant replayed")
		}
	})
	t.Run("ErrKeyTooLong", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true},
			append(admin, "Idempotency-Key", strings.Repeat("k", 256))...).wantErr(400, "validation_error", "idempotency_key")
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"idempotency_key": 5}, admin...).wantErr(400, "validation_error", "idempotency_key")
	})
	t.Run("FailureStoresNothing", func(t *testing.T) {
		n := n.on(t)
		h := append(admin, "Idempotency-Key", "bad-then-good")
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 3}, h...).wantErr(400, "validation_error")
		n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_threshold": 0.2}, h...).want(200)
	})
	t.Run("ConcurrentDuplicatesRunOnce", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"email": "race@acme.example", "name": "Race", "role": "api_user", "password": "long enough pw"}
		var wg sync.WaitGroup
		raws := make([]string, 20)
		for i := range raws {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				res := n.do("POST", "/v1/tenant/users", body, append(admin, "Idempotency-Key", "race-1")...)
				if res.status != http.StatusCreated {
					t.Errorf("status %d: %s", res.status, res.raw)
				}
				raws[i] = string(res.raw)
			}(i)
		}
		wg.Wait()
		for _, r := range raws[1:] {
			if r != raws[0] {
				t.Fatal("concurrent duplicates got different answers")
			}
		}
	})
}
