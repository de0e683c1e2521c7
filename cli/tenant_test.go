package cli

import (
	"encoding/json"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestTenantCreate(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()

	t.Run("JSONShape", func(t *testing.T) {
		out := mustRun(t, a, "", "tenant", "create", "--data", data, "--name", "Acme Rescue", "--slug", "acme",
			"--email", "Ops@Acme.example", "--country", "fr", "--plan", "core", "--verticals", "emergency,healthcare", "--json")
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw) != 2 || raw["tenant"] == nil || raw["api_key"] == nil {
			t.Fatalf("want exactly {tenant, api_key}, got %s", out)
		}
		var res model.CreatedTenant
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		tn := res.Tenant
		if tn.Slug != "acme" || tn.Email != "ops@acme.example" || tn.Country != "FR" || tn.LicenseType != "core" ||
			tn.Status != engine.TenantActive || strings.Join(tn.Verticals, ",") != "emergency,healthcare" {
			t.Fatalf("tenant: %+v", tn)
		}
		if !engine.LooksLikeAPIKey(res.APIKey) {
			t.Fatalf("api_key %q", res.APIKey)
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		tn := createTenant(t, a, data, "beta").Tenant
		if tn.LicenseType != engine.PlanStarter || len(tn.Verticals) != 7 || tn.DispatchThreshold != 0.2 ||
			tn.SLATargetUptimePct != 99.9 || tn.FeatureFlags.DispatchMode {
			t.Fatalf("defaults: %+v", tn)
		}
	})
	t.Run("Text", func(t *testing.T) {
		out := mustRun(t, a, "", "tenant", "create", "--data", data, "--name", "Gamma", "--slug", "gamma",
			"--email", "ops@gamma.example", "--country", "DE")
		if !strings.Contains(out, `Created tenant "Gamma"`) || !strings.Contains(out, engine.APIKeyPrefix) {
			t.Fatalf("text output: %s", out)
		}
	})
	t.Run("ErrSlugTaken", func(t *testing.T) {
		e := runJSONError(t, a, "", "tenant", "create", "--data", data, "--name", "Again", "--slug", "acme",
			"--email", "x@acme.example", "--country", "FR")
		if e.Error != string(model.KindConflict) {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrNameRequired", func(t *testing.T) {
		e := runJSONError(t, a, "", "tenant", "create", "--data", data, "--slug", "delta",
			"--email", "x@delta.example", "--country", "FR")
		if e.Error != string(model.KindValidation) || e.Field != "name" {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrUnknownFlagAsJSON", func(t *testing.T) {
		// cobra stops at --bogus before it parses --json: the answer is JSON all the same.
		e := runJSONError(t, a, "", "tenant", "create", "--data", data, "--bogus")
		if e.Error != string(model.KindValidation) || !strings.Contains(e.Message, "--bogus") {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrTextOnStderr", func(t *testing.T) {
		r := run(t, a, "", "tenant", "create", "--data", data, "--name", "X", "--slug", "acme",
			"--email", "x@acme.example", "--country", "FR")
		if r.code != 1 || r.stdout != "" || r.stderr != "error: slug \"acme\" is taken\n" {
			t.Fatalf("got %d %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

func TestTenantListShowSuspendActivate(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	createTenant(t, a, data, "beta")

	// Newest first, like the API's lists.
	list := runJSON[admin.TenantListResult](t, a, "", "tenant", "list", "--data", data)
	if list.Count != 2 || len(list.Data) != 2 || list.Data[0].Slug != "beta" || list.Data[1].Slug != "acme" {
		t.Fatalf("list: %+v", list)
	}
	if out := mustRun(t, a, "", "tenant", "list", "--data", data); !strings.Contains(out, "SLUG") || !strings.Contains(out, "beta") {
		t.Fatalf("text list: %s", out)
	}

	show := runJSON[admin.TenantResult](t, a, "", "tenant", "show", "beta", "--data", data)
	if show.Tenant == nil || show.Tenant.Slug != "beta" {
		t.Fatalf("show: %+v", show)
	}
	if out := mustRun(t, a, "", "tenant", "show", "beta", "--data", data); !strings.Contains(out, "slug:") {
		t.Fatalf("text show: %s", out)
	}

	sus := runJSON[admin.TenantResult](t, a, "", "tenant", "suspend", "beta", "--data", data)
	if sus.Tenant.Status != engine.TenantSuspended {
		t.Fatalf("suspend: %+v", sus.Tenant)
	}
	if show = runJSON[admin.TenantResult](t, a, "", "tenant", "show", "beta", "--data", data); show.Tenant.Status != engine.TenantSuspended {
		t.Fatalf("after suspend: %+v", show.Tenant)
	}
	act := runJSON[admin.TenantResult](t, a, "", "tenant", "activate", "beta", "--data", data)
	if act.Tenant.Status != engine.TenantActive {
		t.Fatalf("activate: %+v", act.Tenant)
	}

	t.Run("ErrNotFound", func(t *testing.T) {
		if e := runJSONError(t, a, "", "tenant", "show", "nope", "--data", data); e.Error != string(model.KindNotFound) {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrArgs", func(t *testing.T) {
		e := runJSONError(t, a, "", "tenant", "show", "--data", data)
		if e.Error != string(model.KindValidation) || !strings.Contains(e.Message, "SLUG") {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrNoData", func(t *testing.T) {
		e := runJSONError(t, a, "", "tenant", "list", "--data", t.TempDir()+"/missing")
		if e.Error != string(model.KindNotFound) || !strings.Contains(e.Message, "holds no fieldrelay data") {
			t.Fatalf("error: %+v", e)
		}
	})
}
