package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
)

// usagePeriod returns one entry of a usage report's data by its period name.
func usagePeriod(t *testing.T, res *response, name string) map[string]any {
	t.Helper()
	for _, it := range res.items() {
		if it["period"] == name {
			return it
		}
	}
	t.Fatalf("no period %s in %s", name, res.raw)
	return nil
}

// num reads a number at a dotted path of a JSON object.
func numAt(m map[string]any, path string) float64 {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		obj, _ := v.(map[string]any)
		v = obj[k]
	}
	f, _ := v.(float64)
	return f
}

// finish moves a mission through the field path to its end state.
func (n *node) finish(missionID, end string, auth []string) {
	n.t.Helper()
	steps := []string{"ACK", "ON_ROUTE", "ON_SITE", end}
	if end == "FAILED" {
		steps = []string{"FAILED"}
	}
	for _, st := range steps {
		n.do("PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": st}, auth...).want(http.StatusOK)
	}
}

func TestUsage(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	key := []string{"x-svc-api-key", f.key}
	sup := key // the first key dispatches and moves missions; a token would expire as the clock moves
	team := n.dispatchTeam(f, "Alpha", 48.9, 2.3)
	post := func(k, priority string) string {
		body := eventBody(k)
		body["priority"] = priority
		return n.do("POST", "/v1/events", body, key...).want(http.StatusCreated).str("event_id")
	}
	dispatch := func(ev string) string {
		return n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team.ID}, sup...).
			want(http.StatusCreated).str("mission_id")
	}

	// 2026-06-09: two high events, one dispatched and completed.
	e1 := post("u-1", "high")
	post("u-2", "high")
	n.finish(dispatch(e1), "COMPLETED", sup)
	// 2026-06-10: a critical event, dispatched, failed.
	n.clock.Set(time.Date(2026, 6, 10, 8, 0, 0, 0, time.UTC))
	n.finish(dispatch(post("u-3", "critical")), "FAILED", sup)
	// 2026-07-01 and 2027-01-02: one low event each.
	n.clock.Set(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	post("u-4", "low")
	n.clock.Set(time.Date(2027, 1, 2, 23, 59, 59, 0, time.UTC))
	post("u-5", "low")

	t.Run("Day", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/usage?period=day&from=2026-06-09&to=2026-06-10", nil, key...).want(http.StatusOK)
		if res.num("count") != 2 || res.str("from") != "2026-06-09" || res.str("to") != "2026-06-10" {
			t.Fatalf("report: %s", res.raw)
		}
		d1, d2 := usagePeriod(t, res, "2026-06-09"), usagePeriod(t, res, "2026-06-10")
		for path, want := range map[string]float64{"events.total": 2, "events.by_priority.high": 2,
			"events.by_channel.rest_full": 2, "dispatches": 1, "missions_completed": 1, "missions_failed": 0} {
			if got := numAt(d1, path); got != want {
				t.Errorf("2026-06-09 %s = %v, want %v", path, got, want)
			}
		}
		for path, want := range map[string]float64{"events.total": 1, "events.by_priority.critical": 1,
			"dispatches": 1, "missions_completed": 0, "missions_failed": 1, "sync_batches": 0} {
			if got := numAt(d2, path); got != want {
				t.Errorf("2026-06-10 %s = %v, want %v", path, got, want)
			}
		}
		if d1["start"] != "2026-06-09T00:00:00.000Z" || d1["end"] != "2026-06-10T00:00:00.000Z" {
			t.Fatalf("bounds: %v", d1)
		}
	})
	t.Run("Month", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/usage?period=month&from=2026-06-15&to=2026-07-02", nil, key...).want(http.StatusOK)
		jun, jul := usagePeriod(t, res, "2026-06"), usagePeriod(t, res, "2026-07")
		if numAt(jun, "events.total") != 3 || numAt(jun, "dispatches") != 2 || numAt(jun, "missions_completed") != 1 ||
			numAt(jun, "missions_failed") != 1 || numAt(jul, "events.total") != 1 || numAt(jul, "events.by_priority.low") != 1 {
			t.Fatalf("months: %s", res.raw)
		}
		if res.str("from") != "2026-06-01" || res.str("to") != "2026-07-31" {
			t.Fatalf("range: %s", res.raw)
		}
	})
	t.Run("Year", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/usage?period=year&from=2026-03-01T10:00:00Z&to=2027-01-02", nil, key...).want(http.StatusOK)
		y26, y27 := usagePeriod(t, res, "2026"), usagePeriod(t, res, "2027")
		if numAt(y26, "events.total") != 4 || numAt(y26, "dispatches") != 2 || numAt(y27, "events.total") != 1 {
			t.Fatalf("years: %s", res.raw)
		}
		if numAt(res.body, "totals.events.total") != 5 || numAt(res.body, "totals.missions_completed") != 1 {
			t.Fatalf("totals: %s", res.raw)
		}
	})
	t.Run("DefaultRange", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/usage", nil, key...).want(http.StatusOK)
		if res.str("period") != "day" || res.num("count") != 30 || res.str("to") != "2027-01-02" {
			t.Fatalf("default: %s", res.raw)
		}
	})
	t.Run("OtherTenantSeesNothing", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/usage?period=year&from=2026-01-01&to=2027-12-31", nil, "x-svc-api-key", other.key).want(http.StatusOK)
		if numAt(res.body, "totals.events.total") != 0 || numAt(res.body, "totals.dispatches") != 0 {
			t.Fatalf("other tenant: %s", res.raw)
		}
	})
	t.Run("APIRequests", func(t *testing.T) {
		n := n.on(t)
		fresh := n.addTenant("fresh", "mission-critical")
		fk := []string{"x-svc-api-key", fresh.key}
		for range 3 {
			n.do("GET", "/v1/tenant/me", nil, fk...).want(http.StatusOK)
		}
		n.do("GET", "/v1/nope", nil, fk...).wantErr(http.StatusNotFound, "not_found") // no route: not counted
		q := "/v1/tenant/usage?period=day&from=2027-01-02&to=2027-01-02"
		// Counted in memory so far; the report includes them (this request too).
		if got := n.do("GET", q, nil, fk...).want(http.StatusOK).body; numAt(got, "totals.api_requests") != 4 {
			t.Fatalf("before the flush: %v", got)
		}
		if err := n.eng.FlushUsage(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := n.do("GET", q, nil, fk...).want(http.StatusOK).body; numAt(got, "totals.api_requests") != 5 {
			t.Fatalf("after the flush: %v", got)
		}
	})
	t.Run("Permissions", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/usage", nil, "Authorization", n.login(f.emails["corporate_client"])).want(http.StatusOK)
		n.do("GET", "/v1/tenant/usage", nil, "Authorization", n.login(f.emails["field_operator"])).wantErr(http.StatusForbidden, "forbidden")
	})
	t.Run("ErrValidation", func(t *testing.T) {
		n := n.on(t)
		for q, field := range map[string]string{
			"period=week":                   "period",
			"period=DAY":                    "period",
			"from=yesterday":                "from",
			"to=2026-13-01":                 "to",
			"from=2026-06-10&to=2026-06-09": "to",
			"period=day&from=2025-01-01&to=2026-06-09": "from",
		} {
			n.do("GET", "/v1/tenant/usage?"+q, nil, key...).wantErr(http.StatusBadRequest, "validation_error", field)
		}
	})
}

