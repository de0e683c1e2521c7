package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestErrorsQuoteAtMostMaxQuoted sends huge values in bodies, query parameters and paths:
// every error quotes at most engine.MaxQuoted characters of a value, followed by "…"
// (docs/decisions/0075-error-quotes-64-chars.md).
func TestErrorsQuoteAtMostMaxQuoted(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "mission-critical")
	key := []string{"x-svc-api-key", f.key}
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	huge := strings.Repeat("a", 500<<10)
	quoted := `"` + huge[:model.MaxQuoted] + `"…`
	// maxMessage bounds a message: its own words and one quoted value.
	const maxMessage = 400

	event := func(field string) map[string]any {
		b := eventBody("echo-" + field)
		b[field] = huge
		return b
	}
	for _, c := range []struct {
		name, method, path string
		body               any
		auth               []string
		status             int
		code               string
		// echoes is true when the message quotes the value (cut); false when it names
		// the problem without it.
		echoes bool
	}{
		{"EventVertical", "POST", "/v1/events", event("vertical"), key, 400, "validation_error", true},
		{"EventZoneCode", "POST", "/v1/events", event("zone_code"), key, 400, "validation_error", true},
		{"ScoreVertical", "POST", "/v1/teams/dispatch/score", map[string]any{"vertical": huge}, admin, 400, "validation_error", true},
		{"TeamVertical", "POST", "/v1/teams", map[string]any{"name": "Alpha", "verticals": []string{huge}}, admin, 400, "validation_error", true},
		{"KeyScope", "POST", "/v1/tenant/api-keys", map[string]any{"name": "k", "scopes": []string{huge}}, admin, 400, "validation_error", true},
		{"WebhookScheme", "POST", "/v1/webhooks", map[string]any{"url": huge[:2000] + "://hooks.example/"}, admin, 400, "validation_error", true},
		{"QueryStatus", "GET", "/v1/events?status=" + huge, nil, key, 400, "validation_error", false},
		{"QueryZone", "GET", "/v1/connectivity/status?zone_code=" + huge, nil, key, 404, "not_found", false},
		{"QueryCursor", "GET", "/v1/missions?cursor=" + huge, nil, key, 400, "validation_error", false},
		{"PathID", "GET", "/v1/events/" + huge, nil, key, 404, "not_found", false},
		{"PathIDWrongMethod", "PUT", "/v1/events/" + huge, nil, key, 405, "method_not_allowed", true},
		{"UnroutedPath", "GET", "/v1/" + huge, nil, key, 404, "not_found", true},
		{"ConsoleFile", "GET", "/console/" + huge, nil, nil, 404, "not_found", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := n.on(t)
			res := n.do(c.method, c.path, c.body, c.auth...).wantErr(c.status, c.code)
			msg := res.str("message")
			if len(msg) > maxMessage || len(res.raw) > 1000 {
				t.Fatalf("a %d-byte answer, message of %d bytes: %.300s…", len(res.raw), len(msg), res.raw)
			}
			if c.echoes && (!strings.Contains(msg, huge[:10]) || !strings.Contains(msg, `"…`)) {
				t.Fatalf("message %q does not quote the value cut with …", msg)
			}
			if strings.Contains(msg, huge[:model.MaxQuoted+1]) {
				t.Fatalf("message %q quotes more than %d characters", msg, model.MaxQuoted)
			}
		})
	}

	t.Run("SyncBatchItem", func(t *testing.T) {
		n := n.on(t)
		item := map[string]any{"type": "X", "vertical": huge, "idempotency_key": "echo-sync", "payload": map[string]any{}}
		res := n.do("POST", "/v1/sync/batch", map[string]any{"events": []any{item},
			"captured_at": "2026-06-09T10:00:00Z"}, key...).want(http.StatusOK)
		items, _ := res.body["items"].([]any)
		if len(items) != 1 || len(res.raw) > 2000 {
			t.Fatalf("answer of %d bytes: %.300s", len(res.raw), res.raw)
		}
		e, _ := items[0].(map[string]any)["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, quoted) {
			t.Fatalf("item error %v", e)
		}
	})

	t.Run("EscapedPath", func(t *testing.T) {
		n := n.on(t)
		// A value of characters Go quotes with escapes still yields a short message.
		res := n.do("GET", "/v1/"+url.PathEscape(strings.Repeat("\x00é", 100<<10)), nil, key...).wantErr(404, "not_found")
		if len(res.raw) > 1000 {
			t.Fatalf("a %d-byte answer", len(res.raw))
		}
	})
}
