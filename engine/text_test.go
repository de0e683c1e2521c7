package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestAdminCreateTenant_RefusesControlText: the fields only the command line sets (a
// tenant's name, slug, email and verticals; `fieldrelay user create`, `apikey create`, the
// upstream URL) hold the rule of model.CheckText as the API's do (server's
// TestText_ControlCharacters holds those): NUL, U+FFFF or U+202E is a validation_error
// naming the field, and nothing is stored.
func TestAdminCreateTenant_RefusesControlText(t *testing.T) {
	ctx := context.Background()
	e, _ := MustOpenEngine(t)
	if _, err := createTenant(e, validTenantInput()); err != nil {
		t.Fatal(err)
	}
	tenant := func(set func(*model.CreateTenantInput, string)) func(string) error {
		return func(v string) error {
			in := validTenantInput()
			in.Slug = "other"
			set(&in, v)
			_, err := e.AdminCreateTenant(ctx, in)
			return err
		}
	}
	for _, row := range []struct {
		name, field string
		try         func(v string) error
	}{
		{"tenant create name", "name", tenant(func(in *model.CreateTenantInput, v string) { in.Name = v })},
		{"tenant create slug", "slug", tenant(func(in *model.CreateTenantInput, v string) { in.Slug = v })},
		{"tenant create email", "email", tenant(func(in *model.CreateTenantInput, v string) { in.Email = v + "@acme.example" })},
		{"tenant create verticals", "verticals", tenant(func(in *model.CreateTenantInput, v string) { in.Verticals = []string{v} })},
		{"user create name", "name", func(v string) error {
			_, err := e.AdminCreateUser(ctx, "acme", model.CreateUserInput{Email: "u@acme.example", Name: v, Role: model.RoleAPIUser})
			return err
		}},
		{"user create email", "email", func(v string) error {
			_, err := e.AdminCreateUser(ctx, "acme", model.CreateUserInput{Email: v + "@acme.example", Name: "U", Role: model.RoleAPIUser})
			return err
		}},
		{"apikey create name", "name", func(v string) error {
			_, err := e.AdminCreateAPIKey(ctx, "acme", model.CreateAPIKeyInput{Name: v})
			return err
		}},
		{"upstream url", "url", func(v string) error {
			_, err := engine.CheckUpstreamURL("https://central.example.org/" + v)
			return err
		}},
	} {
		for _, r := range []rune{0x0000, 0xffff, 0x202e} {
			t.Run(fmt.Sprintf("%s/%U", row.name, r), func(t *testing.T) {
				AssertInvalid(t, row.try("refused"+string(r)+"x"), row.field)
			})
		}
	}
	tenants, err := e.AdminTenants(ctx)
	if err != nil || len(tenants) != 1 {
		t.Fatalf("tenants %v, %v: want acme alone", tenants, err)
	}
	users, _, err := e.Users(ctx, tenantAdmin(tenants[0].ID), model.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	keys, _, err := e.ListAPIKeys(ctx, tenantAdmin(tenants[0].ID), model.Page{Limit: 500})
	if err != nil || len(users) != 0 || len(keys) != 1 {
		t.Fatalf("%d users, %d keys (%v): want none and the first key", len(users), len(keys), err)
	}
	// "refused", not a word a UUID or a key's prefix could hold by chance (they did hold "bad").
	if strings.Contains(fmt.Sprint(tenants, users, keys), "refused") {
		t.Fatalf("a refused value was stored: %v %v %v", tenants, users, keys)
	}
}