func TestBilling(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	team := n.dispatchTeam(f, "Alpha", 48.9, 2.3)
	ev := n.do("POST", "/v1/events", eventBody("b-1"), "x-svc-api-key", f.key).want(http.StatusCreated).str("event_id")
	n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": team.ID}, sup...).want(http.StatusCreated)

	res := n.do("GET", "/v1/tenant/billing", nil, admin...).want(http.StatusOK)
	if res.str("plan") != "core" || res.num("rate_limit_per_min") != 1000 || res.str("currency") != "EUR" {
		t.Fatalf("billing: %s", res.raw)
	}
	if numAt(res.body, "annual_usage.billable_dispatches") != 1 || numAt(res.body, "annual_usage.events") != 1 ||
		numAt(res.body, "annual_usage.sms") != 0 || numAt(res.body, "annual_usage.year") != 2026 {
		t.Fatalf("annual usage: %s", res.raw)
	}
	if numAt(res.body, "channel_costs.sms") != 0.07 || numAt(res.body, "plans_by_country.default.plans.starter.monthly_fee") == 0 {
		t.Fatalf("prices: %s", res.raw)
	}
	// Next year, this year's dispatches no longer count.
	n.clock.Set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	admin = []string{"Authorization", n.login(f.emails["company_admin"])}
	if res := n.do("GET", "/v1/tenant/billing", nil, admin...).want(http.StatusOK); numAt(res.body, "annual_usage.billable_dispatches") != 0 {
		t.Fatalf("next year: %s", res.raw)
	}
	t.Run("Unlimited", func(t *testing.T) {
		n := n.on(t)
		mc := n.addTenant("big", "mission-critical")
		res := n.do("GET", "/v1/tenant/billing", nil, "Authorization", n.login(mc.emails["company_admin"])).want(http.StatusOK)
		if v, ok := res.body["rate_limit_per_min"]; !ok || v != nil {
			t.Fatalf("rate_limit_per_min of an unlimited plan: %s", res.raw)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/tenant/billing", nil, "Authorization", n.login(f.emails["company_tech"])).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/tenant/billing", nil, "x-svc-api-key", f.key).wantErr(http.StatusForbidden, "forbidden")
	})
}

