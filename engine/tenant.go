package engine

import (
	"context"
	"math"
	"slices"
)

// Tenant statuses.
const (
	TenantActive    = "active"
	TenantSuspended = "suspended"
	TenantInactive  = "inactive"
)

// Plans, named by a tenant's license_type.
const (
	PlanStarter         = "starter"
	PlanCore            = "core"
	PlanMissionCritical = "mission-critical"
)

// PlanRateLimit returns the requests per minute a plan allows; 0 means unlimited.
func PlanRateLimit(plan string) int {
	switch plan {
	case PlanCore:
		return 1000
	case PlanMissionCritical:
		return 0
	default:
		return 500
	}
}

// ValidPlan reports whether s names a plan.
func ValidPlan(s string) bool {
	return s == PlanStarter || s == PlanCore || s == PlanMissionCritical
}

// StandardVerticals are the verticals of INTERFACE.md, valid for every tenant.
var StandardVerticals = []string{"healthcare", "banking", "logistics", "delivery", "telecom", "gov", "emergency"}

// FeatureFlags of a tenant.
type FeatureFlags struct {
	// DispatchMode enables auto-dispatch.
	DispatchMode bool `json:"dispatch_mode"`
}

// Tenant is an organisation using the node; every other record belongs to one.
type Tenant struct {
	ID                      string       `json:"id"`
	Name                    string       `json:"name"`
	Slug                    string       `json:"slug"`
	Email                   string       `json:"email"`
	LicenseType             string       `json:"license_type"`
	Status                  string       `json:"status"`
	Country                 string       `json:"country"`
	Verticals               []string     `json:"verticals"`
	DispatchThreshold       float64      `json:"dispatch_threshold"`
	ReinforcementTimeoutMin int          `json:"reinforcement_timeout_min"`
	FeatureFlags            FeatureFlags `json:"feature_flags"`
	SLATargetUptimePct      float64      `json:"sla_target_uptime_pct"`
	CreatedAt               Time         `json:"created_at"`
	UpdatedAt               Time         `json:"updated_at"`
}

// HasVertical reports whether v is valid for the tenant: a standard vertical or one the
// tenant enabled.
func (t *Tenant) HasVertical(v string) bool {
	return slices.Contains(StandardVerticals, v) || slices.Contains(t.Verticals, v)
}

// CreateTenantInput is what `fieldrelay tenant create` takes.
type CreateTenantInput struct {
	Name      string   `json:"name"`
	Slug      string   `json:"slug"`
	Email     string   `json:"email"`
	Country   string   `json:"country"`
	Plan      string   `json:"plan"`
	Verticals []string `json:"verticals"`
}

// CreatedTenant is a new tenant with its first API key, shown once.
type CreatedTenant struct {
	Tenant *Tenant `json:"tenant"`
	APIKey string  `json:"api_key"`
}

// CreateTenant creates, within tx, an active tenant with the defaults of API.md and its first API key,
// which holds every key scope but sms:inbound.
func (e *Engine) CreateTenant(tx Tx, in CreateTenantInput) (*CreatedTenant, error) {
	var err error
	t := &Tenant{ID: NewID(), Status: TenantActive, DispatchThreshold: 0.20, SLATargetUptimePct: 99.9}
	if t.Name, err = requireText("name", in.Name, 200); err != nil {
		return nil, err
	}
	if in.Slug == "" {
		return nil, Invalid("slug", "slug is required")
	}
	if !validSlug(in.Slug) {
		return nil, Invalid("slug", "slug must be 1 to 63 lowercase letters, digits and inner hyphens")
	}
	t.Slug = in.Slug
	if t.Email, err = normalizeEmail("email", in.Email); err != nil {
		return nil, err
	}
	if t.Country, err = normalizeCountry(in.Country); err != nil {
		return nil, err
	}
	t.LicenseType = in.Plan
	if t.LicenseType == "" {
		t.LicenseType = PlanStarter
	}
	if !ValidPlan(t.LicenseType) {
		return nil, Invalid("plan", "plan must be one of starter, core, mission-critical")
	}
	if t.Verticals, err = normalizeVerticals(in.Verticals); err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	t.CreatedAt, t.UpdatedAt = now, now
	if err := tx.PutTenant(t); err != nil {
		return nil, err
	}
	key, _, err := e.createAPIKey(tx, t.ID, "default", DefaultKeyScopes(), nil)
	if err != nil {
		return nil, err
	}
	return &CreatedTenant{Tenant: t, APIKey: key}, nil
}

