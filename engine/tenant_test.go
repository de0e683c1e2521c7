package engine_test

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func validTenantInput() model.CreateTenantInput {
	return model.CreateTenantInput{Name: "Acme Field Ops", Slug: "acme", Email: "ops@acme.example", Country: "FR"}
}

func createTenant(e *engine.Engine, in model.CreateTenantInput) (*model.CreatedTenant, error) {
	var out *model.CreatedTenant
	err := func() (err error) {
		out, err = e.AdminCreateTenant(context.Background(), in)
		return err
	}()
	return out, err
}

func TestEngine_CreateTenant(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct, err := createTenant(e, validTenantInput())
		if err != nil {
			t.Fatal(err)
		}
		tn := ct.Tenant
		if !model.ValidID(tn.ID) || tn.Name != "Acme Field Ops" || tn.Slug != "acme" ||
			tn.Email != "ops@acme.example" || tn.Country != "FR" || tn.Status != engine.TenantActive {
			t.Fatalf("tenant = %+v", tn)
		}
		if !tn.CreatedAt.Equal(epoch) || !tn.UpdatedAt.Equal(epoch) {
			t.Fatalf("created_at %v, updated_at %v, want %v", tn.CreatedAt, tn.UpdatedAt, epoch)
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct, err := createTenant(e, validTenantInput())
		if err != nil {
			t.Fatal(err)
		}
		tn := ct.Tenant
		if tn.LicenseType != "starter" {
			t.Errorf("license_type = %q, want starter", tn.LicenseType)
		}
		want := []string{"healthcare", "banking", "logistics", "delivery", "telecom", "gov", "emergency"}
		if !slices.Equal(sorted(tn.Verticals), sorted(want)) {
			t.Errorf("verticals = %v, want the seven standard ones", tn.Verticals)
		}
		if tn.DispatchThreshold != 0.20 || tn.ReinforcementTimeoutMin != 0 || tn.SLATargetUptimePct != 99.9 ||
			tn.FeatureFlags.DispatchMode {
			t.Errorf("settings = threshold %v, timeout %v, sla %v, dispatch_mode %v",
				tn.DispatchThreshold, tn.ReinforcementTimeoutMin, tn.SLATargetUptimePct, tn.FeatureFlags.DispatchMode)
		}
		if !regexp.MustCompile(`^fr_live_[0-9A-Za-z]{32}$`).MatchString(ct.APIKey) {
			t.Errorf("api_key = %q, want fr_live_ and 32 base62 characters", ct.APIKey)
		}
		// The tenant is stored, and its stored form has the defaults too.
		got, err := e.AdminTenant(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		for _, frag := range []string{`"license_type":"starter"`, `"dispatch_threshold":0.2`,
			`"reinforcement_timeout_min":0`, `"feature_flags":{"dispatch_mode":false}`,
			`"sla_target_uptime_pct":99.9`, `"status":"active"`, `"created_at":"2026-06-09T10:11:12.345Z"`} {
			if !strings.Contains(string(b), frag) {
				t.Errorf("tenant JSON %s lacks %s", b, frag)
			}
		}
	})
	t.Run("FirstKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct, err := createTenant(e, validTenantInput())
		if err != nil {
			t.Fatal(err)
		}
		keys, err := e.APIKeysOf(context.Background(), ct.Tenant.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 {
			t.Fatalf("%d keys, want 1", len(keys))
		}
		k := keys[0]
		if k.Prefix != ct.APIKey[:12] || k.TenantID != ct.Tenant.ID || k.ExpiresAt != nil || k.LastUsedAt != nil {
			t.Fatalf("first key = %+v", k)
		}
		if !slices.Equal(sorted(k.Scopes), sorted(model.DefaultKeyScopes())) {
			t.Fatalf("first key scopes = %v, want every key scope but sms:inbound", k.Scopes)
		}
		if slices.Contains(k.Scopes, "sms:inbound") || slices.Contains(k.Scopes, "tenant:admin") {
			t.Fatalf("first key scopes = %v", k.Scopes)
		}
	})
	t.Run("Normalises", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		in := validTenantInput()
		in.Name, in.Email, in.Country = "  Acme  ", " OPS@Acme.Example ", " fr "
		in.Plan = "mission-critical"
		in.Verticals = []string{"mining", "healthcare", "mining"}
		ct, err := createTenant(e, in)
		if err != nil {
			t.Fatal(err)
		}
		tn := ct.Tenant
		if tn.Name != "Acme" || tn.Email != "ops@acme.example" || tn.Country != "FR" || tn.LicenseType != "mission-critical" {
			t.Fatalf("tenant = %+v", tn)
		}
		if !slices.Equal(tn.Verticals, []string{"mining", "healthcare"}) {
			t.Fatalf("verticals = %v, want [mining healthcare]", tn.Verticals)
		}
		if !tn.HasVertical("mining") || !tn.HasVertical("banking") || tn.HasVertical("farming") {
			t.Fatal("HasVertical disagrees with the standard and enabled verticals")
		}
	})
	t.Run("Plans", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		for i, plan := range []string{"starter", "core", "mission-critical"} {
			in := validTenantInput()
			in.Slug, in.Plan = "acme-"+string(rune('a'+i)), plan
			ct, err := createTenant(e, in)
			if err != nil {
				t.Fatalf("plan %s: %v", plan, err)
			}
			if ct.Tenant.LicenseType != plan {
				t.Fatalf("license_type = %s, want %s", ct.Tenant.LicenseType, plan)
			}
		}
	})
	for name, tc := range map[string]struct {
		field  string
		mutate func(*model.CreateTenantInput)
	}{
		"ErrNameRequired":      {"name", func(in *model.CreateTenantInput) { in.Name = "" }},
		"ErrNameBlank":         {"name", func(in *model.CreateTenantInput) { in.Name = " \t " }},
		"ErrNameTooLong":       {"name", func(in *model.CreateTenantInput) { in.Name = strings.Repeat("é", 201) }},
		"ErrSlugRequired":      {"slug", func(in *model.CreateTenantInput) { in.Slug = "" }},
		"ErrSlugUppercase":     {"slug", func(in *model.CreateTenantInput) { in.Slug = "Acme" }},
		"ErrSlugLeadingHyphen": {"slug", func(in *model.CreateTenantInput) { in.Slug = "-acme" }},
		"ErrSlugTrailingDash":  {"slug", func(in *model.CreateTenantInput) { in.Slug = "acme-" }},
		"ErrSlugUnderscore":    {"slug", func(in *model.CreateTenantInput) { in.Slug = "ac_me" }},
		"ErrSlugSpace":         {"slug", func(in *model.CreateTenantInput) { in.Slug = "ac me" }},
		"ErrSlugTooLong":       {"slug", func(in *model.CreateTenantInput) { in.Slug = strings.Repeat("a", 64) }},
		"ErrEmailRequired":     {"email", func(in *model.CreateTenantInput) { in.Email = "" }},
		"ErrEmailInvalid":      {"email", func(in *model.CreateTenantInput) { in.Email = "not-an-email" }},
		"ErrEmailNoDot":        {"email", func(in *model.CreateTenantInput) { in.Email = "ops@localhost" }},
		"ErrEmailDisplayName":  {"email", func(in *model.CreateTenantInput) { in.Email = "Ops <ops@acme.example>" }},
		"ErrEmailTooLong":      {"email", func(in *model.CreateTenantInput) { in.Email = strings.Repeat("a", 250) + "@acme.example" }},
		"ErrCountryRequired":   {"country", func(in *model.CreateTenantInput) { in.Country = "" }},
		"ErrCountryUnknown":    {"country", func(in *model.CreateTenantInput) { in.Country = "XX" }},
		"ErrCountryAlpha3":     {"country", func(in *model.CreateTenantInput) { in.Country = "FRA" }},
		"ErrPlanUnknown":       {"plan", func(in *model.CreateTenantInput) { in.Plan = "enterprise" }},
		"ErrPlanCase":          {"plan", func(in *model.CreateTenantInput) { in.Plan = "Core" }},
		"ErrVerticalUpper":     {"verticals", func(in *model.CreateTenantInput) { in.Verticals = []string{"Healthcare"} }},
		"ErrVerticalShort":     {"verticals", func(in *model.CreateTenantInput) { in.Verticals = []string{"x"} }},
		"ErrVerticalSpace":     {"verticals", func(in *model.CreateTenantInput) { in.Verticals = []string{"health care"} }},
		"ErrVerticalEmpty":     {"verticals", func(in *model.CreateTenantInput) { in.Verticals = []string{"gov", ""} }},
		"ErrVerticalTooLong":   {"verticals", func(in *model.CreateTenantInput) { in.Verticals = []string{"a" + strings.Repeat("b", 32)} }},
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := MustOpenEngine(t)
			in := validTenantInput()
			tc.mutate(&in)
			_, err := createTenant(e, in)
			AssertInvalid(t, err, tc.field)
			if ts, _ := e.AdminTenants(context.Background()); len(ts) != 0 {
				t.Fatalf("a refused tenant was stored: %+v", ts)
			}
		})
	}
	t.Run("ErrDuplicateSlug", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		first, err := createTenant(e, validTenantInput())
		if err != nil {
			t.Fatal(err)
		}
		in := validTenantInput()
		in.Name = "Another Acme"
		_, err = createTenant(e, in)
		AssertKind(t, err, model.KindConflict)
		ts, err := e.AdminTenants(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].ID != first.Tenant.ID {
			t.Fatalf("tenants = %+v, want only the first", ts)
		}
		// The refused tenant's key was rolled back with it.
		if keys, _ := e.APIKeysOf(context.Background(), first.Tenant.ID); len(keys) != 1 {
			t.Fatalf("%d keys, want 1", len(keys))
		}
	})
}