func TestAPIKeys(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}

	t.Run("ListShowsPrefixesOnly", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", "/v1/tenant/api-keys", nil, admin...).want(http.StatusOK)
		if res.num("count") != 1 || bytes.Contains(res.raw, []byte(f.key)) || bytes.Contains(res.raw, []byte(model.HashToken(f.key))) {
			t.Fatalf("list: %s", res.raw)
		}
		k := res.items()[0]
		for _, field := range []string{"id", "name", "prefix", "scopes", "created_at", "last_used_at", "expires_at"} {
			if _, ok := k[field]; !ok {
				t.Fatalf("%s missing: %v", field, k)
			}
		}
		if k["prefix"] != f.key[:12] {
			t.Fatalf("prefix %v", k["prefix"])
		}
	})
	t.Run("Create", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": "reader", "scopes": []string{"events:read"}},
			append(admin, "Idempotency-Key", "ck-1")...).want(http.StatusCreated)
		key := res.str("api_key")
		if scopes, _ := res.obj("key")["scopes"].([]any); !engine.LooksLikeAPIKey(key) || len(scopes) != 1 || scopes[0] != "events:read" {
			t.Fatalf("create: %s", res.raw)
		}
		n.do("GET", "/v1/events", nil, "x-svc-api-key", key).want(http.StatusOK)
		n.do("POST", "/v1/events", eventBody("x"), "x-svc-api-key", key).wantErr(http.StatusForbidden, "forbidden")
		// A replay names the same key, without showing it again.
		rep := n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": "reader", "scopes": []string{"events:read"}},
			append(admin, "Idempotency-Key", "ck-1")...).want(http.StatusCreated)
		if v, ok := rep.body["api_key"]; !ok || v != nil || rep.header.Get("Idempotent-Replayed") != "true" ||
			rep.obj("key")["id"] != res.obj("key")["id"] {
			t.Fatalf("replay: %s", rep.raw)
		}
	})
	t.Run("ErrScopeNotHeld", func(t *testing.T) {
		n := n.on(t)
		// company_tech manages keys but cannot dispatch: it cannot make a key that does.
		n.do("POST", "/v1/tenant/api-keys", map[string]any{"scopes": []string{"dispatch:assign"}}, tech...).wantErr(http.StatusForbidden, "forbidden")
		n.do("POST", "/v1/tenant/api-keys", map[string]any{"scopes": []string{"root"}}, admin...).wantErr(http.StatusBadRequest, "validation_error", "scopes")
		res := n.do("POST", "/v1/tenant/api-keys", map[string]any{}, tech...).want(http.StatusCreated)
		for _, s := range res.obj("key")["scopes"].([]any) {
			if !model.RoleHas(model.RoleCompanyTech, s.(string)) {
				t.Fatalf("default scopes of a tech's key hold %v", s)
			}
		}
		// Nor rotate the full first key into a new one.
		n.do("POST", "/v1/tenant/api-keys/rotate", map[string]any{}, tech...).wantErr(http.StatusForbidden, "forbidden")
		n.do("GET", "/v1/tenant/api-keys", nil, "Authorization", n.login(f.emails["field_operator"])).wantErr(http.StatusForbidden, "forbidden")
	})
	t.Run("RotateGraceToTheSecond", func(t *testing.T) {
		n := n.on(t)
		k := n.addTenant("rot", "core")
		// 6e1 is the integer 60 (JSON Schema's integers).
		res := n.do("POST", "/v1/tenant/api-keys/rotate", `{"grace_period_minutes": 6e1}`, "x-svc-api-key", k.key).want(http.StatusOK)
		newKey := res.str("api_key")
		exp, err := model.ParseTime(res.str("previous_key_expires_at"))
		if err != nil || !engine.LooksLikeAPIKey(newKey) || !exp.Equal(model.At(n.clock.Now().Add(time.Hour)).Time) {
			t.Fatalf("rotate: %s", res.raw)
		}
		start := n.clock.Now()
		n.clock.Set(start.Add(time.Hour - time.Second))
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", k.key).want(http.StatusOK)
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", newKey).want(http.StatusOK)
		n.clock.Set(start.Add(time.Hour + time.Second))
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", k.key).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", newKey).want(http.StatusOK)
		// The expired key is no longer listed.
		if res := n.do("GET", "/v1/tenant/api-keys", nil, "x-svc-api-key", newKey).want(http.StatusOK); res.num("count") != 1 {
			t.Fatalf("after the grace: %s", res.raw)
		}
	})
	t.Run("RotateDefaultGrace", func(t *testing.T) {
		n := n.on(t)
		k := n.addTenant("rot2", "core")
		res := n.do("POST", "/v1/tenant/api-keys/rotate", nil, "Authorization", n.login(k.emails["company_admin"])).want(http.StatusOK)
		if exp, _ := model.ParseTime(res.str("previous_key_expires_at")); !exp.Equal(model.At(n.clock.Now().Add(24 * time.Hour)).Time) {
			t.Fatalf("default grace: %s", res.raw)
		}
	})
	t.Run("ErrRotateInput", func(t *testing.T) {
		n := n.on(t)
		for _, g := range []any{0, -1, 10081, "60", 59.5} {
			n.do("POST", "/v1/tenant/api-keys/rotate", map[string]any{"grace_period_minutes": g}, admin...).
				wantErr(http.StatusBadRequest, "validation_error", "grace_period_minutes")
		}
		n.do("POST", "/v1/tenant/api-keys/rotate", map[string]any{"key_id": model.NewID()}, admin...).wantErr(http.StatusNotFound, "not_found")
		otherKey := n.do("GET", "/v1/tenant/api-keys", nil, "x-svc-api-key", other.key).want(http.StatusOK).items()[0]["id"].(string)
		n.do("POST", "/v1/tenant/api-keys/rotate", map[string]any{"key_id": otherKey}, admin...).wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("Revoke", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": "temp", "scopes": []string{"events:read"}}, admin...).want(http.StatusCreated)
		key, id := res.str("api_key"), res.obj("key")["id"].(string)
		n.do("GET", "/v1/events", nil, "x-svc-api-key", key).want(http.StatusOK)
		del := n.do("DELETE", "/v1/tenant/api-keys/"+id, nil, admin...).want(http.StatusOK)
		if del.str("id") != id || del.body["deleted"] != true {
			t.Fatalf("delete: %s", del.raw)
		}
		n.do("GET", "/v1/events", nil, "x-svc-api-key", key).wantErr(http.StatusUnauthorized, "unauthorized")
		n.do("DELETE", "/v1/tenant/api-keys/"+id, nil, admin...).wantErr(http.StatusNotFound, "not_found")
		n.do("DELETE", "/v1/tenant/api-keys/nope", nil, admin...).wantErr(http.StatusNotFound, "not_found")
		otherKey := n.do("GET", "/v1/tenant/api-keys", nil, "x-svc-api-key", other.key).want(http.StatusOK).items()[0]["id"].(string)
		n.do("DELETE", "/v1/tenant/api-keys/"+otherKey, nil, admin...).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", other.key).want(http.StatusOK)
	})
}

