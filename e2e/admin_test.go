package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestAdmin_EndToEnd drives tenant administration through the binary: usage after events
// (API requests flushed at shutdown and found after a restart), API-key rotation and
// revocation, /metrics behind its secret, and billing.
// It runs on both stores (eachStore).
func TestAdmin_EndToEnd(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { adminEndToEnd(t, bin, st) })
}

func adminEndToEnd(t *testing.T, bin string, store nodeStore) {
	var created struct {
		Tenant map[string]any `json:"tenant"`
		APIKey string         `json:"api_key"`
	}
	out := store.cli(t, bin, "", "tenant", "create", "--name", "Acme Rescue", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "FR", "--plan", "core", "--json")
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatalf("tenant create: %v %s", err, out)
	}
	const secret = "e2e internal secret 0123456789"
	s := store.serve(t, bin, false, "--internal-secret", secret)
	key := []string{"x-svc-api-key", created.APIKey}

	// Usage after events.
	for i, p := range []string{"critical", "high", "high"} {
		st, _, body := s.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": p, "vertical": "emergency",
			"idempotency_key": "adm-" + string(rune('a'+i))}, key...)
		expect(t, "event", st, 201, body)
	}
	st, _, body := s.call(t, "GET", "/v1/tenant/usage?period=month", nil, key...)
	expect(t, "usage", st, 200, body)
	totals := body["totals"].(map[string]any)
	events := totals["events"].(map[string]any)
	if events["total"] != 3.0 || events["by_priority"].(map[string]any)["high"] != 2.0 || totals["api_requests"] != 4.0 {
		t.Fatalf("usage: %v", body)
	}
	st, _, body = s.call(t, "GET", "/v1/tenant/usage?period=fortnight", nil, key...)
	expect(t, "usage with a bad period", st, 400, body)
	if body["field"] != "period" {
		t.Fatalf("bad period: %v", body)
	}

	// Rotation: both keys work during the grace; the revoked one stops at once.
	st, _, body = s.call(t, "POST", "/v1/tenant/api-keys/rotate", map[string]any{"grace_period_minutes": 30}, key...)
	expect(t, "rotate", st, 200, body)
	newKey, _ := body["api_key"].(string)
	if !strings.HasPrefix(newKey, "fr_live_") || body["previous_key_expires_at"] == nil {
		t.Fatalf("rotate: %v", body)
	}
	for _, k := range []string{created.APIKey, newKey} {
		st, _, body = s.call(t, "GET", "/v1/tenant/me", nil, "x-svc-api-key", k)
		expect(t, "a key during the grace", st, 200, body)
	}
	st, _, body = s.call(t, "GET", "/v1/tenant/api-keys", nil, "x-svc-api-key", newKey)
	expect(t, "list keys", st, 200, body)
	raw, _ := json.Marshal(body)
	if body["count"] != 2.0 || bytes.Contains(raw, []byte(newKey)) || bytes.Contains(raw, []byte(created.APIKey)) {
		t.Fatalf("list: %s", raw)
	}
	var oldID string
	for _, k := range body["data"].([]any) {
		if m := k.(map[string]any); m["expires_at"] != nil {
			oldID = m["id"].(string)
		}
	}
	st, _, body = s.call(t, "POST", "/v1/tenant/api-keys/rotate", map[string]any{"grace_period_minutes": 20000}, "x-svc-api-key", newKey)
	expect(t, "rotate with a bad grace", st, 400, body)
	st, _, body = s.call(t, "DELETE", "/v1/tenant/api-keys/"+oldID, nil, "x-svc-api-key", newKey)
	expect(t, "revoke", st, 200, body)
	st, _, body = s.call(t, "GET", "/v1/tenant/me", nil, key...)
	expect(t, "the revoked key", st, 401, body)
	key = []string{"x-svc-api-key", newKey}

	// /metrics: 404 without the secret or with a wrong one, Prometheus text with it.
	for _, h := range [][]string{nil, {"x-svc-internal", "wrong secret"}} {
		st, _, body = s.call(t, "GET", "/metrics", nil, h...)
		expect(t, "metrics without the secret", st, 404, body)
	}
	families, text := scrapeMetrics(t, s, secret)
	names := []string{"fieldrelay_http_requests_total", "fieldrelay_http_request_duration_seconds",
		"fieldrelay_events_accepted_total", "fieldrelay_events_settled_total", "fieldrelay_outbox_depth", "fieldrelay_scheduler_running"}
	if !store.postgres() {
		names = append(names, "fieldrelay_bbolt_size_bytes") // the file's: a PostgreSQL store has none
	}
	for _, name := range names {
		if families[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	if v := families["fieldrelay_scheduler_running"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Fatalf("scheduler_running %v", v)
	}
	for _, leak := range []string{created.APIKey, newKey, secret, "ops@acme.example", created.Tenant["id"].(string)} {
		if strings.Contains(text, leak) {
			t.Fatalf("the metrics hold %q", leak)
		}
	}

	// Billing for the admin.
	const pw = "admin password 123"
	store.cli(t, bin, pw+"\n", "user", "create", "--tenant", "acme", "--email", "admin@acme.example",
		"--name", "Admin", "--role", "company_admin", "--password-stdin")
	st, _, body = s.call(t, "POST", "/v1/auth/login", map[string]string{"email": "admin@acme.example", "password": pw})
	expect(t, "login", st, 200, body)
	st, _, body = s.call(t, "GET", "/v1/tenant/billing", nil, "Authorization", "Bearer "+body["token"].(string))
	expect(t, "billing", st, 200, body)
	if body["plan"] != "core" || body["rate_limit_per_min"] != 1000.0 || body["annual_usage"].(map[string]any)["events"] != 3.0 {
		t.Fatalf("billing: %v", body)
	}

	// The API requests counted in memory are flushed at shutdown and found after a restart.
	st, _, body = s.call(t, "GET", "/v1/tenant/usage?period=day&from=2000-01-01T00:00:00Z", nil, key...)
	expect(t, "usage out of range", st, 400, body)
	st, _, body = s.call(t, "GET", "/v1/tenant/usage?period=year", nil, key...)
	expect(t, "usage before the restart", st, 200, body)
	before := body["totals"].(map[string]any)["api_requests"].(float64)
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, s.logs)
	}
	s = store.serve(t, bin, false, "--internal-secret", secret)
	st, _, body = s.call(t, "GET", "/v1/tenant/usage?period=year", nil, key...)
	expect(t, "usage after the restart", st, 200, body)
	if after := body["totals"].(map[string]any)["api_requests"].(float64); after != before+1 {
		t.Fatalf("api_requests %v after the restart, want %v", after, before+1)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, s.logs)
	}
}

// scrapeMetrics reads a node's /metrics with the secret and parses it with Prometheus'
// own text parser; it returns the families by name and the text.
func scrapeMetrics(t *testing.T, s *served, secret string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.base+"/metrics", nil)
	req.Header.Set("x-svc-internal", secret)
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(res.Body)
	res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if res.StatusCode != 200 || err != nil {
		t.Fatalf("metrics: %d %v\n%s", res.StatusCode, err, text)
	}
	return families, string(text)
}
