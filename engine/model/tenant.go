package model

import (
	"math"
	"slices"
)

// StandardVerticals are the seven standard verticals (docs/rules.md, Tenants and verticals), valid for every tenant.
var StandardVerticals = []string{"healthcare", "banking", "logistics", "delivery", "telecom", "gov", "emergency"}

// FeatureFlags of a tenant.
type FeatureFlags struct {
	// DispatchMode enables auto-dispatch.
	DispatchMode bool `json:"dispatch_mode"`
}

// Tenant is an organisation using the node; every other record belongs to one.
type Tenant struct {
	ID                      string   `json:"id"`
	Name                    string   `json:"name"`
	Slug                    string   `json:"slug"`
	Email                   string   `json:"email"`
	LicenseType             string   `json:"license_type"`
	Status                  string   `json:"status"`
	Country                 string   `json:"country"`
	Verticals               []string `json:"verticals"`
	DispatchThreshold       float64  `json:"dispatch_threshold"`
	ReinforcementTimeoutMin int      `json:"reinforcement_timeout_min"`
	// OnSiteTimeoutMin is the minutes an acknowledged mission has to reach ON_SITE before
	// mission_overdue; nil: DefaultOnSiteTimeoutMin, 0: off.
	OnSiteTimeoutMin *int `json:"on_site_timeout_min,omitempty"`
	// AlertEscalationMin is the minutes after which an alert still unacknowledged is sent
	// by SMS to the supervisors on duty; 0: never.
	AlertEscalationMin int          `json:"alert_escalation_min"`
	FeatureFlags       FeatureFlags `json:"feature_flags"`
	SLATargetUptimePct float64      `json:"sla_target_uptime_pct"`
	// Retention is the tenant's own retention settings (nil: the node's defaults).
	Retention *Retention `json:"retention,omitempty"`
	// SettingsOrigin is the central node whose settings (TenantSettings) this tenant
	// holds a copy of: they are read-only here; SettingsVersion is the owner's version of
	// the copy (docs/decisions/0200-tenant-settings-down.md).
	SettingsOrigin  *string `json:"settings_origin,omitempty"`
	SettingsVersion int64   `json:"settings_origin_version,omitempty"`
	CreatedAt       Time    `json:"created_at"`
	UpdatedAt       Time    `json:"updated_at"`
}

// HasVertical reports whether v is valid for the tenant: a standard vertical or one the
// tenant enabled.
func (t *Tenant) HasVertical(v string) bool {
	return slices.Contains(StandardVerticals, v) || slices.Contains(t.Verticals, v)
}

// TenantSettings are the settings of a tenant its central node owns and sends down to
// its sites: the verticals, the dispatch settings and the retention.
type TenantSettings struct {
	Verticals               []string     `json:"verticals"`
	FeatureFlags            FeatureFlags `json:"feature_flags"`
	DispatchThreshold       float64      `json:"dispatch_threshold"`
	ReinforcementTimeoutMin int          `json:"reinforcement_timeout_min"`
	OnSiteTimeoutMin        *int         `json:"on_site_timeout_min,omitempty"`
	AlertEscalationMin      int          `json:"alert_escalation_min"`
	Retention               *Retention   `json:"retention,omitempty"`
}

// Settings returns the tenant's settings.
func (t *Tenant) Settings() TenantSettings {
	return TenantSettings{Verticals: slices.Clone(t.Verticals), FeatureFlags: t.FeatureFlags,
		DispatchThreshold: t.DispatchThreshold, ReinforcementTimeoutMin: t.ReinforcementTimeoutMin,
		OnSiteTimeoutMin: t.OnSiteTimeoutMin, AlertEscalationMin: t.AlertEscalationMin, Retention: t.Retention}
}

// SetSettings sets the tenant's settings to s.
func (t *Tenant) SetSettings(s TenantSettings) {
	if s.Verticals == nil {
		s.Verticals = []string{}
	}
	t.Verticals, t.FeatureFlags, t.DispatchThreshold = s.Verticals, s.FeatureFlags, s.DispatchThreshold
	t.ReinforcementTimeoutMin, t.OnSiteTimeoutMin, t.AlertEscalationMin = s.ReinforcementTimeoutMin, s.OnSiteTimeoutMin, s.AlertEscalationMin
	t.Retention = s.Retention
}

// SettingsConflict is the error of a change of the tenant's settings while they are a
// copy of its central node's: 409 conflict naming the owner; nil when they are its own.
func (t *Tenant) SettingsConflict() error {
	return CopyConflict("the tenant's settings", t.SettingsOrigin)
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

// DispatchSettings are the tenant's auto-dispatch settings.
type DispatchSettings struct {
	DispatchMode            bool    `json:"dispatch_mode"`
	DispatchThreshold       float64 `json:"dispatch_threshold"`
	ReinforcementTimeoutMin int     `json:"reinforcement_timeout_min"`
	OnSiteTimeoutMin        int     `json:"on_site_timeout_min"`
	AlertEscalationMin      int     `json:"alert_escalation_min"`
}

// DispatchSettingsInput changes some of the settings; nil fields stay as they are.
type DispatchSettingsInput struct {
	DispatchMode            *bool    `json:"dispatch_mode"`
	DispatchThreshold       *float64 `json:"dispatch_threshold"`
	ReinforcementTimeoutMin *Int     `json:"reinforcement_timeout_min"`
	OnSiteTimeoutMin        *Int     `json:"on_site_timeout_min"`
	AlertEscalationMin      *Int     `json:"alert_escalation_min"`
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
	if v := in.OnSiteTimeoutMin; v != nil && (*v < 0 || *v > MaxReinforcementTimeoutMin) {
		return Invalid("on_site_timeout_min", "on_site_timeout_min must be between 0 and %d minutes (0 disables)", MaxReinforcementTimeoutMin)
	}
	if v := in.AlertEscalationMin; v != nil && (*v < 0 || *v > MaxReinforcementTimeoutMin) {
		return Invalid("alert_escalation_min", "alert_escalation_min must be between 0 and %d minutes (0 disables)", MaxReinforcementTimeoutMin)
	}
	return nil
}

// DefaultOnSiteTimeoutMin is a tenant's on-site timeout until it sets one
// (docs/decisions/0260-mission-timers.md).
const DefaultOnSiteTimeoutMin = 30

// OnSiteTimeout is the minutes an acknowledged mission of the tenant has to reach
// ON_SITE (0: no check).
func (t *Tenant) OnSiteTimeout() int {
	if t.OnSiteTimeoutMin == nil {
		return DefaultOnSiteTimeoutMin
	}
	return *t.OnSiteTimeoutMin
}

// SeedTenantInput is a ready-made tenant (the demo): the tenant, its users, its zones and
// its teams, which Teams makes knowing the users created (in the order of Users).
type SeedTenantInput struct {
	Tenant CreateTenantInput
	Users  []CreateUserInput
	Zones  []ZoneInput
	// Connectivity is a first report of some of the zones.
	Connectivity []ConnectivityReport
	Teams        func(users []*User) []TeamInput
}
