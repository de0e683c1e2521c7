package server_test

import (
	"fmt"
	"maps"
	"net/http"
	"testing"
)

// TestNullBody: a body of literal null is no JSON object, so every route that takes one
// refuses it (400 invalid_json, as an array or a string) instead of reading it as {}:
// dispatch settings, retention, API key creation and rotation change nothing. Rotation
// without a body rotates as before.
func TestNullBody(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("nul", "mission-critical")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	key := []string{"x-svc-api-key", f.key}
	const id = "0190b8a0-0000-7000-8000-000000000000"
	keys := func() []map[string]any {
		return n.do("GET", "/v1/tenant/api-keys", nil, admin...).want(http.StatusOK).items()
	}
	before := keys()
	tenant := n.do("GET", "/v1/tenant/me", nil, admin...).want(http.StatusOK).body
	retention := n.do("GET", "/v1/tenant/retention", nil, admin...).want(http.StatusOK).body

	for _, rt := range []struct {
		method, path string
		creds        []string
	}{
		{"PATCH", "/v1/tenant/dispatch-settings", admin},
		{"PATCH", "/v1/tenant/retention", admin},
		{"POST", "/v1/tenant/api-keys", admin},
		{"POST", "/v1/tenant/api-keys/rotate", admin},
		{"POST", "/v1/tenant/users", admin},
		{"PATCH", "/v1/tenant/users/" + id, admin},
		{"PUT", "/v1/tenant/upstream", admin},
		{"POST", "/v1/events", admin},
		{"POST", "/v1/zones", admin},
		{"PATCH", "/v1/zones/Z1", admin},
		{"POST", "/v1/connectivity/report", admin},
		{"POST", "/v1/teams", admin},
		{"PATCH", "/v1/teams/" + id, admin},
		{"POST", "/v1/teams/" + id + "/members", admin},
		{"PATCH", "/v1/teams/" + id + "/members/" + id + "/location", admin},
		{"POST", "/v1/teams/dispatch", admin},
		{"POST", "/v1/teams/dispatch/score", admin},
		{"PATCH", "/v1/missions/" + id + "/status", admin},
		{"POST", "/v1/webhooks", admin},
		{"PATCH", "/v1/webhooks/" + id, admin},
		{"POST", "/v1/devices/register", admin},
		{"POST", "/v1/devices/sync", admin},
		{"POST", "/v1/sync/batch", key},
		{"POST", "/v1/auth/login", nil},
		{"POST", "/v1/auth/forgot-password", nil},
		{"POST", "/v1/auth/reset-password", nil},
		{"POST", "/v1/auth/verify", nil},
		{"POST", "/v1/auth/change-password", admin},
		{"POST", "/v1/auth/logout", admin},
		{"POST", "/v1/auth/session", admin},
		{"POST", "/v1/auth/refresh", nil},
	} {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			n := n.on(t)
			for _, body := range []string{"null", " null\n"} {
				n.do(rt.method, rt.path, body, rt.creds...).wantErr(http.StatusBadRequest, "invalid_json")
			}
		})
	}

	// Nothing changed: no key was created or rotated, the settings are as they were.
	after := keys()
	if len(after) != len(before) {
		t.Fatalf("%d keys, want %d", len(after), len(before))
	}
	for _, k := range after {
		if k["expires_at"] != nil {
			t.Fatalf("a key was rotated: %v", k)
		}
	}
	if got := n.do("GET", "/v1/tenant/me", nil, admin...).want(http.StatusOK).body; fmt.Sprint(withoutID(got)) != fmt.Sprint(withoutID(tenant)) {
		t.Fatalf("tenant %v, was %v", got, tenant)
	}
	if got := n.do("GET", "/v1/tenant/retention", nil, admin...).want(http.StatusOK).body; fmt.Sprint(withoutID(got)) != fmt.Sprint(withoutID(retention)) {
		t.Fatalf("retention %v, was %v", got, retention)
	}
	// A rotation without a body (its fields are optional) still rotates.
	res := n.do("POST", "/v1/tenant/api-keys/rotate", nil, admin...).want(http.StatusOK)
	if res.str("api_key") == "" || res.str("previous_key_expires_at") == "" {
		t.Fatalf("rotation: %s", res.raw)
	}
}

// withoutID is an answer's body without its request_id, to compare two reads of a record.
func withoutID(body map[string]any) map[string]any {
	out := maps.Clone(body)
	delete(out, "request_id")
	return out
}