// scrape reads /metrics with the given secret header value ("" for none).
func (n *node) scrape(secret string) (int, []byte) {
	n.t.Helper()
	req, _ := http.NewRequest("GET", n.url+"/metrics", nil)
	if secret != "" {
		req.Header.Set("x-svc-internal", secret)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

const testInternalSecret = "an internal secret of the tests"

func TestMetrics(t *testing.T) {
	n := newNodeWith(t, nodeOptions{internalSecret: testInternalSecret})
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	ev := n.do("POST", "/v1/events", eventBody("m-1"), key...).want(http.StatusCreated).str("event_id")
	n.do("GET", "/v1/events/"+ev, nil, key...).want(http.StatusOK)
	n.do("GET", "/v1/events/"+model.NewID(), nil, key...).wantErr(http.StatusNotFound, "not_found")

	t.Run("ErrNoSecret", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/metrics", nil).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/metrics", nil, "x-svc-internal", testInternalSecret+"x").wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/metrics", nil, "x-svc-internal", testInternalSecret[:10]).wantErr(http.StatusNotFound, "not_found")
		// Another route's 404 and this one read the same.
		a := n.do("GET", "/metrics", nil)
		b := n.do("GET", "/metricz", nil)
		if a.str("message") != strings.Replace(b.str("message"), "/metricz", "/metrics", 1) {
			t.Fatalf("the guarded 404 differs from an unknown route's: %q vs %q", a.str("message"), b.str("message"))
		}
	})
	t.Run("ErrNoSecretConfigured", func(t *testing.T) {
		bare := newNode(t)
		bare.do("GET", "/metrics", nil, "x-svc-internal", "").wantErr(http.StatusNotFound, "not_found")
	})
	t.Run("Families", func(t *testing.T) {
		n := n.on(t)
		status, body := n.scrape(testInternalSecret)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		parser := expfmt.NewTextParser(prommodel.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("not Prometheus text: %v", err)
		}
		for _, name := range []string{"fieldrelay_http_requests_total", "fieldrelay_http_request_duration_seconds",
			"fieldrelay_events_accepted_total", "fieldrelay_events_settled_total", "fieldrelay_delivery_attempts_total", "fieldrelay_webhook_failures_total",
			"fieldrelay_outbox_depth", "fieldrelay_outbox_oldest_due_seconds", "fieldrelay_mission_moves_total",
			"fieldrelay_scheduler_lag_seconds", "fieldrelay_scheduler_running", "fieldrelay_bbolt_size_bytes",
			"fieldrelay_bbolt_write_tx_total", "fieldrelay_bbolt_read_tx_total", "go_goroutines"} {
			if families[name] == nil {
				t.Errorf("family %s missing", name)
			}
		}
		// Requests are counted by route pattern and status.
		found := false
		for _, m := range families["fieldrelay_http_requests_total"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				if strings.Contains(l.GetValue(), ev) {
					t.Fatalf("a raw path in a label: %v", m)
				}
			}
			if labels["route"] == "/v1/events/:id" && labels["method"] == "GET" && labels["status"] == "404" && m.GetCounter().GetValue() == 1 {
				found = true
			}
		}
		if !found {
			t.Fatalf("no GET /v1/events/:id 404 counted:\n%s", body)
		}
		for _, m := range families["fieldrelay_events_accepted_total"].GetMetric() {
			if labelsOf(m.GetLabel()) == "rest_full" && m.GetCounter().GetValue() != 1 {
				t.Fatalf("events accepted on rest_full = %v", m.GetCounter().GetValue())
			}
		}
		for _, secret := range []string{f.key, f.tenant.ID, "acme.example", testInternalSecret} {
			if bytes.Contains(body, []byte(secret)) {
				t.Fatalf("the metrics hold %q", secret)
			}
		}
	})
}

