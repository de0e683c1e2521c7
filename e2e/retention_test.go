package e2e

import (
	"testing"
)

// TestRetentionSettings: the node's defaults come from serve's flags, a company admin sets
// the tenant's own through PATCH /v1/tenant/retention (0: back to the default), GET and
// GET /v1/tenant/me show them, out-of-range days are a validation_error on the field, and
// other roles are refused.
func TestRetentionSettings(t *testing.T) {
	bin := binary(t)
	n := serveDemo(t, bin, t.TempDir(), "--retention-delivery-log-days", "45")
	admin := n.login(t, "company_admin")
	days := func(body map[string]any, which, field string) float64 {
		t.Helper()
		m, _ := body[which].(map[string]any)
		v, ok := m[field].(float64)
		if !ok {
			t.Fatalf("%s.%s missing: %v", which, field, body)
		}
		return v
	}
	status, _, body := n.call(t, "GET", "/v1/tenant/retention", nil, admin...)
	expect(t, "GET /v1/tenant/retention", status, 200, body)
	if days(body, "effective", "sync_batches_days") != 30 || days(body, "effective", "delivery_log_days") != 45 ||
		days(body, "effective", "events_days") != 400 || days(body, "effective", "missions_days") != 0 ||
		days(body, "tenant", "sync_batches_days") != 0 {
		t.Fatalf("defaults: %v", body)
	}
	status, _, body = n.call(t, "PATCH", "/v1/tenant/retention", map[string]any{"sync_batches_days": 7}, admin...)
	expect(t, "PATCH /v1/tenant/retention", status, 200, body)
	if days(body, "tenant", "sync_batches_days") != 7 || days(body, "effective", "sync_batches_days") != 7 ||
		days(body, "effective", "delivery_log_days") != 45 {
		t.Fatalf("after PATCH: %v", body)
	}
	status, _, body = n.call(t, "GET", "/v1/tenant/me", nil, admin...)
	expect(t, "GET /v1/tenant/me", status, 200, body)
	if days(body, "retention", "sync_batches_days") != 7 {
		t.Fatalf("tenant/me: %v", body)
	}
	status, _, body = n.call(t, "PATCH", "/v1/tenant/retention", map[string]any{"delivery_log_days": 4000}, admin...)
	expect(t, "PATCH with 4000 days", status, 400, body)
	if body["error"] != "validation_error" || body["field"] != "delivery_log_days" {
		t.Fatalf("4000 days: %v", body)
	}
	status, _, body = n.call(t, "PATCH", "/v1/tenant/retention", map[string]any{"sync_batches_days": 0}, admin...)
	expect(t, "PATCH back to the default", status, 200, body)
	if days(body, "effective", "sync_batches_days") != 30 {
		t.Fatalf("back to the default: %v", body)
	}
	status, _, body = n.call(t, "GET", "/v1/tenant/retention", nil, n.login(t, "field_operator")...)
	expect(t, "GET /v1/tenant/retention as a field operator", status, 403, body)
}