// normalizeVerticals defaults to the standard seven and checks the names.
func normalizeVerticals(vs []string) ([]string, error) {
	if len(vs) == 0 {
		return slices.Clone(StandardVerticals), nil
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !verticalRE.MatchString(v) {
			return nil, Invalid("verticals", "vertical %s must be 2 to 32 lowercase letters, digits, '_' or '-'", Quote(v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// Tenants lists every tenant of the node, oldest first.
func (e *Engine) Tenants(ctx context.Context) ([]Tenant, error) {
	var out []Tenant
	err := e.store.View(ctx, func(tx Tx) (err error) {
		out, err = tx.Tenants()
		return err
	})
	return out, err
}

// TenantBySlug returns the tenant with the given slug.
func (e *Engine) TenantBySlug(ctx context.Context, slug string) (*Tenant, error) {
	var t *Tenant
	err := e.store.View(ctx, func(tx Tx) (err error) {
		t, err = tx.TenantBySlug(slug)
		return err
	})
	return t, err
}

// SetTenantStatus moves a tenant to active, suspended or inactive.
func (e *Engine) SetTenantStatus(tx Tx, slug, status string) (*Tenant, error) {
	if status != TenantActive && status != TenantSuspended && status != TenantInactive {
		return nil, Invalid("status", "status must be active, suspended or inactive")
	}
	t, err := tx.TenantBySlug(slug)
	if err != nil || t.Status == status {
		return t, err
	}
	t.Status = status
	t.UpdatedAt = At(e.clock.Now())
	return t, tx.PutTenant(t)
}

// TenantOf returns the principal's tenant (GET /v1/tenant/me).
func (e *Engine) TenantOf(ctx context.Context, p Principal) (*Tenant, error) {
	var t *Tenant
	err := e.store.View(ctx, func(tx Tx) (err error) {
		t, err = tx.Tenant(p.TenantID)
		return err
	})
	return t, err
}

// DispatchSettings are the tenant's auto-dispatch settings.
type DispatchSettings struct {
	DispatchMode            bool    `json:"dispatch_mode"`
	DispatchThreshold       float64 `json:"dispatch_threshold"`
	ReinforcementTimeoutMin int     `json:"reinforcement_timeout_min"`
}

// DispatchSettingsInput changes some of the settings; nil fields stay as they are.
type DispatchSettingsInput struct {
	DispatchMode            *bool    `json:"dispatch_mode"`
	DispatchThreshold       *float64 `json:"dispatch_threshold"`
	ReinforcementTimeoutMin *Int     `json:"reinforcement_timeout_min"`
}

// MaxReinforcementTimeoutMin caps reinforcement_timeout_min at one day.
const MaxReinforcementTimeoutMin = 1440

// Validate checks the ranges of the given fields.
func (in DispatchSettingsInput) Validate() error {
	if v := in.DispatchThreshold; v != nil && (math.IsNaN(*v) || *v < 0 || *v > 1) {
		return Invalid("dispatch_threshold", "dispatch_threshold must be between 0 and 1")
	}
	if v := in.ReinforcementTimeoutMin; v != nil && (*v < 0 || *v > MaxReinforcementTimeoutMin) {
		return Invalid("reinforcement_timeout_min", "reinforcement_timeout_min must be between 0 and %d minutes (0 disables)", MaxReinforcementTimeoutMin)
	}
	return nil
}

// UpdateDispatchSettings changes the principal's tenant's dispatch settings
// (PATCH /v1/tenant/dispatch-settings) within tx.
func (e *Engine) UpdateDispatchSettings(tx Tx, p Principal, in DispatchSettingsInput) (*DispatchSettings, error) {
	if err := p.Require(PermSettingsDispatch); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	t, err := tx.Tenant(p.TenantID)
	if err != nil {
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
	t.UpdatedAt = At(e.clock.Now())
	if err := tx.PutTenant(t); err != nil {
		return nil, err
	}
	if err := e.rearmReinforcement(tx, t, before); err != nil {
		return nil, err
	}
	return &DispatchSettings{t.FeatureFlags.DispatchMode, t.DispatchThreshold, t.ReinforcementTimeoutMin}, nil
}
