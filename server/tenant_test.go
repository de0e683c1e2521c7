package server_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

var timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestTenantMe(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	for name, auth := range map[string][]string{
		"APIKey": {"x-svc-api-key", f.key},
		"JWT":    {"Authorization", n.login(f.emails["corporate_client"])},
	} {
		t.Run(name, func(t *testing.T) {
			n := n.on(t)
			res := n.do("GET", "/v1/tenant/me", nil, auth...).want(http.StatusOK)
			for _, k := range []string{"id", "name", "slug", "email", "license_type", "status", "country",
				"verticals", "dispatch_threshold", "reinforcement_timeout_min", "feature_flags",
				"sla_target_uptime_pct", "created_at", "updated_at"} {
				if _, ok := res.body[k]; !ok {
					t.Errorf("tenant field %s missing", k)
				}
			}
			if res.str("id") != f.tenant.ID || res.str("license_type") != "core" || res.str("status") != "active" {
				t.Fatalf("tenant: %s", res.raw)
			}
			if _, ok := res.body["feature_flags"].(map[string]any)["dispatch_mode"].(bool); !ok {
				t.Fatalf("feature_flags.dispatch_mode is not a boolean: %s", res.raw)
			}
			if !timeRE.MatchString(res.str("created_at")) {
				t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds", res.str("created_at"))
			}
			if res.header.Get("x-ratelimit-limit") != "1000" {
				t.Fatalf("x-ratelimit-limit %q", res.header.Get("x-ratelimit-limit"))
			}
		})
	}
}

func TestDispatchSettings(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	tech := []string{"Authorization", n.login(f.emails["company_tech"])}
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	const path = "/v1/tenant/dispatch-settings"

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		res := n.do("PATCH", path, map[string]any{"dispatch_mode": true, "dispatch_threshold": 0.4,
			"reinforcement_timeout_min": 7}, tech...).want(200)
		if res.body["dispatch_mode"] != true || res.num("dispatch_threshold") != 0.4 || res.num("reinforcement_timeout_min") != 7 {
			t.Fatalf("answer: %s", res.raw)
		}
		me := n.do("GET", "/v1/tenant/me", nil, admin...)
		if me.num("dispatch_threshold") != 0.4 || me.num("reinforcement_timeout_min") != 7 ||
			me.body["feature_flags"].(map[string]any)["dispatch_mode"] != true {
			t.Fatalf("tenant after: %s", me.raw)
		}
	})
	t.Run("PartialLeavesTheRest", func(t *testing.T) {
		n := n.on(t)
		res := n.do("PATCH", path, map[string]any{"dispatch_threshold": 0.1}, admin...).want(200)
		if res.body["dispatch_mode"] != true || res.num("dispatch_threshold") != 0.1 || res.num("reinforcement_timeout_min") != 7 {
			t.Fatalf("answer: %s", res.raw)
		}
		n.do("PATCH", path, map[string]any{}, admin...).want(200)
		n.do("PATCH", path, nil, admin...).want(200)
	})
	t.Run("BoundsAccepted", func(t *testing.T) {
		n := n.on(t)
		n.do("PATCH", path, map[string]any{"dispatch_threshold": 0, "reinforcement_timeout_min": 0}, admin...).want(200)
		n.do("PATCH", path, map[string]any{"dispatch_threshold": 1, "reinforcement_timeout_min": 1440}, admin...).want(200)
	})
	// JSON Schema counts every number with an integral value as an integer: 10.0 and 1e1
	// are 10. 10.5 is refused (ErrBadInputStoresNothing).
	t.Run("IntegralNumbers", func(t *testing.T) {
		n := n.on(t)
		for body, want := range map[string]float64{`{"reinforcement_timeout_min": 10.0}`: 10, `{"reinforcement_timeout_min": 1e1}`: 10,
			`{"reinforcement_timeout_min": 1.2e3}`: 1200, `{"reinforcement_timeout_min": 1440.000}`: 1440, `{"reinforcement_timeout_min": 0.0}`: 0,
			`{"reinforcement_timeout_min": 700e-1}`: 70} {
			res := n.do("PATCH", path, body, admin...).want(200)
			if res.num("reinforcement_timeout_min") != want {
				t.Fatalf("%s: %s", body, res.raw)
			}
			if me := n.do("GET", "/v1/tenant/me", nil, admin...); me.num("reinforcement_timeout_min") != want {
				t.Fatalf("%s: tenant after: %s", body, me.raw)
			}
		}
		n.do("PATCH", path, `{"reinforcement_timeout_min": 7}`, admin...).want(200)
	})
	t.Run("ErrBadInputStoresNothing", func(t *testing.T) {
		n := n.on(t)
		before := n.do("GET", "/v1/tenant/me", nil, admin...)
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"dispatch_mode": "yes"}`, "dispatch_mode"},
			{`{"dispatch_mode": 1}`, "dispatch_mode"},
			{`{"dispatch_threshold": "0.3"}`, "dispatch_threshold"},
			{`{"dispatch_threshold": 1.01}`, "dispatch_threshold"},
			{`{"dispatch_threshold": -0.01}`, "dispatch_threshold"},
			{`{"dispatch_threshold": 1e400}`, "dispatch_threshold"},
			{`{"reinforcement_timeout_min": -1}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 2.5}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 10.5}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 1.05e1}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 1441.0}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 1e30}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": "5"}`, "reinforcement_timeout_min"},
			{`{"reinforcement_timeout_min": 1441}`, "reinforcement_timeout_min"},
			{`{"dispatch_mode": true, "dispatch_threshold": 2}`, "dispatch_threshold"},
		} {
			res := n.do("PATCH", path, c.body, admin...)
			if c.body == `{"dispatch_threshold": 1e400}` {
				res.want(400) // out of float64 range: the decoder refuses it
				continue
			}
			res.wantErr(400, "validation_error", c.field)
		}
		after := n.do("GET", "/v1/tenant/me", nil, admin...)
		if before.str("updated_at") != after.str("updated_at") || before.num("dispatch_threshold") != after.num("dispatch_threshold") ||
			before.body["feature_flags"].(map[string]any)["dispatch_mode"] != after.body["feature_flags"].(map[string]any)["dispatch_mode"] {
			t.Fatalf("a rejected request changed the tenant: %s → %s", before.raw, after.raw)
		}
	})
	t.Run("ErrForbiddenRoles", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"operational_supervisor", "field_operator", "corporate_client", "api_user"} {
			n.do("PATCH", path, map[string]any{"dispatch_mode": false}, "Authorization", n.login(f.emails[role])).wantErr(403, "forbidden")
		}
	})
}

func TestSuspendedTenant(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	token := n.login(f.emails["company_admin"])
	err := func() error {
		_, err := n.eng.AdminSetTenantStatus(context.Background(), "acme", engine.TenantSuspended)
		return err
	}()
	if err != nil {
		t.Fatal(err)
	}
	res := n.do("GET", "/v1/tenant/me", nil, "x-svc-api-key", f.key).want(200)
	if res.str("status") != "suspended" {
		t.Fatalf("status %q", res.str("status"))
	}
	n.do("GET", "/v1/tenant/me", nil, "Authorization", token).want(200)
	r := n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true}, "x-svc-api-key", f.key).wantErr(403, "tenant_suspended")
	if r.header.Get("x-ratelimit-limit") == "" {
		t.Fatal("no rate-limit headers on an error of a known tenant")
	}
	n.do("GET", "/v1/tenant/users", nil, "Authorization", token).wantErr(403, "tenant_suspended")
}
