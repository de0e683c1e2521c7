package cli

import (
	"context"
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/password"
)

const testPassword = "correct horse battery"

func TestUserCommands(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")

	created := runJSON[admin.UserResult](t, a, testPassword+"\n", "user", "create", "--data", data, "--tenant", "acme",
		"--email", "Ana@Acme.example", "--name", "Ana Lima", "--role", "company_admin", "--password-stdin")
	u := created.User
	if u == nil || u.Email != "ana@acme.example" || u.RBACLevel != model.RoleCompanyAdmin || u.Status != engine.UserActive {
		t.Fatalf("user create: %+v", u)
	}
	mustRun(t, a, "", "user", "create", "--data", data, "--tenant", "acme", "--email", "op@acme.example",
		"--name", "Op", "--role", "field_operator", "--password", testPassword)

	sus := runJSON[admin.UserResult](t, a, "", "user", "suspend", "ANA@acme.example", "--data", data)
	if sus.User.Status != engine.UserSuspended {
		t.Fatalf("suspend: %+v", sus.User)
	}
	if out := mustRun(t, a, "", "user", "activate", "ana@acme.example", "--data", data); !strings.Contains(out, "Activated user ana@acme.example") {
		t.Fatalf("activate: %s", out)
	}
	mustRun(t, a, "", "user", "unlock", "ana@acme.example", "--data", data)
	tok := runJSON[model.IssuedToken](t, a, "", "user", "reset-link", "ana@acme.example", "--data", data)
	if tok.Token == "" || tok.Kind != engine.TokenReset || tok.Email != "ana@acme.example" {
		t.Fatalf("reset-link: %+v", tok)
	}

	// Suspend and activate each bumped the token version; the reset token works once.
	_, eng := openEngine(t, data)
	err := eng.View(context.Background(), func(tx model.Tx) error {
		acc, err := tx.UserAccountByEmail("ana@acme.example")
		if err != nil {
			return err
		}
		if acc.TokenVersion != 3 || acc.Status != engine.UserActive || !password.VerifyPassword(acc.PasswordHash, testPassword) {
			t.Fatalf("account: version %d status %s", acc.TokenVersion, acc.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ResetPassword(context.Background(), model.ResetPasswordInput{Token: tok.Token, NewPassword: "another password 1"}); err != nil {
		t.Fatal(err)
	}
}

func TestUserCreateErrors(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	createTenant(t, a, data, "acme")
	base := []string{"user", "create", "--data", data, "--tenant", "acme", "--email", "x@acme.example", "--name", "X", "--role", "api_user"}
	for name, tc := range map[string]struct {
		stdin string
		args  []string
		field string
		kind  model.Kind
	}{
		"NoPassword":    {"", nil, "password", model.KindValidation},
		"Both":          {testPassword, []string{"--password-stdin", "--password", testPassword}, "password", model.KindValidation},
		"Short":         {"short\n", []string{"--password-stdin"}, "password", model.KindValidation},
		"BadRole":       {"", []string{"--password", testPassword, "--role", "boss"}, "role", model.KindValidation},
		"NoTenant":      {"", []string{"--password", testPassword, "--tenant", ""}, "tenant", model.KindValidation},
		"UnknownTenant": {"", []string{"--password", testPassword, "--tenant", "nope"}, "", model.KindNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			e := runJSONError(t, a, tc.stdin, append(append([]string{}, base...), tc.args...)...)
			if e.Error != string(tc.kind) || e.Field != tc.field {
				t.Fatalf("error: %+v", e)
			}
		})
	}
	t.Run("ErrDuplicateEmail", func(t *testing.T) {
		mustRun(t, a, "", append(base, "--password", testPassword)...)
		if e := runJSONError(t, a, "", append(base, "--password", testPassword)...); e.Error != string(model.KindConflict) {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrUnknownUser", func(t *testing.T) {
		if e := runJSONError(t, a, "", "user", "suspend", "nobody@acme.example", "--data", data); e.Error != string(model.KindNotFound) {
			t.Fatalf("error: %+v", e)
		}
	})
}