// TestMetrics_SeriesAsTheyOccur: a scrape holds the HTTP series of the routes and
// statuses that were answered, none made in advance at zero, and counts each event once
// when accepted and once when settled, in two families.
func TestMetrics_SeriesAsTheyOccur(t *testing.T) {
	rcv := &hookReceiver{answer: func(m model.WebhookMessage) model.SendResult {
		if strings.HasSuffix(m.URL, "/gone") {
			return model.SendResult{StatusCode: http.StatusGone}
		}
		return model.SendResult{StatusCode: http.StatusOK}
	}}
	n := newNodeWith(t, nodeOptions{internalSecret: testInternalSecret, sender: rcv})
	a, b := n.addTenant("acme", "core"), n.addTenant("other", "core")
	keyA, keyB := []string{"x-svc-api-key", a.key}, []string{"x-svc-api-key", b.key}
	n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/ok", "events": []string{"event.created"}},
		keyA...).want(http.StatusCreated)
	n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/gone", "events": []string{"event.created"}},
		keyB...).want(http.StatusCreated)
	n.do("POST", "/v1/events", eventBody("s-1"), keyA...).want(http.StatusCreated)
	n.do("POST", "/v1/events", eventBody("s-2"), keyA...).want(http.StatusCreated)
	n.do("POST", "/v1/events", eventBody("s-3"), keyB...).want(http.StatusCreated)
	n.do("GET", "/v1/events/"+model.NewID(), nil, keyA...).wantErr(http.StatusNotFound, "not_found")
	n.eng.RunDue(context.Background()) // A's two events are delivered, B's fails on the 410

	status, body := n.scrape(testInternalSecret)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not Prometheus text: %v", err)
	}

	t.Run("HTTPSeriesOnlyForWhatWasAnswered", func(t *testing.T) {
		want := map[string]float64{
			"POST,/v1/webhooks,201":       2,
			"POST,/v1/events,201":         3,
			"GET,/v1/events/:id,404":      1,
			"POST,/v1/auth/login,200":     0, // never called: must be absent, not zero
			"GET,/v1/zones/:code,200":     0,
			"-,unmatched,404":             0,
			"DELETE,/v1/webhooks/:id,200": 0,
		}
		got := map[string]float64{}
		var zero []string
		for _, m := range families["fieldrelay_http_requests_total"].GetMetric() {
			v := m.GetCounter().GetValue()
			if v == 0 {
				zero = append(zero, labelsOf(m.GetLabel()))
			}
			got[labelsOf(m.GetLabel())] = v
		}
		if len(got) != 3 || len(zero) > 0 {
			t.Errorf("%d request series (%d of them zero, e.g. %.3q), want only the 3 answered", len(got), len(zero), zero)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("requests %s = %v, want %v", k, got[k], v)
			}
		}
		routes := map[string]bool{}
		for _, m := range families["fieldrelay_http_request_duration_seconds"].GetMetric() {
			routes[labelsOf(m.GetLabel())] = m.GetHistogram().GetSampleCount() > 0
		}
		if len(routes) != 3 || !routes["POST,/v1/events"] || !routes["GET,/v1/events/:id"] || !routes["POST,/v1/webhooks"] {
			t.Errorf("%d latency series, want only the 3 routes answered, each observed: %v", len(routes), routes)
		}
	})

	t.Run("EventsAcceptedAndSettledApart", func(t *testing.T) {
		if families["fieldrelay_events_total"] != nil {
			t.Error("fieldrelay_events_total, which counted accepted and settled events together, is still served")
		}
		sum := func(name string) (float64, map[string]float64) {
			t.Helper()
			f := families[name]
			if f == nil {
				t.Fatalf("family %s missing", name)
			}
			by := map[string]float64{}
			total := 0.0
			for _, m := range f.GetMetric() {
				by[labelsOf(m.GetLabel())] = m.GetCounter().GetValue()
				total += m.GetCounter().GetValue()
			}
			return total, by
		}
		accepted, byChannel := sum("fieldrelay_events_accepted_total")
		settled, byStatus := sum("fieldrelay_events_settled_total")
		// Three events: sum() of each family counts each event once, whatever it became.
		if accepted != 3 || byChannel["rest_full"] != 3 {
			t.Errorf("accepted = %v by channel %v, want 3 on rest_full", accepted, byChannel)
		}
		if settled != 3 || byStatus["delivered"] != 2 || byStatus["failed"] != 1 {
			t.Errorf("settled = %v by status %v, want 2 delivered and 1 failed", settled, byStatus)
		}
		for _, k := range []string{"rest_full", "sms", "queued_offline"} {
			if _, ok := byChannel[k]; !ok {
				t.Errorf("no accepted series for channel %s", k)
			}
		}
	})
}

