package model

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
