package engine_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

var apiKeyRE = regexp.MustCompile(`^fr_live_[0-9A-Za-z]{32}$`)

func TestNewAPIKey(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 2000; i++ {
		k := engine.NewAPIKey()
		if !apiKeyRE.MatchString(k) {
			t.Fatalf("NewAPIKey = %q, want fr_live_ and 32 base62 characters", k)
		}
		if !engine.LooksLikeAPIKey(k) {
			t.Fatalf("LooksLikeAPIKey(%q) = false", k)
		}
		if seen[k] {
			t.Fatalf("NewAPIKey repeated %q", k)
		}
		seen[k] = true
		for _, c := range k[8:] {
			counts[c]++
		}
	}
	// 64,000 draws over 62 symbols: every symbol shows up, none wildly more than others.
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters, want all 62", len(counts))
	}
	for c, n := range counts {
		if n < 700 || n > 1400 { // expected ~1032
			t.Errorf("character %q drawn %d times: the draw is biased", c, n)
		}
	}
}

func TestLooksLikeAPIKey(t *testing.T) {
	good := engine.NewAPIKey()
	for k, want := range map[string]bool{
		good:                                 true,
		"fr_live_" + strings.Repeat("0", 32): true,
		"":                                   false,
		good[:39]:                            false,
		good + "0":                           false,
		"fr_test_" + good[8:]:                false,
		"FR_LIVE_" + good[8:]:                false,
		good[:39] + "_":                      false,
		good[:39] + "é":                      false,
		"fr_live_" + strings.Repeat("+", 32): false,
	} {
		if got := engine.LooksLikeAPIKey(k); got != want {
			t.Errorf("LooksLikeAPIKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestAPIKey_Active(t *testing.T) {
	k := model.APIKey{}
	if !k.Active(epoch) {
		t.Fatal("a key without expiry is inactive")
	}
	k.ExpiresAt = model.TimePtr(epoch)
	if k.Active(epoch) || !k.Active(epoch.Add(-time.Millisecond)) {
		t.Fatal("a key must be active strictly before its expiry")
	}
}

func TestEngine_CreateAPIKeyIn(t *testing.T) {
	create := func(e *engine.Engine, slug string, in model.CreateAPIKeyInput) (*model.NewKey, error) {
		var out *model.NewKey
		err := func() (err error) {
			out, err = e.AdminCreateAPIKey(context.Background(), slug, in)
			return err
		}()
		return out, err
	}
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		nk, err := create(e, "acme", model.CreateAPIKeyInput{Name: "gateway",
			Scopes: []string{"sms:inbound", "events:write", "sms:inbound"}})
		if err != nil {
			t.Fatal(err)
		}
		if !apiKeyRE.MatchString(nk.APIKey) || nk.Key.Prefix != nk.APIKey[:12] || nk.Key.Name != "gateway" ||
			nk.Key.TenantID != ct.Tenant.ID || nk.PreviousKeyExpiresAt != nil || !nk.Key.CreatedAt.Equal(epoch) {
			t.Fatalf("new key = %+v (%s)", nk.Key, nk.APIKey)
		}
		if !slices.Equal(nk.Key.Scopes, []string{"events:write", "sms:inbound"}) {
			t.Fatalf("scopes = %v, want sorted and de-duplicated", nk.Key.Scopes)
		}
		p, err := e.AuthenticateKey(context.Background(), nk.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Can(model.PermSMSInbound) || !p.Can(model.PermEventsWrite) || p.Can(model.PermEventsRead) {
			t.Fatalf("the key's principal has scopes %v", p.Scopes)
		}
		keys, _ := e.APIKeysOf(context.Background(), ct.Tenant.ID)
		if len(keys) != 2 || keys[0].ID != nk.Key.ID {
			t.Fatalf("keys = %+v, want the new key first", keys)
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		nk, err := create(e, "acme", model.CreateAPIKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		if nk.Key.Name != "api key" || !slices.Equal(nk.Key.Scopes, sorted(model.DefaultKeyScopes())) {
			t.Fatalf("key = %+v", nk.Key)
		}
	})
	t.Run("ErrEmptyScopes", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		_, err := create(e, "acme", model.CreateAPIKeyInput{Scopes: []string{}})
		AssertInvalid(t, err, "scopes")
	})
	t.Run("ErrUnknownScope", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		for _, s := range []string{"tenant:admin", "events:delete", ""} {
			_, err := create(e, "acme", model.CreateAPIKeyInput{Scopes: []string{"events:read", s}})
			AssertInvalid(t, err, "scopes")
		}
	})
	t.Run("ErrNameTooLong", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		_, err := create(e, "acme", model.CreateAPIKeyInput{Name: strings.Repeat("k", 101)})
		AssertInvalid(t, err, "name")
	})
	t.Run("ErrTenantNotFound", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := create(e, "ghost", model.CreateAPIKeyInput{})
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestEngine_RotateAPIKey(t *testing.T) {
	ctx := context.Background()
	rotate := func(e *engine.Engine, tenantID, caller string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
		var out *model.NewKey
		err := e.Update(ctx, func(tx model.Tx) (err error) {
			out, err = e.RotateTenantKey(tx, tenantID, caller, in)
			return err
		})
		return out, err
	}
	firstKeyID := func(t *testing.T, e *engine.Engine, ct *model.CreatedTenant) string {
		t.Helper()
		p, err := e.AuthenticateKey(ctx, ct.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		return p.KeyID
	}
	t.Run("DefaultGrace", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		nk, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		if want := epoch.Add(24 * time.Hour); !nk.PreviousKeyExpiresAt.Equal(want) {
			t.Fatalf("previous_key_expires_at = %v, want %v", nk.PreviousKeyExpiresAt, want)
		}
	})
	t.Run("CallersKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		var other *model.NewKey
		mustDo(t, func() (err error) {
			other, err = e.AdminCreateAPIKey(context.Background(), "acme", model.CreateAPIKeyInput{Name: "other", Scopes: []string{"events:read"}})
			return err
		})
		nk, err := rotate(e, ct.Tenant.ID, other.Key.ID, model.RotateAPIKeyInput{GracePeriodMinutes: ptr[model.Int](0)})
		if err != nil {
			t.Fatal(err)
		}
		if nk.Key.Name != "other" || !slices.Equal(nk.Key.Scopes, []string{"events:read"}) {
			t.Fatalf("rotated key = %+v, want the caller's name and scopes", nk.Key)
		}
		// Grace 0: the caller's old key stops at once; the first key is untouched.
		_, err = e.AuthenticateKey(ctx, other.APIKey)
		AssertKind(t, err, model.KindUnauthorized)
		if _, err := e.AuthenticateKey(ctx, ct.APIKey); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ExplicitKeyID", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		id := firstKeyID(t, e, ct)
		nk, err := rotate(e, ct.Tenant.ID, model.NewID(), model.RotateAPIKeyInput{KeyID: id, GracePeriodMinutes: ptr[model.Int](5)})
		if err != nil {
			t.Fatal(err)
		}
		if !nk.PreviousKeyExpiresAt.Equal(epoch.Add(5 * time.Minute)) {
			t.Fatalf("previous_key_expires_at = %v", nk.PreviousKeyExpiresAt)
		}
	})
	t.Run("NeverLengthens", func(t *testing.T) {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		id := firstKeyID(t, e, ct)
		if _, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: id, GracePeriodMinutes: ptr[model.Int](10)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		nk, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: id, GracePeriodMinutes: ptr[model.Int](1440)})
		if err != nil {
			t.Fatal(err)
		}
		if want := epoch.Add(10 * time.Minute); !nk.PreviousKeyExpiresAt.Equal(want) {
			t.Fatalf("previous_key_expires_at = %v, want still %v", nk.PreviousKeyExpiresAt, want)
		}
	})
	t.Run("OldestUnexpiringKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		mustDo(t, func() error {
			_, err := e.AdminCreateAPIKey(context.Background(), "acme", model.CreateAPIKeyInput{Name: "second"})
			return err
		})
		nk, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		if nk.Key.Name != "default" {
			t.Fatalf("rotated %q, want the oldest key (default)", nk.Key.Name)
		}
		// Next time, the oldest key without an expiry is "second".
		nk, err = rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		if nk.Key.Name != "second" {
			t.Fatalf("rotated %q, want second", nk.Key.Name)
		}
	})
	t.Run("ErrGraceOutOfRange", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		for _, g := range []model.Int{-1, engine.MaxGraceMin + 1} {
			_, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{GracePeriodMinutes: ptr[model.Int](g)})
			AssertInvalid(t, err, "grace_period_minutes")
		}
		if _, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{GracePeriodMinutes: ptr[model.Int](engine.MaxGraceMin)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrExpiredKey", func(t *testing.T) {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		id := firstKeyID(t, e, ct)
		if _, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: id, GracePeriodMinutes: ptr[model.Int](1)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		_, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: id})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		for _, id := range []string{model.NewID(), "nope"} {
			_, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: id})
			AssertKind(t, err, model.KindNotFound)
		}
	})
	t.Run("ErrOtherTenantsKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		other := MustCreateTenant(t, e, "other")
		_, err := rotate(e, other.Tenant.ID, "", model.RotateAPIKeyInput{KeyID: firstKeyID(t, e, ct)})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrNoUnexpiringKey", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		MustUpdate(t, e, func(tx model.Tx) error {
			keys, err := tx.APIKeys(ct.Tenant.ID)
			if err != nil {
				return err
			}
			for _, k := range keys {
				k.ExpiresAt = model.TimePtr(epoch.Add(time.Hour))
				if err := tx.PutAPIKey(&k); err != nil {
					return err
				}
			}
			return nil
		})
		_, err := rotate(e, ct.Tenant.ID, "", model.RotateAPIKeyInput{})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("BySlug", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		err := func() error {
			_, err := e.AdminRotateAPIKey(context.Background(), "acme", model.RotateAPIKeyInput{})
			return err
		}()
		if err != nil {
			t.Fatal(err)
		}
		err = func() error {
			_, err := e.AdminRotateAPIKey(context.Background(), "ghost", model.RotateAPIKeyInput{})
			return err
		}()
		AssertKind(t, err, model.KindNotFound)
	})
}
