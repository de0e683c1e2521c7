package model

import (
	"slices"
	"sort"
)

// Role is a user's rbac_level.
type Role = string

// The roles (docs/rules.md, Roles and permissions).
const (
	RoleCompanyAdmin          Role = "company_admin"
	RoleCompanyTech           Role = "company_tech"
	RoleOperationalSupervisor Role = "operational_supervisor"
	RoleFieldOperator         Role = "field_operator"
	RoleCorporateClient       Role = "corporate_client"
	RoleAPIUser               Role = "api_user"
)

// Roles lists every role, most privileged first.
var Roles = []Role{RoleCompanyAdmin, RoleCompanyTech, RoleOperationalSupervisor,
	RoleFieldOperator, RoleCorporateClient, RoleAPIUser}

// Permission names a capability. API keys carry them as scopes.
type Permission = string

// The permissions (docs/rules.md, Roles and permissions).
const (
	PermTenantAdmin        Permission = "tenant:admin"
	PermEventsRead         Permission = "events:read"
	PermEventsWrite        Permission = "events:write"
	PermWebhooksManage     Permission = "webhooks:manage"
	PermZonesManage        Permission = "zones:manage"
	PermZonesRead          Permission = "zones:read"
	PermAPIKeysManage      Permission = "apikeys:manage"
	PermDevicesManage      Permission = "devices:manage"
	PermDevicesSync        Permission = "devices:sync"
	PermSyncWrite          Permission = "sync:write"
	PermMissionsView       Permission = "missions:view"
	PermMissionsManage     Permission = "missions:manage"
	PermMissionsReceive    Permission = "missions:receive"
	PermDispatchAssign     Permission = "dispatch:assign"
	PermTeamsRead          Permission = "teams:read"
	PermTeamsManage        Permission = "teams:manage"
	PermSettingsDispatch   Permission = "settings:dispatch"
	PermUsageRead          Permission = "usage:read"
	PermConnectivityReport Permission = "connectivity:report"
	PermLocationSelf       Permission = "location:self"
	// PermSMSInbound is a key-only scope: the SMS gateway's key.
	PermSMSInbound Permission = "sms:inbound"
)

// Permissions lists every permission a role can hold.
var Permissions = []Permission{PermTenantAdmin, PermEventsRead, PermEventsWrite,
	PermWebhooksManage, PermZonesManage, PermZonesRead, PermAPIKeysManage, PermDevicesManage,
	PermDevicesSync, PermSyncWrite, PermMissionsView, PermMissionsManage, PermMissionsReceive,
	PermDispatchAssign, PermTeamsRead, PermTeamsManage, PermSettingsDispatch, PermUsageRead,
	PermConnectivityReport, PermLocationSelf}

// rolePermissions is the role → permission table (docs/rules.md, Roles and permissions).
var rolePermissions = map[Role][]Permission{
	RoleCompanyAdmin: Permissions,
	RoleCompanyTech: {PermEventsRead, PermEventsWrite, PermWebhooksManage, PermZonesManage,
		PermZonesRead, PermAPIKeysManage, PermDevicesManage, PermSyncWrite, PermMissionsView,
		PermTeamsRead, PermSettingsDispatch, PermUsageRead},
	RoleOperationalSupervisor: {PermEventsRead, PermEventsWrite, PermZonesRead, PermDispatchAssign,
		PermMissionsView, PermMissionsManage, PermTeamsRead, PermTeamsManage, PermConnectivityReport},
	RoleFieldOperator: {PermEventsRead, PermEventsWrite, PermZonesRead, PermMissionsView,
		PermMissionsReceive, PermDevicesSync, PermConnectivityReport, PermLocationSelf},
	RoleCorporateClient: {PermEventsRead, PermMissionsView, PermTeamsRead, PermZonesRead, PermUsageRead},
	RoleAPIUser:         {PermEventsRead, PermEventsWrite, PermZonesRead, PermMissionsView, PermTeamsRead},
}

// ValidRole reports whether r is one of the roles.
func ValidRole(r string) bool { _, ok := rolePermissions[r]; return ok }

// RoleHas reports whether role r holds permission p.
func RoleHas(r Role, p Permission) bool { return slices.Contains(rolePermissions[r], p) }

// KeyScopes lists every scope an API key may hold: the permissions but tenant:admin, plus
// sms:inbound.
func KeyScopes() []string {
	out := make([]string, 0, len(Permissions))
	for _, p := range Permissions {
		if p != PermTenantAdmin {
			out = append(out, p)
		}
	}
	return append(out, PermSMSInbound)
}

// DefaultKeyScopes are the scopes of a tenant's first key: every key scope but sms:inbound.
func DefaultKeyScopes() []string {
	all := KeyScopes()
	return all[:len(all)-1]
}

// ValidScope reports whether s is a key scope.
func ValidScope(s string) bool { return slices.Contains(KeyScopes(), s) }

// normalizeScopes sorts and de-duplicates scopes, rejecting unknown ones.
func normalizeScopes(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, Invalid("scopes", "scopes must name at least one scope")
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !ValidScope(s) {
			return nil, Invalid("scopes", "unknown scope %s", Quote(s))
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Principal is who makes a request: resolved by server from an API key or a JWT, and the
// only source of the tenant a use case works in.
type Principal struct {
	TenantID string
	// Plan is the tenant's plan (its license_type), for the rate limit.
	Plan string
	// TenantActive is false when the tenant is suspended or inactive.
	TenantActive bool
	// UserID is set for a user; KeyID for an API key.
	UserID string
	KeyID  string
	Role   Role
	Scopes []string
	// DeviceID is set for a device credential: the user's principal narrowed to that one
	// device (DevicePermissions, and only that device's sync and queue).
	DeviceID string
}

// DevicePermissions are all a device credential may hold, within its user's role: those
// a device sync's items need (docs/decisions/0126-device-credentials.md).
var DevicePermissions = []Permission{PermDevicesSync, PermEventsWrite, PermMissionsReceive,
	PermLocationSelf, PermConnectivityReport}

// IsKey reports whether the principal is an API key.
func (p Principal) IsKey() bool { return p.KeyID != "" }

// ActorID is the id recorded as the actor of a change: the user's, else the key's.
func (p Principal) ActorID() string {
	if p.UserID != "" {
		return p.UserID
	}
	return p.KeyID
}

// Can reports whether the principal holds permission perm.
func (p Principal) Can(perm Permission) bool {
	if p.DeviceID != "" && !slices.Contains(DevicePermissions, perm) {
		return false
	}
	if p.IsKey() {
		return slices.Contains(p.Scopes, perm)
	}
	return RoleHas(p.Role, perm)
}

// Require returns a forbidden error unless the principal holds perm.
func (p Principal) Require(perm Permission) error {
	if !p.Can(perm) {
		return Errorf(KindForbidden, "this operation needs the %s permission", perm)
	}
	return nil
}