func labelsOf[L interface{ GetValue() string }](ls []L) string {
	var vs []string
	for _, l := range ls {
		vs = append(vs, l.GetValue())
	}
	return strings.Join(vs, ",")
}

func TestReadyz(t *testing.T) {
	n := newNode(t)
	n.do("GET", "/readyz", nil).wantErr(http.StatusServiceUnavailable, "unavailable")
	if err := n.eng.StartScheduler(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.do("GET", "/readyz", nil).want(http.StatusOK)
	n.do("GET", "/healthz", nil).want(http.StatusOK)
	n.eng.StopScheduler()
	n.do("GET", "/readyz", nil).wantErr(http.StatusServiceUnavailable, "unavailable")
	n.do("GET", "/healthz", nil).want(http.StatusOK)
}

// TestNoSecretsInLogsMetricsBackups drives keys, a rotation, a login, a password change
// and a reset, then scans the log, the metrics and a backup for any of their secrets.
func TestNoSecretsInLogsMetricsBackups(t *testing.T) {
	n := newNodeWith(t, nodeOptions{internalSecret: testInternalSecret})
	f := n.addTenant("acme", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	created := n.do("POST", "/v1/tenant/api-keys", map[string]any{"name": "extra"}, append(admin, "Idempotency-Key", "s-1")...).want(http.StatusCreated).str("api_key")
	rotated := n.do("POST", "/v1/tenant/api-keys/rotate", map[string]any{"grace_period_minutes": 5}, append(admin, "Idempotency-Key", "s-2")...).want(http.StatusOK).str("api_key")
	n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", rotated).want(http.StatusOK)
	const changed, reset = "a changed password 1", "a reset password 22"
	email := f.emails["operational_supervisor"]
	n.do("POST", "/v1/auth/change-password", map[string]any{"current_password": testPassword, "new_password": changed},
		"Authorization", n.login(email), "Idempotency-Key", "s-3").want(http.StatusOK)
	n.do("POST", "/v1/auth/forgot-password", map[string]any{"email": email}).want(http.StatusAccepted)
	n.eng.RunDue(context.Background()) // the mail goes through the outbox
	token := n.mailer.last(t, "reset")
	n.do("POST", "/v1/auth/reset-password", map[string]any{"token": token, "new_password": reset}).want(http.StatusOK)
	jwt := strings.TrimPrefix(n.login(f.emails["company_tech"]), "Bearer ")
	n.do("GET", "/v1/tenant/me", nil, "Authorization", "Bearer "+jwt).want(http.StatusOK)

	_, metrics := n.scrape(testInternalSecret)
	var backup bytes.Buffer
	if _, err := n.eng.Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"first key": f.key, "created key": created, "rotated key": rotated, "jwt": jwt,
		"reset token": token, "password": testPassword, "changed password": changed, "reset password": reset,
		"internal secret": testInternalSecret}
	for where, data := range map[string][]byte{"log": []byte(n.logs.String()), "metrics": metrics, "backup": backup.Bytes()} {
		for what, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("the %s holds the %s", where, what)
			}
		}
	}
	if bytes.Contains(metrics, []byte(email)) || bytes.Contains(metrics, []byte(f.tenant.ID)) {
		t.Error("the metrics name a user or a tenant")
	}
}