func TestEngine_Tenants(t *testing.T) {
	ctx := context.Background()
	e, _ := MustOpenEngine(t)
	a := MustCreateTenant(t, e, "alpha")
	b := MustCreateTenant(t, e, "bravo")
	ts, err := e.AdminTenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].ID != a.Tenant.ID || ts[1].ID != b.Tenant.ID {
		t.Fatalf("Tenants = %+v, want alpha then bravo (oldest first)", ts)
	}
	t.Run("BySlug", func(t *testing.T) {
		got, err := e.AdminTenant(ctx, "bravo")
		if err != nil || got.ID != b.Tenant.ID {
			t.Fatalf("TenantBySlug = %+v, %v", got, err)
		}
	})
	t.Run("ErrBySlugNotFound", func(t *testing.T) {
		_, err := e.AdminTenant(ctx, "charlie")
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("TenantOf", func(t *testing.T) {
		got, err := e.Tenant(ctx, model.Principal{TenantID: a.Tenant.ID, KeyID: model.NewID()})
		if err != nil || got.Slug != "alpha" {
			t.Fatalf("TenantOf = %+v, %v", got, err)
		}
	})
	t.Run("ErrTenantOfUnknown", func(t *testing.T) {
		_, err := e.Tenant(ctx, model.Principal{TenantID: model.NewID()})
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestEngine_SetTenantStatus(t *testing.T) {
	set := func(e *engine.Engine, slug, status string) (*model.Tenant, error) {
		var out *model.Tenant
		err := func() (err error) {
			out, err = e.AdminSetTenantStatus(context.Background(), slug, status)
			return err
		}()
		return out, err
	}
	t.Run("OK", func(t *testing.T) {
		e, clock := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		clock.Advance(time.Hour)
		for _, s := range []string{engine.TenantSuspended, engine.TenantInactive, engine.TenantActive} {
			tn, err := set(e, "acme", s)
			if err != nil {
				t.Fatal(err)
			}
			if tn.Status != s || !tn.UpdatedAt.Equal(clock.Now()) {
				t.Fatalf("tenant = %+v, want status %s", tn, s)
			}
			stored, _ := e.AdminTenant(context.Background(), "acme")
			if stored.Status != s {
				t.Fatalf("stored status = %s, want %s", stored.Status, s)
			}
		}
	})
	t.Run("ErrStatusInvalid", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		_, err := set(e, "acme", "deleted")
		AssertInvalid(t, err, "status")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := set(e, "ghost", engine.TenantSuspended)
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestPlanRateLimit(t *testing.T) {
	for plan, want := range map[string]int{"starter": 500, "core": 1000, "mission-critical": 0} {
		if got := engine.PlanRateLimit(plan); got != want {
			t.Errorf("PlanRateLimit(%s) = %d, want %d", plan, got, want)
		}
		if !engine.ValidPlan(plan) {
			t.Errorf("ValidPlan(%s) = false", plan)
		}
	}
	if engine.ValidPlan("") || engine.ValidPlan("gold") {
		t.Error("ValidPlan accepts an unknown plan")
	}
}

func TestEngine_UpdateDispatchSettings(t *testing.T) {
	update := func(e *engine.Engine, p model.Principal, in model.DispatchSettingsInput) (*model.DispatchSettings, error) {
		var out *model.DispatchSettings
		err := func() (err error) {
			out, err = e.UpdateDispatchSettings(context.Background(), p, in, nil)
			return err
		}()
		return out, err
	}
	setup := func(t *testing.T) (*engine.Engine, *model.FakeClock, model.Principal) {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		return e, clock, model.Principal{TenantID: ct.Tenant.ID, UserID: model.NewID(), Role: model.RoleCompanyTech}
	}
	t.Run("OK", func(t *testing.T) {
		e, clock, p := setup(t)
		clock.Advance(time.Minute)
		got, err := update(e, p, model.DispatchSettingsInput{DispatchMode: ptr(true),
			DispatchThreshold: ptr(0.4), ReinforcementTimeoutMin: ptr[model.Int](15)})
		if err != nil {
			t.Fatal(err)
		}
		if *got != (model.DispatchSettings{DispatchMode: true, DispatchThreshold: 0.4, ReinforcementTimeoutMin: 15, OnSiteTimeoutMin: model.DefaultOnSiteTimeoutMin}) {
			t.Fatalf("settings = %+v", got)
		}
		tn, _ := e.Tenant(context.Background(), p)
		if !tn.FeatureFlags.DispatchMode || tn.DispatchThreshold != 0.4 || tn.ReinforcementTimeoutMin != 15 ||
			!tn.UpdatedAt.Equal(clock.Now()) {
			t.Fatalf("stored tenant = %+v", tn)
		}
	})
	t.Run("NilFieldsUnchanged", func(t *testing.T) {
		e, _, p := setup(t)
		if _, err := update(e, p, model.DispatchSettingsInput{DispatchMode: ptr(true),
			DispatchThreshold: ptr(0.3), ReinforcementTimeoutMin: ptr[model.Int](20)}); err != nil {
			t.Fatal(err)
		}
		got, err := update(e, p, model.DispatchSettingsInput{DispatchThreshold: ptr(0.1)})
		if err != nil {
			t.Fatal(err)
		}
		if *got != (model.DispatchSettings{DispatchMode: true, DispatchThreshold: 0.1, ReinforcementTimeoutMin: 20, OnSiteTimeoutMin: model.DefaultOnSiteTimeoutMin}) {
			t.Fatalf("settings = %+v", got)
		}
		got, err = update(e, p, model.DispatchSettingsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if *got != (model.DispatchSettings{DispatchMode: true, DispatchThreshold: 0.1, ReinforcementTimeoutMin: 20, OnSiteTimeoutMin: model.DefaultOnSiteTimeoutMin}) {
			t.Fatalf("an empty update changed the settings: %+v", got)
		}
		got, err = update(e, p, model.DispatchSettingsInput{DispatchMode: ptr(false), ReinforcementTimeoutMin: ptr[model.Int](0)})
		if err != nil {
			t.Fatal(err)
		}
		if *got != (model.DispatchSettings{DispatchMode: false, DispatchThreshold: 0.1, ReinforcementTimeoutMin: 0, OnSiteTimeoutMin: model.DefaultOnSiteTimeoutMin}) {
			t.Fatalf("settings = %+v", got)
		}
	})
	t.Run("Bounds", func(t *testing.T) {
		e, _, p := setup(t)
		for _, in := range []model.DispatchSettingsInput{
			{DispatchThreshold: ptr(0.0)}, {DispatchThreshold: ptr(1.0)},
			{ReinforcementTimeoutMin: ptr[model.Int](0)}, {ReinforcementTimeoutMin: ptr[model.Int](1440)},
		} {
			if _, err := update(e, p, in); err != nil {
				t.Errorf("update %+v: %v", in, err)
			}
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    model.DispatchSettingsInput
	}{
		"ErrThresholdNegative": {"dispatch_threshold", model.DispatchSettingsInput{DispatchThreshold: ptr(-0.01)}},
		"ErrThresholdAboveOne": {"dispatch_threshold", model.DispatchSettingsInput{DispatchThreshold: ptr(1.01)}},
		"ErrThresholdNaN":      {"dispatch_threshold", model.DispatchSettingsInput{DispatchThreshold: ptr(math.NaN())}},
		"ErrThresholdInf":      {"dispatch_threshold", model.DispatchSettingsInput{DispatchThreshold: ptr(math.Inf(1))}},
		"ErrThresholdNegInf":   {"dispatch_threshold", model.DispatchSettingsInput{DispatchThreshold: ptr(math.Inf(-1))}},
		"ErrTimeoutNegative":   {"reinforcement_timeout_min", model.DispatchSettingsInput{ReinforcementTimeoutMin: ptr[model.Int](-1)}},
		"ErrTimeoutTooLong":    {"reinforcement_timeout_min", model.DispatchSettingsInput{ReinforcementTimeoutMin: ptr[model.Int](1441)}},
	} {
		t.Run(name, func(t *testing.T) {
			e, _, p := setup(t)
			// A valid field beside the bad one must not be applied either.
			in := tc.in
			in.DispatchMode = ptr(true)
			_, err := update(e, p, in)
			AssertInvalid(t, err, tc.field)
			tn, _ := e.Tenant(context.Background(), p)
			if tn.FeatureFlags.DispatchMode || tn.DispatchThreshold != 0.2 || tn.ReinforcementTimeoutMin != 0 {
				t.Fatalf("a refused update changed the tenant: %+v", tn)
			}
		})
	}
	t.Run("ErrForbidden", func(t *testing.T) {
		e, _, p := setup(t)
		for _, role := range []string{model.RoleOperationalSupervisor, model.RoleFieldOperator,
			model.RoleCorporateClient, model.RoleAPIUser} {
			q := p
			q.Role = role
			_, err := update(e, q, model.DispatchSettingsInput{DispatchMode: ptr(true)})
			AssertKind(t, err, model.KindForbidden)
		}
		// Permission comes before validation: a forbidden caller learns nothing.
		q := p
		q.Role = model.RoleAPIUser
		_, err := update(e, q, model.DispatchSettingsInput{DispatchThreshold: ptr(7.0)})
		AssertKind(t, err, model.KindForbidden)
	})
	t.Run("Key", func(t *testing.T) {
		e, _, p := setup(t)
		key := model.Principal{TenantID: p.TenantID, KeyID: model.NewID(), Scopes: []string{"settings:dispatch"}}
		if _, err := update(e, key, model.DispatchSettingsInput{DispatchMode: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		key.Scopes = []string{"events:read"}
		_, err := update(e, key, model.DispatchSettingsInput{DispatchMode: ptr(true)})
		AssertKind(t, err, model.KindForbidden)
	})
	t.Run("Admin", func(t *testing.T) {
		e, _, p := setup(t)
		p.Role = model.RoleCompanyAdmin
		if _, err := update(e, p, model.DispatchSettingsInput{DispatchMode: ptr(true)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		e, _, p := setup(t)
		p.TenantID = model.NewID()
		_, err := update(e, p, model.DispatchSettingsInput{DispatchMode: ptr(true)})
		AssertKind(t, err, model.KindNotFound)
	})
}
