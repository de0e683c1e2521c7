package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/password"
)

func createUser(e *engine.Engine, p model.Principal, in model.CreateUserInput) (*model.User, error) {
	var out *model.User
	err := func() (err error) {
		out, err = e.CreateUser(context.Background(), p, in, nil)
		return err
	}()
	return out, err
}

func updateUser(e *engine.Engine, p model.Principal, id string, in model.UpdateUserInput) (*model.User, error) {
	var out *model.User
	err := func() (err error) {
		out, err = e.UpdateUser(context.Background(), p, id, in, nil)
		return err
	}()
	return out, err
}

func validUserInput() model.CreateUserInput {
	return model.CreateUserInput{Email: "bob@acme.example", Name: "Bob", Role: model.RoleFieldOperator,
		Password: testPassword}
}

func TestEngine_CreateUser(t *testing.T) {
	setup := func(t *testing.T) (*engine.Engine, model.Principal) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		return e, adminOf(ct.Tenant, model.NewID())
	}
	t.Run("OK", func(t *testing.T) {
		e, p := setup(t)
		in := validUserInput()
		in.Email, in.Name = "  Bob@ACME.example ", "  Bob Builder "
		u, err := createUser(e, p, in)
		if err != nil {
			t.Fatal(err)
		}
		if !model.ValidID(u.ID) || u.TenantID != p.TenantID || u.Email != "bob@acme.example" ||
			u.Name != "Bob Builder" || u.RBACLevel != model.RoleFieldOperator || u.Status != engine.UserActive ||
			!u.CreatedAt.Equal(epoch) || !u.UpdatedAt.Equal(epoch) {
			t.Fatalf("user = %+v", u)
		}
		acct := MustUserAccount(t, e, p.TenantID, u.ID)
		if acct.TokenVersion != 1 || !password.VerifyPassword(acct.PasswordHash, testPassword) {
			t.Fatalf("account = %+v", acct)
		}
		if _, err := login(e, "bob@acme.example", testPassword); err != nil {
			t.Fatalf("the new user cannot log in: %v", err)
		}
	})
	t.Run("PendingWithoutPassword", func(t *testing.T) {
		e, p := setup(t)
		in := validUserInput()
		in.Password = ""
		u, err := createUser(e, p, in)
		if err != nil {
			t.Fatal(err)
		}
		if u.Status != engine.UserPending {
			t.Fatalf("status = %s, want pending", u.Status)
		}
		if acct := MustUserAccount(t, e, p.TenantID, u.ID); acct.PasswordHash != "" {
			t.Fatal("a pending user has a password hash")
		}
	})
	t.Run("EveryRole", func(t *testing.T) {
		e, p := setup(t)
		for i, role := range model.Roles {
			in := validUserInput()
			in.Email, in.Role = "user"+string(rune('a'+i))+"@acme.example", role
			if _, err := createUser(e, p, in); err != nil {
				t.Fatalf("role %s: %v", role, err)
			}
		}
	})
	t.Run("PasswordLengths", func(t *testing.T) {
		e, p := setup(t)
		for i, pw := range []string{"0123456789", "ééééééééé\u00e9", strings.Repeat("p", model.MaxPasswordLen)} {
			in := validUserInput()
			in.Email, in.Password = "pw"+string(rune('a'+i))+"@acme.example", pw
			if _, err := createUser(e, p, in); err != nil {
				t.Fatalf("password of %d runes: %v", len([]rune(pw)), err)
			}
		}
	})
	for name, tc := range map[string]struct {
		field  string
		mutate func(*model.CreateUserInput)
	}{
		"ErrEmailRequired":    {"email", func(in *model.CreateUserInput) { in.Email = "  " }},
		"ErrEmailInvalid":     {"email", func(in *model.CreateUserInput) { in.Email = "bob.acme.example" }},
		"ErrEmailTwoAts":      {"email", func(in *model.CreateUserInput) { in.Email = "bob@@acme.example" }},
		"ErrEmailNoDot":       {"email", func(in *model.CreateUserInput) { in.Email = "bob@acme" }},
		"ErrNameRequired":     {"name", func(in *model.CreateUserInput) { in.Name = "" }},
		"ErrNameBlank":        {"name", func(in *model.CreateUserInput) { in.Name = "   " }},
		"ErrNameTooLong":      {"name", func(in *model.CreateUserInput) { in.Name = strings.Repeat("n", 201) }},
		"ErrRoleRequired":     {"role", func(in *model.CreateUserInput) { in.Role = "" }},
		"ErrRoleInvalid":      {"role", func(in *model.CreateUserInput) { in.Role = "superuser" }},
		"ErrPasswordTooShort": {"password", func(in *model.CreateUserInput) { in.Password = "123456789" }},
		"ErrPasswordRunes":    {"password", func(in *model.CreateUserInput) { in.Password = "ééééééééé" }}, // 18 bytes, 9 runes
		"ErrPasswordTooLong":  {"password", func(in *model.CreateUserInput) { in.Password = strings.Repeat("p", model.MaxPasswordLen+1) }},
	} {
		t.Run(name, func(t *testing.T) {
			e, p := setup(t)
			in := validUserInput()
			tc.mutate(&in)
			_, err := createUser(e, p, in)
			AssertInvalid(t, err, tc.field)
			if users, _, _ := e.Users(context.Background(), p, model.Page{Limit: 10}); len(users) != 0 {
				t.Fatalf("a refused user was stored: %+v", users)
			}
		})
	}
	t.Run("ErrDuplicateEmail", func(t *testing.T) {
		e, p := setup(t)
		if _, err := createUser(e, p, validUserInput()); err != nil {
			t.Fatal(err)
		}
		in := validUserInput()
		in.Email = "BOB@acme.example"
		_, err := createUser(e, p, in)
		AssertKind(t, err, model.KindConflict)
	})
	t.Run("ErrDuplicateEmailAcrossTenants", func(t *testing.T) {
		e, p := setup(t)
		other := MustCreateTenant(t, e, "other")
		if _, err := createUser(e, p, validUserInput()); err != nil {
			t.Fatal(err)
		}
		_, err := createUser(e, adminOf(other.Tenant, model.NewID()), validUserInput())
		AssertKind(t, err, model.KindConflict)
		users, _, err := e.Users(context.Background(), adminOf(other.Tenant, ""), model.Page{Limit: 10})
		if err != nil || len(users) != 0 {
			t.Fatalf("other tenant's users = %+v, %v; want none", users, err)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		e, p := setup(t)
		for _, role := range model.Roles[1:] {
			q := p
			q.Role = role
			_, err := createUser(e, q, validUserInput())
			AssertKind(t, err, model.KindForbidden)
		}
		// No key holds tenant:admin, not even the first one.
		key := model.Principal{TenantID: p.TenantID, KeyID: model.NewID(), Scopes: model.KeyScopes()}
		_, err := createUser(e, key, validUserInput())
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_CreateUserIn(t *testing.T) {
	createIn := func(e *engine.Engine, slug string, in model.CreateUserInput) (*model.User, error) {
		var out *model.User
		err := func() (err error) {
			out, err = e.AdminCreateUser(context.Background(), slug, in)
			return err
		}()
		return out, err
	}
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		u, err := createIn(e, "acme", validUserInput())
		if err != nil {
			t.Fatal(err)
		}
		if u.TenantID != ct.Tenant.ID || u.Status != engine.UserActive {
			t.Fatalf("user = %+v", u)
		}
	})
	t.Run("ErrPasswordRequired", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		in := validUserInput()
		in.Password = ""
		_, err := createIn(e, "acme", in)
		AssertInvalid(t, err, "password")
	})
	t.Run("ErrTenantNotFound", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := createIn(e, "ghost", validUserInput())
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestEngine_Users(t *testing.T) {
	ctx := context.Background()
	e, _ := MustOpenEngine(t)
	ct := MustCreateTenant(t, e, "acme")
	admin := adminOf(ct.Tenant, model.NewID())
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		u := MustCreateUser(t, e, "acme", name+"@acme.example", model.RoleAPIUser)
		ids = append(ids, u.ID)
	}
	t.Run("OK", func(t *testing.T) {
		users, next, err := e.Users(ctx, admin, model.Page{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 2 || users[0].ID != ids[2] || users[1].ID != ids[1] || next == "" {
			t.Fatalf("page 1 = %+v, next %q", users, next)
		}
		users, next, err = e.Users(ctx, admin, model.Page{Limit: 2, Cursor: next})
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 1 || users[0].ID != ids[0] || next != "" {
			t.Fatalf("page 2 = %+v, next %q", users, next)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		_, _, err := e.Users(ctx, model.Principal{TenantID: ct.Tenant.ID, UserID: ids[0], Role: model.RoleCompanyTech},
			model.Page{Limit: 10})
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_UpdateUser(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *model.FakeClock
		admin model.Principal
		bob   *model.User
	}
	setup := func(t *testing.T) fixture {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		self := MustCreateUser(t, e, "acme", "admin@acme.example", model.RoleCompanyAdmin)
		bob := MustCreateUser(t, e, "acme", "bob@acme.example", model.RoleFieldOperator)
		return fixture{e, clock, adminOf(ct.Tenant, self.ID), bob}
	}
	ver := func(t *testing.T, f fixture, id string) int64 {
		t.Helper()
		return MustUserAccount(t, f.e, f.admin.TenantID, id).TokenVersion
	}
	t.Run("RoleChangeBumpsVersion", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Minute)
		u, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Role: ptr(model.RoleOperationalSupervisor)})
		if err != nil {
			t.Fatal(err)
		}
		if u.RBACLevel != model.RoleOperationalSupervisor || !u.UpdatedAt.Equal(f.clock.Now()) {
			t.Fatalf("user = %+v", u)
		}
		if v := ver(t, f, f.bob.ID); v != 2 {
			t.Fatalf("token version = %d, want 2", v)
		}
		_, err = f.e.AuthenticateUser(context.Background(), f.admin.TenantID, f.bob.ID, 1)
		AssertKind(t, err, model.KindUnauthorized)
		p, err := f.e.AuthenticateUser(context.Background(), f.admin.TenantID, f.bob.ID, 2)
		if err != nil || p.Role != model.RoleOperationalSupervisor {
			t.Fatalf("principal = %+v, %v", p, err)
		}
	})
	t.Run("SameRoleKeepsVersion", func(t *testing.T) {
		f := setup(t)
		if _, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Role: ptr(model.RoleFieldOperator),
			Status: ptr(engine.UserActive)}); err != nil {
			t.Fatal(err)
		}
		if v := ver(t, f, f.bob.ID); v != 1 {
			t.Fatalf("token version = %d, want 1 (nothing changed)", v)
		}
	})
	t.Run("SuspendAndActivate", func(t *testing.T) {
		f := setup(t)
		u, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Status: ptr(engine.UserSuspended)})
		if err != nil || u.Status != engine.UserSuspended {
			t.Fatalf("user = %+v, %v", u, err)
		}
		_, err = login(f.e, "bob@acme.example", testPassword)
		AssertKind(t, err, model.KindAccountSuspended)
		if _, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Status: ptr(engine.UserActive)}); err != nil {
			t.Fatal(err)
		}
		if v := ver(t, f, f.bob.ID); v != 3 {
			t.Fatalf("token version = %d, want 3", v)
		}
		if _, err := login(f.e, "bob@acme.example", testPassword); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RenameKeepsVersion", func(t *testing.T) {
		f := setup(t)
		u, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Name: ptr("  Robert  ")})
		if err != nil || u.Name != "Robert" {
			t.Fatalf("user = %+v, %v", u, err)
		}
		if v := ver(t, f, f.bob.ID); v != 1 {
			t.Fatalf("token version = %d, want 1", v)
		}
	})
	t.Run("SelfRename", func(t *testing.T) {
		f := setup(t)
		u, err := updateUser(f.e, f.admin, f.admin.UserID, model.UpdateUserInput{Name: ptr("Boss"),
			Role: ptr(model.RoleCompanyAdmin), Status: ptr(engine.UserActive)})
		if err != nil || u.Name != "Boss" {
			t.Fatalf("user = %+v, %v", u, err)
		}
	})
	t.Run("ErrOwnRole", func(t *testing.T) {
		f := setup(t)
		_, err := updateUser(f.e, f.admin, f.admin.UserID, model.UpdateUserInput{Role: ptr(model.RoleAPIUser)})
		AssertKind(t, err, model.KindConflict)
		if acct := MustUserAccount(t, f.e, f.admin.TenantID, f.admin.UserID); acct.RBACLevel != model.RoleCompanyAdmin || acct.TokenVersion != 1 {
			t.Fatalf("the refused change was applied: %+v", acct)
		}
	})
	t.Run("ErrOwnStatus", func(t *testing.T) {
		f := setup(t)
		_, err := updateUser(f.e, f.admin, f.admin.UserID, model.UpdateUserInput{Status: ptr(engine.UserSuspended)})
		AssertKind(t, err, model.KindConflict)
	})
	t.Run("ErrPendingActivate", func(t *testing.T) {
		f := setup(t)
		in := validUserInput()
		in.Email, in.Password = "pending@acme.example", ""
		u, err := createUser(f.e, f.admin, in)
		if err != nil {
			t.Fatal(err)
		}
		_, err = updateUser(f.e, f.admin, u.ID, model.UpdateUserInput{Status: ptr(engine.UserActive)})
		AssertKind(t, err, model.KindConflict)
	})
	t.Run("ErrStatusInvalid", func(t *testing.T) {
		f := setup(t)
		for _, s := range []string{"pending", "deleted", ""} {
			_, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Status: ptr(s)})
			AssertInvalid(t, err, "status")
		}
	})
	t.Run("ErrRoleInvalid", func(t *testing.T) {
		f := setup(t)
		_, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Role: ptr("root")})
		AssertInvalid(t, err, "role")
	})
	t.Run("ErrNameBlank", func(t *testing.T) {
		f := setup(t)
		_, err := updateUser(f.e, f.admin, f.bob.ID, model.UpdateUserInput{Name: ptr("  ")})
		AssertInvalid(t, err, "name")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := setup(t)
		for _, id := range []string{model.NewID(), "not-an-id", ""} {
			_, err := updateUser(f.e, f.admin, id, model.UpdateUserInput{Name: ptr("X")})
			AssertKind(t, err, model.KindNotFound)
		}
	})
	t.Run("ErrOtherTenantsUser", func(t *testing.T) {
		f := setup(t)
		other := MustCreateTenant(t, f.e, "other")
		_, err := updateUser(f.e, adminOf(other.Tenant, model.NewID()), f.bob.ID, model.UpdateUserInput{Status: ptr(engine.UserSuspended)})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		f := setup(t)
		p := f.admin
		p.Role = model.RoleOperationalSupervisor
		_, err := updateUser(f.e, p, f.bob.ID, model.UpdateUserInput{Name: ptr("X")})
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_SetUserStatus(t *testing.T) {
	set := func(e *engine.Engine, email, status string) (*model.User, error) {
		var out *model.User
		err := func() (err error) {
			out, err = e.AdminSetUserStatus(context.Background(), email, status)
			return err
		}()
		return out, err
	}
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "bob@acme.example", model.RoleFieldOperator)
		got, err := set(e, "bob@acme.example", engine.UserSuspended)
		if err != nil || got.Status != engine.UserSuspended {
			t.Fatalf("SetUserStatus = %+v, %v", got, err)
		}
		if v := MustUserAccount(t, e, u.TenantID, u.ID).TokenVersion; v != 2 {
			t.Fatalf("token version = %d, want 2", v)
		}
	})
	t.Run("EmailIsNormalised", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		MustCreateUser(t, e, "acme", "bob@acme.example", model.RoleFieldOperator)
		if _, err := set(e, " Bob@ACME.example ", engine.UserSuspended); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrStatusInvalid", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		MustCreateUser(t, e, "acme", "bob@acme.example", model.RoleFieldOperator)
		for _, s := range []string{"", "deleted", engine.UserPending} {
			_, err := set(e, "bob@acme.example", s)
			AssertInvalid(t, err, "status")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := set(e, "ghost@acme.example", engine.UserSuspended)
		AssertKind(t, err, model.KindNotFound)
	})
}
