package model_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// apiTable is the role → permission table of the contract (docs/rules.md), copied as text on purpose: the
// engine's constants are checked against the contract, not against themselves.
var apiTable = map[string]string{
	"company_admin": "tenant:admin events:read events:write webhooks:manage zones:manage zones:read " +
		"apikeys:manage devices:manage devices:sync sync:write missions:view missions:manage " +
		"missions:receive dispatch:assign teams:read teams:manage settings:dispatch usage:read " +
		"connectivity:report location:self",
	"company_tech": "events:read events:write webhooks:manage zones:manage zones:read apikeys:manage " +
		"devices:manage sync:write missions:view teams:read settings:dispatch usage:read",
	"operational_supervisor": "events:read events:write zones:read dispatch:assign missions:view " +
		"missions:manage teams:read teams:manage connectivity:report",
	"field_operator": "events:read events:write zones:read missions:view missions:receive devices:sync " +
		"connectivity:report location:self",
	"corporate_client": "events:read missions:view teams:read zones:read usage:read",
	"api_user":         "events:read events:write zones:read missions:view teams:read",
}

// allPermissionNames is every permission of the role table, plus the key-only sms:inbound.
func allPermissionNames() []string {
	set := map[string]bool{"sms:inbound": true}
	for _, perms := range apiTable {
		for _, p := range strings.Fields(perms) {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func TestRoleHas(t *testing.T) {
	t.Run("Table", func(t *testing.T) {
		for role, perms := range apiTable {
			want := strings.Fields(perms)
			for _, p := range allPermissionNames() {
				if got := model.RoleHas(role, p); got != slices.Contains(want, p) {
					t.Errorf("RoleHas(%s, %s) = %v, want %v", role, p, got, !got)
				}
			}
		}
	})
	t.Run("RolesAreTheContractsSix", func(t *testing.T) {
		var want []string
		for role := range apiTable {
			want = append(want, role)
		}
		if got := sorted(model.Roles); !slices.Equal(got, sorted(want)) {
			t.Fatalf("Roles = %v, want %v", got, sorted(want))
		}
		if model.Roles[0] != model.RoleCompanyAdmin {
			t.Fatalf("Roles[0] = %s, want company_admin (most privileged first)", model.Roles[0])
		}
		for _, r := range model.Roles {
			if !model.ValidRole(r) {
				t.Errorf("ValidRole(%s) = false", r)
			}
		}
	})
	t.Run("PermissionsAreTheTablesUnion", func(t *testing.T) {
		want := slices.DeleteFunc(allPermissionNames(), func(p string) bool { return p == "sms:inbound" })
		if got := sorted(model.Permissions); !slices.Equal(got, want) {
			t.Fatalf("Permissions = %v, want %v", got, want)
		}
		if got := sorted(strings.Fields(apiTable["company_admin"])); !slices.Equal(got, want) {
			t.Fatalf("company_admin in the test table = %v, want everything %v", got, want)
		}
	})
	t.Run("UnknownRole", func(t *testing.T) {
		for _, r := range []string{"", "admin", "Company_Admin", "company_admin "} {
			if model.ValidRole(r) {
				t.Errorf("ValidRole(%q) = true", r)
			}
			if model.RoleHas(r, model.PermEventsRead) {
				t.Errorf("RoleHas(%q, events:read) = true", r)
			}
		}
	})
	t.Run("UnknownPermission", func(t *testing.T) {
		if model.RoleHas(model.RoleCompanyAdmin, "events:delete") {
			t.Fatal("company_admin holds an unknown permission")
		}
	})
}

func TestKeyScopes(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		want := slices.DeleteFunc(allPermissionNames(), func(p string) bool { return p == "tenant:admin" })
		if got := sorted(model.KeyScopes()); !slices.Equal(got, want) {
			t.Fatalf("KeyScopes = %v, want %v", got, want)
		}
		for _, s := range want {
			if !model.ValidScope(s) {
				t.Errorf("ValidScope(%s) = false", s)
			}
		}
	})
	t.Run("NoTenantAdmin", func(t *testing.T) {
		if model.ValidScope(model.PermTenantAdmin) || slices.Contains(model.KeyScopes(), "tenant:admin") {
			t.Fatal("tenant:admin must not be a key scope")
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		for _, s := range []string{"", "events", "EVENTS:READ", "events:read "} {
			if model.ValidScope(s) {
				t.Errorf("ValidScope(%q) = true", s)
			}
		}
	})
	t.Run("Default", func(t *testing.T) {
		want := slices.DeleteFunc(allPermissionNames(), func(p string) bool {
			return p == "tenant:admin" || p == "sms:inbound"
		})
		if got := sorted(model.DefaultKeyScopes()); !slices.Equal(got, want) {
			t.Fatalf("DefaultKeyScopes = %v, want %v", got, want)
		}
	})
	t.Run("FreshSlices", func(t *testing.T) {
		a := model.DefaultKeyScopes()
		a[0] = "mutated"
		_ = append(a, "appended")
		if slices.Contains(model.KeyScopes(), "mutated") || slices.Contains(model.DefaultKeyScopes(), "mutated") {
			t.Fatal("a caller's change leaked into the scope lists")
		}
		if !slices.Contains(model.KeyScopes(), model.PermSMSInbound) {
			t.Fatal("KeyScopes lost sms:inbound")
		}
	})
}

func TestPrincipal_Can(t *testing.T) {
	t.Run("User", func(t *testing.T) {
		for role, perms := range apiTable {
			p := model.Principal{TenantID: model.NewID(), UserID: model.NewID(), Role: role,
				Scopes: []string{"sms:inbound", "tenant:admin"}} // ignored for a user
			for _, perm := range allPermissionNames() {
				want := slices.Contains(strings.Fields(perms), perm)
				if got := p.Can(perm); got != want {
					t.Errorf("%s.Can(%s) = %v, want %v", role, perm, got, want)
				}
				err := p.Require(perm)
				if want && err != nil {
					t.Errorf("%s.Require(%s) = %v", role, perm, err)
				}
				if !want {
					modeltest.AssertKind(t, err, model.KindForbidden)
				}
			}
			if p.IsKey() {
				t.Error("a user principal is a key")
			}
		}
	})
	t.Run("Key", func(t *testing.T) {
		// A key is judged by its scopes alone, never by a role.
		p := model.Principal{TenantID: model.NewID(), KeyID: model.NewID(),
			Role: model.RoleCompanyAdmin, Scopes: []string{"events:read", "sms:inbound"}}
		if !p.IsKey() {
			t.Fatal("IsKey = false")
		}
		for _, perm := range allPermissionNames() {
			want := perm == "events:read" || perm == "sms:inbound"
			if got := p.Can(perm); got != want {
				t.Errorf("key.Can(%s) = %v, want %v", perm, got, want)
			}
		}
	})
	t.Run("DefaultKey", func(t *testing.T) {
		p := model.Principal{KeyID: model.NewID(), Scopes: model.DefaultKeyScopes()}
		if p.Can(model.PermTenantAdmin) || p.Can(model.PermSMSInbound) {
			t.Fatal("the default key holds tenant:admin or sms:inbound")
		}
		if !p.Can(model.PermAPIKeysManage) || !p.Can(model.PermSettingsDispatch) {
			t.Fatal("the default key lacks a key scope")
		}
	})
	t.Run("KeyWithoutScopes", func(t *testing.T) {
		p := model.Principal{KeyID: model.NewID()}
		for _, perm := range allPermissionNames() {
			if p.Can(perm) {
				t.Errorf("a key without scopes can %s", perm)
			}
		}
	})
	t.Run("Nobody", func(t *testing.T) {
		var p model.Principal
		if p.Can(model.PermEventsRead) {
			t.Fatal("the zero principal can read events")
		}
	})
	t.Run("ActorID", func(t *testing.T) {
		u, k := model.NewID(), model.NewID()
		if got := (model.Principal{UserID: u}).ActorID(); got != u {
			t.Errorf("user ActorID = %s", got)
		}
		if got := (model.Principal{KeyID: k}).ActorID(); got != k {
			t.Errorf("key ActorID = %s", got)
		}
	})
	t.Run("ErrForbiddenNamesPermission", func(t *testing.T) {
		err := model.Principal{UserID: "u", Role: model.RoleAPIUser}.Require(model.PermTeamsManage)
		if e := modeltest.AssertKind(t, err, model.KindForbidden); !strings.Contains(e.Msg, "teams:manage") {
			t.Fatalf("message %q does not name the permission", e.Msg)
		}
	})
}

// A device credential holds its user's permissions narrowed to DevicePermissions: a field
// operator's phone syncs, but does not read the event board or manage devices.
func TestPrincipal_DeviceCredentialIsNarrowed(t *testing.T) {
	op := model.Principal{UserID: "u", Role: model.RoleFieldOperator, DeviceID: "d"}
	admin := model.Principal{UserID: "a", Role: model.RoleCompanyAdmin, DeviceID: "d"}
	for _, perm := range []model.Permission{model.PermDevicesSync, model.PermMissionsReceive, model.PermEventsWrite, model.PermLocationSelf} {
		if !op.Can(perm) {
			t.Errorf("a field operator's device lacks %s", perm)
		}
	}
	for _, perm := range []model.Permission{model.PermEventsRead, model.PermMissionsView, model.PermDevicesManage, model.PermTenantAdmin} {
		if op.Can(perm) || admin.Can(perm) {
			t.Errorf("a device credential holds %s", perm)
		}
	}
	if (model.Principal{UserID: "u", Role: model.RoleCorporateClient, DeviceID: "d"}).Can(model.PermDevicesSync) {
		t.Error("a device credential holds more than its user's role")
	}
}
