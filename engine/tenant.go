package engine

import (
	"context"
	"slices"

	"github.com/fieldrelay/fieldrelay/engine/auth"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/teams"
	"github.com/fieldrelay/fieldrelay/engine/writes"
	"github.com/fieldrelay/fieldrelay/engine/zones"
)

// Tenant statuses (model/plans.go).
const (
	TenantActive    = model.TenantActive
	TenantSuspended = model.TenantSuspended
	TenantInactive  = model.TenantInactive
)

// Plans, named by a tenant's license_type (model/plans.go).
const (
	PlanStarter         = model.PlanStarter
	PlanCore            = model.PlanCore
	PlanMissionCritical = model.PlanMissionCritical
)

// PlanRateLimit returns the requests per minute a plan allows; 0 means unlimited.
func PlanRateLimit(plan string) int { return model.PlanRateLimit(plan) }

// ValidPlan reports whether s names a plan.
func ValidPlan(s string) bool {
	return s == PlanStarter || s == PlanCore || s == PlanMissionCritical
}

// AdminCreateTenant creates an active tenant with the defaults of docs/rules.md and its first API key,
// which holds every key scope but sms:inbound.
func (e *Engine) AdminCreateTenant(ctx context.Context, in model.CreateTenantInput) (*model.CreatedTenant, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.CreatedTenant, error) { return e.createTenant(tx, in) })
}

// createTenant is AdminCreateTenant within tx.
func (e *Engine) createTenant(tx model.Tx, in model.CreateTenantInput) (*model.CreatedTenant, error) {
	var err error
	t := &model.Tenant{ID: model.NewID(), Status: TenantActive, DispatchThreshold: 0.20, SLATargetUptimePct: 99.9}
	if t.Name, err = model.RequireText("name", in.Name, 200); err != nil {
		return nil, err
	}
	if in.Slug == "" {
		return nil, model.Invalid("slug", "slug is required")
	}
	if !model.ValidSlug(in.Slug) {
		return nil, model.Invalid("slug", "slug must be 1 to 63 lowercase letters, digits and inner hyphens")
	}
	t.Slug = in.Slug
	if t.Email, err = model.NormalizeEmail("email", in.Email); err != nil {
		return nil, err
	}
	if t.Country, err = model.NormalizeCountry(in.Country); err != nil {
		return nil, err
	}
	t.LicenseType = in.Plan
	if t.LicenseType == "" {
		t.LicenseType = PlanStarter
	}
	if !ValidPlan(t.LicenseType) {
		return nil, model.Invalid("plan", "plan must be one of starter, core, mission-critical")
	}
	if t.Verticals, err = normalizeVerticals(in.Verticals); err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	t.CreatedAt, t.UpdatedAt = now, now
	if err := tx.PutTenant(t); err != nil {
		return nil, err
	}
	key, _, err := auth.CreateKey(e.Service, tx, t.ID, "default", model.DefaultKeyScopes(), nil)
	if err != nil {
		return nil, err
	}
	return &model.CreatedTenant{Tenant: t, APIKey: key}, nil
}

// normalizeVerticals defaults to the standard seven and checks the names.
func normalizeVerticals(vs []string) ([]string, error) {
	if len(vs) == 0 {
		return slices.Clone(model.StandardVerticals), nil
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !model.VerticalRE.MatchString(v) {
			return nil, model.Invalid("verticals", "vertical %s must be 2 to 32 lowercase letters, digits, '_' or '-'", model.Quote(v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// UpdateDispatchSettings changes the principal's tenant's dispatch settings
// (PATCH /v1/tenant/dispatch-settings).
func (e *Engine) UpdateDispatchSettings(ctx context.Context, p model.Principal, in model.DispatchSettingsInput, w *model.Write) (*model.DispatchSettings, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.DispatchSettings, error) { return e.updateDispatchSettings(tx, p, in) })
}

// updateDispatchSettings is UpdateDispatchSettings within tx.
func (e *Engine) updateDispatchSettings(tx model.Tx, p model.Principal, in model.DispatchSettingsInput) (*model.DispatchSettings, error) {
	if err := p.Require(model.PermSettingsDispatch); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	t, err := tx.Tenant(p.TenantID)
	if err != nil {
		return nil, err
	}
	if err := t.SettingsConflict(); err != nil {
		return nil, err
	}
	if in.DispatchMode != nil {
		t.FeatureFlags.DispatchMode = *in.DispatchMode
	}
	if in.DispatchThreshold != nil {
		t.DispatchThreshold = *in.DispatchThreshold
	}
	before := t.ReinforcementTimeoutMin
	if in.ReinforcementTimeoutMin != nil {
		t.ReinforcementTimeoutMin = int(*in.ReinforcementTimeoutMin) // in range: validated
	}
	onSiteBefore := t.OnSiteTimeout()
	if in.OnSiteTimeoutMin != nil {
		v := int(*in.OnSiteTimeoutMin) // in range: validated
		t.OnSiteTimeoutMin = &v
	}
	if in.AlertEscalationMin != nil {
		t.AlertEscalationMin = int(*in.AlertEscalationMin) // in range: validated
	}
	t.UpdatedAt = model.At(e.clock.Now())
	if err := tx.PutTenant(t); err != nil {
		return nil, err
	}
	writes.Changed(tx, t.ID, model.DownSettings, t.ID)
	if err := e.rearmReinforcement(tx, t, before); err != nil {
		return nil, err
	}
	if err := e.rearmOverdue(tx, t, onSiteBefore); err != nil {
		return nil, err
	}
	return dispatchSettings(t), nil
}

// settingsFromCentral sets a site tenant's settings to its central node's copy s (t
// already names the owner and version), within tx: the timers of its active missions
// are set again as after PATCH /v1/tenant/dispatch-settings.
func (e *Engine) settingsFromCentral(tx model.Tx, t *model.Tenant, s model.TenantSettings) error {
	before, onSiteBefore := t.ReinforcementTimeoutMin, t.OnSiteTimeout()
	t.SetSettings(s)
	if err := tx.PutTenant(t); err != nil {
		return err
	}
	if err := e.rearmReinforcement(tx, t, before); err != nil {
		return err
	}
	return e.rearmOverdue(tx, t, onSiteBefore)
}

// AdminSeedTenant creates, in one transaction, a tenant with its users, zones and teams
// (the demo), and answers the tenant and the users created.
func (e *Engine) AdminSeedTenant(ctx context.Context, in model.SeedTenantInput) (*model.CreatedTenant, []*model.User, error) {
	var created *model.CreatedTenant
	var users []*model.User
	err := e.store.Update(ctx, func(tx model.Tx) (err error) {
		users = users[:0]
		if created, err = e.createTenant(tx, in.Tenant); err != nil {
			return err
		}
		for _, u := range in.Users {
			user, err := auth.CreateUserIn(e.Service, tx, created.Tenant.Slug, u)
			if err != nil {
				return err
			}
			users = append(users, user)
		}
		for _, z := range in.Zones {
			if _, err := zones.Create(e.Registry, tx, created.Tenant.ID, z); err != nil {
				return err
			}
		}
		for _, r := range in.Connectivity {
			if _, err := zones.Report(e.Registry, tx, created.Tenant.ID, r); err != nil {
				return err
			}
		}
		if in.Teams == nil {
			return nil
		}
		for _, t := range in.Teams(users) {
			if _, err := teams.Create(e.Roster, tx, created.Tenant.ID, t); err != nil {
				return err
			}
		}
		return nil
	})
	return created, users, err
}
