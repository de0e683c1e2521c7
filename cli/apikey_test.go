package cli

import (
	"github.com/fieldrelay/fieldrelay/engine/admin"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestAPIKeyCommands(t *testing.T) {
	a := newTestApp(nil)
	data := t.TempDir()
	first := createTenant(t, a, data, "acme")

	sms := runJSON[model.NewKey](t, a, "", "apikey", "create", "--data", data, "--tenant", "acme",
		"--name", "sms gateway", "--scopes", "sms:inbound")
	if !engine.LooksLikeAPIKey(sms.APIKey) || sms.Key.Name != "sms gateway" || strings.Join(sms.Key.Scopes, ",") != "sms:inbound" ||
		sms.Key.Prefix != sms.APIKey[:engine.APIKeyShownPrefix] {
		t.Fatalf("apikey create: %+v", sms)
	}
	def := runJSON[model.NewKey](t, a, "", "apikey", "create", "--data", data, "--tenant", "acme")
	if strings.Join(def.Key.Scopes, ",") != strings.Join(slices.Sorted(slices.Values(model.DefaultKeyScopes())), ",") {
		t.Fatalf("default scopes: %v", def.Key.Scopes)
	}

	list := runJSON[admin.APIKeyListResult](t, a, "", "apikey", "list", "--data", data, "--tenant", "acme")
	if list.Count != 3 || len(list.Data) != 3 {
		t.Fatalf("list: %+v", list)
	}
	out := mustRun(t, a, "", "apikey", "list", "--data", data, "--tenant", "acme")
	if strings.Contains(out, first.APIKey) || strings.Contains(out, sms.APIKey) || !strings.Contains(out, sms.Key.Prefix) {
		t.Fatalf("the list must show prefixes only: %s", out)
	}

	before := time.Now()
	rot := runJSON[model.NewKey](t, a, "", "apikey", "rotate", "--data", data, "--tenant", "acme", "--grace", "1h")
	if !engine.LooksLikeAPIKey(rot.APIKey) || rot.Key.Name != "default" || rot.PreviousKeyExpiresAt == nil {
		t.Fatalf("rotate: %+v", rot)
	}
	if d := rot.PreviousKeyExpiresAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("previous key expires in %v, want 1h", d)
	}
	// The rotated key stays listed during its grace period.
	if list = runJSON[admin.APIKeyListResult](t, a, "", "apikey", "list", "--data", data, "--tenant", "acme"); list.Count != 4 {
		t.Fatalf("list after rotate: %+v", list)
	}
	rot2 := runJSON[model.NewKey](t, a, "", "apikey", "rotate", "--data", data, "--tenant", "acme",
		"--key", sms.Key.ID, "--grace", "0s")
	if strings.Join(rot2.Key.Scopes, ",") != "sms:inbound" {
		t.Fatalf("rotate --key: %+v", rot2.Key)
	}
	if list = runJSON[admin.APIKeyListResult](t, a, "", "apikey", "list", "--data", data, "--tenant", "acme"); list.Count != 4 {
		t.Fatalf("a key rotated with no grace is gone at once: %+v", list)
	}

	t.Run("GraceRoundedUp", func(t *testing.T) {
		// Whole minutes, never fewer than asked: 59s is a minute of grace, not none.
		before := time.Now()
		rot := runJSON[model.NewKey](t, a, "", "apikey", "rotate", "--data", data, "--tenant", "acme",
			"--key", rot.Key.ID, "--grace", "59s")
		if rot.PreviousKeyExpiresAt == nil || rot.PreviousKeyExpiresAt.Sub(before) < 59*time.Second {
			t.Fatalf("--grace 59s: the previous key expires at %v (rotated at %v)", rot.PreviousKeyExpiresAt, before)
		}
	})
	t.Run("ErrGrace", func(t *testing.T) {
		e := runJSONError(t, a, "", "apikey", "rotate", "--data", data, "--tenant", "acme", "--grace", "200h")
		if e.Error != string(model.KindValidation) || e.Field != "grace" {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrScope", func(t *testing.T) {
		e := runJSONError(t, a, "", "apikey", "create", "--data", data, "--tenant", "acme", "--scopes", "root")
		if e.Error != string(model.KindValidation) || e.Field != "scopes" {
			t.Fatalf("error: %+v", e)
		}
	})
	t.Run("ErrTenantRequired", func(t *testing.T) {
		if e := runJSONError(t, a, "", "apikey", "list", "--data", data); e.Field != "tenant" {
			t.Fatalf("error: %+v", e)
		}
	})
}
