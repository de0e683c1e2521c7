package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// upstreamKey is an API key of an upstream tenant.
const upstreamKey = "fr_live_CENTRALcentralCENTRALcentral0000"

// TestUpstreamAPI: PUT/GET /v1/tenant/upstream and GET /v1/tenant/upstream/status, for
// tenant:admin of the caller's tenant only; bad settings are 400 naming the field; no
// answer, log line or metric holds the key; /metrics counts the backlog.
func TestUpstreamAPI(t *testing.T) {
	n := newNodeWith(t, nodeOptions{internalSecret: testInternalSecret})
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	key := []string{"x-svc-api-key", f.key}
	good := map[string]any{"url": "https://central.example.org", "api_key": upstreamKey}

	t.Run("Unconfigured", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/upstream", nil, admin...).wantErr(http.StatusNotFound, "not_found")
		if st := n.do("GET", "/v1/tenant/upstream/status", nil, admin...).want(http.StatusOK); st.str("state") != "unconfigured" {
			t.Fatalf("status: %s", st.raw)
		}
	})
	t.Run("Forbidden", func(t *testing.T) {
		n := n.on(t)
		n.do("PUT", "/v1/tenant/upstream", good, tech...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/tenant/upstream", nil, tech...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/tenant/upstream/status", nil, tech...).wantErr(http.StatusForbidden, "forbidden")
		n.do("PUT", "/v1/tenant/upstream", good).wantErr(http.StatusUnauthorized, "unauthorized")
	})
	t.Run("BadInput", func(t *testing.T) {
		n := n.on(t)
		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{"api_key": upstreamKey}, "url"},
			{map[string]any{"url": "not a url", "api_key": upstreamKey}, "url"},
			{map[string]any{"url": "http://central.example.org", "api_key": upstreamKey}, "url"},
			{map[string]any{"url": "http://192.168.1.10:8080", "api_key": upstreamKey}, "url"},
			{map[string]any{"url": "https://central.example.org"}, "api_key"},
			{map[string]any{"url": "https://central.example.org", "api_key": "hunter2"}, "api_key"},
			{map[string]any{"url": "https://central.example.org", "api_key": upstreamKey, "ca_pem": "nope"}, "ca_pem"},
			{map[string]any{"url": "https://central.example.org", "api_key": upstreamKey, "paused": "yes"}, "paused"},
		} {
			n.do("PUT", "/v1/tenant/upstream", tc.body, admin...).wantErr(http.StatusBadRequest, "validation_error", tc.field)
		}
		n.do("PUT", "/v1/tenant/upstream", "{", admin...).wantErr(http.StatusBadRequest, "invalid_json")
	})
	t.Run("SetAndRead", func(t *testing.T) {
		n := n.on(t)
		// The events held when the upstream is set, and those that follow, reach the log
		// through the backfill's walk, which the pusher runs.
		n.do("POST", "/v1/events", eventBody("before-1"), key...).want(http.StatusCreated)
		res := n.do("PUT", "/v1/tenant/upstream", map[string]any{"url": "http://127.0.0.1:9/", "api_key": upstreamKey},
			append([]string{"Idempotency-Key", "set-upstream-1"}, admin...)...).want(http.StatusOK)
		if res.str("url") != "http://127.0.0.1:9" || res.str("api_key_prefix") != upstreamKey[:12]+"…" || res.str("node_id") == "" {
			t.Fatalf("PUT: %s", res.raw)
		}
		again := n.do("PUT", "/v1/tenant/upstream", map[string]any{"url": "http://127.0.0.1:9/", "api_key": upstreamKey},
			append([]string{"Idempotency-Key", "set-upstream-1"}, admin...)...).want(http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %v", again.header)
		}
		got := n.do("GET", "/v1/tenant/upstream", nil, admin...).want(http.StatusOK)
		if got.str("url") != "http://127.0.0.1:9" || got.body["paused"] != false || got.body["device_id"] != nil {
			t.Fatalf("GET: %s", got.raw)
		}
		for i := range 3 {
			n.do("POST", "/v1/events", eventBody("after-"+string(rune('a'+i))), key...).want(http.StatusCreated)
		}
		st := n.do("GET", "/v1/tenant/upstream/status", nil, admin...).want(http.StatusOK)
		bf, _ := st.body["backfill"].(map[string]any)
		if st.str("state") != "pushing" || st.num("backlog") != 0 || st.body["last_error"] != nil ||
			bf["state"] != "walking" || bf["kind"] != "upstream_event" || bf["queued"] != float64(0) {
			t.Fatalf("status: %s", st.raw)
		}
		// The other tenant has none.
		otherAdmin := []string{"Authorization", n.login(other.emails["company_admin"])}
		if st := n.do("GET", "/v1/tenant/upstream/status", nil, otherAdmin...).want(http.StatusOK); st.str("state") != "unconfigured" {
			t.Fatalf("other tenant: %s", st.raw)
		}
		// Paused by PUT with the same URL and no key: the key stays.
		p := n.do("PUT", "/v1/tenant/upstream", map[string]any{"url": "http://127.0.0.1:9", "paused": true}, admin...).want(http.StatusOK)
		if p.body["paused"] != true || p.str("api_key_prefix") != upstreamKey[:12]+"…" {
			t.Fatalf("pause: %s", p.raw)
		}
		// A paused link's history is walked all the same (nobody is called).
		n.eng.RunUpstream(context.Background())
		st = n.do("GET", "/v1/tenant/upstream/status", nil, admin...).want(http.StatusOK)
		bf, _ = st.body["backfill"].(map[string]any)
		if st.str("state") != "paused" || st.num("backlog") != 4 || st.str("backlog_oldest_at") == "" ||
			bf["state"] != "sending" || bf["kind"] != nil || bf["queued"] != float64(4) || bf["through"] != float64(4) ||
			bf["walked_at"] == nil {
			t.Fatalf("paused status: %s", st.raw)
		}

		status, body := n.scrape(testInternalSecret)
		if status != http.StatusOK {
			t.Fatalf("metrics: %d", status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fieldrelay_upstream_links", "fieldrelay_upstream_backlog_oldest_seconds",
			"fieldrelay_upstream_pushed_total", "fieldrelay_upstream_failures_total", "fieldrelay_upstream_rejected_total"} {
			if families[name] == nil {
				t.Errorf("family %s missing", name)
			}
		}
		if v := families["fieldrelay_upstream_backlog"].GetMetric()[0].GetGauge().GetValue(); v != 4 {
			t.Fatalf("backlog gauge %v", v)
		}
		for _, m := range families["fieldrelay_upstream_links"].GetMetric() {
			if labelsOf(m.GetLabel()) == "paused" && m.GetGauge().GetValue() != 1 {
				t.Fatalf("paused links %v", m.GetGauge().GetValue())
			}
		}
		secret := upstreamKey[12:]
		for what, b := range map[string][]byte{"the log": []byte(n.logs.String()), "the metrics": body,
			"the answers": append(append(res.raw, again.raw...), got.raw...)} {
			if strings.Contains(string(b), secret) {
				t.Fatalf("%s hold the upstream key", what)
			}
		}
	})
}
