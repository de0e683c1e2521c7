package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// login tries a password for an email.
func login(e *engine.Engine, email, password string) (*model.UserAccount, error) {
	return e.Login(context.Background(), model.LoginInput{Email: email, Password: password})
}

// failLogins makes n wrong-password attempts, each of which must answer invalid_credentials.
func failLogins(tb testing.TB, e *engine.Engine, email string, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		_, err := login(e, email, "wrong password!")
		AssertKind(tb, err, model.KindInvalidCredentials)
	}
}

func TestEngine_Login(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "alice@acme.example", model.RoleFieldOperator)
		acct, err := login(e, "  Alice@ACME.example ", testPassword)
		if err != nil {
			t.Fatal(err)
		}
		if acct.ID != u.ID || acct.TenantID != u.TenantID || acct.TokenVersion != 1 {
			t.Fatalf("Login = %+v, want user %s with token version 1", acct, u.ID)
		}
	})
	t.Run("ErrEmailRequired", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := login(e, "  ", testPassword)
		AssertInvalid(t, err, "email")
	})
	t.Run("ErrPasswordRequired", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := login(e, "alice@acme.example", "")
		AssertInvalid(t, err, "password")
	})
	t.Run("ErrInvalidCredentials", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		MustCreateUser(t, e, "acme", "alice@acme.example", model.RoleFieldOperator)
		_, err := login(e, "alice@acme.example", "wrong password!")
		AssertKind(t, err, model.KindInvalidCredentials)
		// An unknown email gets the very same answer.
		_, err2 := login(e, "nobody@acme.example", "wrong password!")
		AssertKind(t, err2, model.KindInvalidCredentials)
		if err.Error() != err2.Error() {
			t.Fatalf("unknown email answers %q, wrong password %q: they must not differ", err2, err)
		}
	})
	t.Run("ErrTooLong", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		_, err := login(e, strings.Repeat("a", 250)+"@x.example", testPassword)
		AssertKind(t, err, model.KindInvalidCredentials)
		_, err = login(e, "alice@acme.example", strings.Repeat("p", model.MaxPasswordLen+1))
		AssertKind(t, err, model.KindInvalidCredentials)
	})
	t.Run("ErrAccountSuspended", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		MustCreateUser(t, e, "acme", "alice@acme.example", model.RoleFieldOperator)
		mustDo(t, func() error {
			_, err := e.AdminSetUserStatus(context.Background(), "alice@acme.example", engine.UserSuspended)
			return err
		})
		_, err := login(e, "alice@acme.example", testPassword)
		AssertKind(t, err, model.KindAccountSuspended)
		// A wrong password says nothing of the account's state.
		_, err = login(e, "alice@acme.example", "wrong password!")
		AssertKind(t, err, model.KindInvalidCredentials)
	})
	t.Run("ErrPendingUser", func(t *testing.T) {
		// A user without a password cannot log in with any password.
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		mustDo(t, func() error {
			_, err := e.CreateUser(context.Background(), adminOf(ct.Tenant, ""), model.CreateUserInput{
				Email: "pending@acme.example", Name: "Pending", Role: model.RoleAPIUser}, nil)
			return err
		})
		_, err := login(e, "pending@acme.example", testPassword)
		AssertKind(t, err, model.KindInvalidCredentials)
	})
}

func TestEngine_Login_Lockout(t *testing.T) {
	const email = "alice@acme.example"
	setup := func(t *testing.T) (*engine.Engine, *model.FakeClock) {
		e, clock := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		MustCreateUser(t, e, "acme", email, model.RoleFieldOperator)
		return e, clock
	}
	t.Run("SuccessResetsCount", func(t *testing.T) {
		e, _ := setup(t)
		failLogins(t, e, email, 4)
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login after 4 failures: %v", err)
		}
		// The count restarted: 4 more failures still do not lock.
		failLogins(t, e, email, 4)
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login after 4 more failures: %v", err)
		}
	})
	t.Run("ErrAccountLocked", func(t *testing.T) {
		e, clock := setup(t)
		failLogins(t, e, email, 4)
		_, err := login(e, email, "wrong password!")
		AssertKind(t, err, model.KindInvalidCredentials) // the fifth failure still says so

		_, err = login(e, email, testPassword) // the sixth attempt, right password
		locked := AssertKind(t, err, model.KindAccountLocked)
		if locked.RetryAfter < 15*time.Minute-time.Second || locked.RetryAfter > 15*time.Minute {
			t.Fatalf("RetryAfter = %v, want about 15m", locked.RetryAfter)
		}
		// Case and spaces do not dodge the lock.
		_, err = login(e, " ALICE@acme.example", testPassword)
		AssertKind(t, err, model.KindAccountLocked)

		clock.Advance(15*time.Minute - time.Second)
		_, err = login(e, email, testPassword)
		if locked := AssertKind(t, err, model.KindAccountLocked); locked.RetryAfter != time.Second {
			t.Fatalf("RetryAfter one second before the end = %v", locked.RetryAfter)
		}

		clock.Advance(time.Second) // lock + 15m
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login at the end of the lock: %v", err)
		}
		// The success cleared the guard: 4 failures do not lock again.
		failLogins(t, e, email, 4)
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login after the lock and 4 failures: %v", err)
		}
	})
	t.Run("AttemptsDuringLockDoNotExtendIt", func(t *testing.T) {
		e, clock := setup(t)
		failLogins(t, e, email, 5)
		for i := 0; i < 10; i++ {
			clock.Advance(time.Minute)
			_, err := login(e, email, "wrong password!")
			AssertKind(t, err, model.KindAccountLocked)
		}
		clock.Advance(5 * time.Minute)
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login at lock + 15m: %v", err)
		}
	})
	t.Run("ExpiredLockStartsFreshCount", func(t *testing.T) {
		e, clock := setup(t)
		failLogins(t, e, email, 5)
		clock.Advance(15 * time.Minute)
		// After the lock, it takes five new failures to lock again.
		failLogins(t, e, email, 4)
		failLogins(t, e, email, 1)
		_, err := login(e, email, testPassword)
		AssertKind(t, err, model.KindAccountLocked)
	})
	t.Run("UnknownEmailLocksToo", func(t *testing.T) {
		e, _ := setup(t)
		const ghost = "ghost@acme.example"
		failLogins(t, e, ghost, 5)
		_, err := login(e, ghost, testPassword)
		locked := AssertKind(t, err, model.KindAccountLocked)
		if locked.RetryAfter < 15*time.Minute-time.Second {
			t.Fatalf("RetryAfter = %v, want about 15m", locked.RetryAfter)
		}
		// Another email is not affected.
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ConcurrentAttempts", func(t *testing.T) {
		// Parallel guesses get no more tries than sequential ones: whatever the
		// interleaving, exactly five failures are judged, the rest find the lock.
		e, _ := setup(t)
		const n = 30
		kinds := make([]model.Kind, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				_, err := login(e, email, fmt.Sprintf("wrong password %d", i))
				kinds[i] = model.ErrorKind(err)
			}(i)
		}
		close(start)
		wg.Wait()
		count := map[model.Kind]int{}
		for _, k := range kinds {
			count[k]++
		}
		if count[model.KindInvalidCredentials] != engine.MaxLoginFailures || count[model.KindAccountLocked] != n-engine.MaxLoginFailures {
			t.Fatalf("answers = %v, want %d invalid_credentials and the rest account_locked", count, engine.MaxLoginFailures)
		}
		_, err := login(e, email, testPassword)
		AssertKind(t, err, model.KindAccountLocked)
	})
	t.Run("LockedWhileHashingRightPassword", func(t *testing.T) {
		// Another attempt locks the email while this one checks the right password: the
		// lock wins, or parallel guesses would get past it.
		e, s := openLockingEngine(t, email)
		s.armed.Store(true)
		_, err := login(e, email, testPassword)
		locked := AssertKind(t, err, model.KindAccountLocked)
		if locked.RetryAfter != 15*time.Minute {
			t.Fatalf("RetryAfter = %v, want 15m", locked.RetryAfter)
		}
	})
	t.Run("LockedWhileHashingWrongPassword", func(t *testing.T) {
		e, s := openLockingEngine(t, email)
		s.armed.Store(true)
		_, err := login(e, email, "wrong password!")
		AssertKind(t, err, model.KindAccountLocked)
		// The refused attempt neither counted nor moved the lock.
		var g model.LoginGuard
		_ = e.View(context.Background(), func(tx model.Tx) (err error) {
			g, err = tx.LoginGuard(email)
			return err
		})
		if g.Failures != 0 || g.LockedUntil == nil || !g.LockedUntil.Equal(epoch.Add(15*time.Minute)) {
			t.Fatalf("guard = %+v, want the concurrent lock untouched", g)
		}
	})
	t.Run("UnlockUserClears", func(t *testing.T) {
		e, _ := setup(t)
		failLogins(t, e, email, 5)
		_, err := login(e, email, testPassword)
		AssertKind(t, err, model.KindAccountLocked)
		mustDo(t, func() error {
			u, err := e.AdminUnlockUser(context.Background(), " Alice@Acme.example ")
			if err == nil && u.Email != email {
				t.Errorf("UnlockUser returned %s", u.Email)
			}
			return err
		})
		if _, err := login(e, email, testPassword); err != nil {
			t.Fatalf("login after unlock: %v", err)
		}
	})
	t.Run("ErrUnlockUnknownUser", func(t *testing.T) {
		e, _ := setup(t)
		err := func() error {
			_, err := e.AdminUnlockUser(context.Background(), "ghost@acme.example")
			return err
		}()
		AssertKind(t, err, model.KindNotFound)
	})
}

// lockingStore locks an email for 15 minutes right after the first read transaction
// once armed: a concurrent attempt that locked the email while a login was hashing.
type lockingStore struct {
	model.Store
	email string
	armed atomic.Bool
}

func (s *lockingStore) View(ctx context.Context, fn func(model.Tx) error) error {
	err := s.Store.View(ctx, fn)
	if s.armed.CompareAndSwap(true, false) {
		if lerr := s.Store.Update(ctx, func(tx model.Tx) error {
			return tx.PutLoginGuard(s.email, model.LoginGuard{LockedUntil: model.TimePtr(epoch.Add(15 * time.Minute))})
		}); lerr != nil {
			return lerr
		}
	}
	return err
}

// openLockingEngine returns an engine over a lockingStore, with a user of the email.
func openLockingEngine(tb testing.TB, email string) (*engine.Engine, *lockingStore) {
	tb.Helper()
	s := &lockingStore{Store: MustOpenDB(tb), email: email}
	e := engine.New(s, engine.Options{Clock: model.NewFakeClock(epoch), Password: cheapPasswords,
		Logger: slog.New(slog.DiscardHandler)})
	MustCreateTenant(tb, e, "acme")
	MustCreateUser(tb, e, "acme", email, model.RoleFieldOperator)
	return e, s
}

func TestEngine_AuthenticateUser(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*engine.Engine, *model.CreatedTenant, *model.User) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "alice@acme.example", model.RoleOperationalSupervisor)
		return e, ct, u
	}
	setStatus := func(t *testing.T, e *engine.Engine, status string) {
		t.Helper()
		mustDo(t, func() error {
			_, err := e.AdminSetUserStatus(context.Background(), "alice@acme.example", status)
			return err
		})
	}
	t.Run("OK", func(t *testing.T) {
		e, ct, u := setup(t)
		p, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := model.Principal{TenantID: ct.Tenant.ID, Plan: engine.PlanStarter, TenantActive: true,
			UserID: u.ID, Role: model.RoleOperationalSupervisor}
		if p.TenantID != want.TenantID || p.Plan != want.Plan || !p.TenantActive || p.UserID != want.UserID ||
			p.Role != want.Role || p.IsKey() {
			t.Fatalf("principal = %+v, want %+v", p, want)
		}
	})
	t.Run("ErrStaleVersion", func(t *testing.T) {
		e, ct, u := setup(t)
		for _, ver := range []int64{0, 2, -1} {
			_, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, ver)
			AssertKind(t, err, model.KindUnauthorized)
		}
	})
	t.Run("SuspendAndActivate", func(t *testing.T) {
		e, ct, u := setup(t)
		setStatus(t, e, engine.UserSuspended)
		for _, ver := range []int64{1, 2} { // old token, and the new version of a suspended user
			_, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, ver)
			AssertKind(t, err, model.KindUnauthorized)
		}
		setStatus(t, e, engine.UserActive)
		acct := MustUserAccount(t, e, ct.Tenant.ID, u.ID)
		if acct.TokenVersion != 3 {
			t.Fatalf("token version after suspend and activate = %d, want 3", acct.TokenVersion)
		}
		for _, ver := range []int64{1, 2} {
			_, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, ver)
			AssertKind(t, err, model.KindUnauthorized)
		}
		if _, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, 3); err != nil {
			t.Fatalf("the new version is refused: %v", err)
		}
	})
	t.Run("ErrUnknownUser", func(t *testing.T) {
		e, ct, _ := setup(t)
		_, err := e.AuthenticateUser(ctx, ct.Tenant.ID, model.NewID(), 1)
		AssertKind(t, err, model.KindUnauthorized)
		_, err = e.AuthenticateUser(ctx, ct.Tenant.ID, "not-an-id", 1)
		AssertKind(t, err, model.KindUnauthorized)
	})
	t.Run("ErrOtherTenant", func(t *testing.T) {
		// A token's tid must be the user's tenant.
		e, _, u := setup(t)
		other := MustCreateTenant(t, e, "other")
		_, err := e.AuthenticateUser(ctx, other.Tenant.ID, u.ID, 1)
		AssertKind(t, err, model.KindUnauthorized)
		_, err = e.AuthenticateUser(ctx, model.NewID(), u.ID, 1)
		AssertKind(t, err, model.KindUnauthorized)
	})
	t.Run("SuspendedTenant", func(t *testing.T) {
		e, ct, u := setup(t)
		mustDo(t, func() error {
			_, err := e.AdminSetTenantStatus(context.Background(), "acme", engine.TenantSuspended)
			return err
		})
		p, err := e.AuthenticateUser(ctx, ct.Tenant.ID, u.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.TenantActive {
			t.Fatal("TenantActive = true for a suspended tenant")
		}
	})
}

func TestEngine_AuthenticateKey(t *testing.T) {
	ctx := context.Background()
	lastUsed := func(t *testing.T, e *engine.Engine, tenantID, keyID string) *model.Time {
		t.Helper()
		keys, err := e.APIKeysOf(ctx, tenantID)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.ID == keyID {
				return k.LastUsedAt
			}
		}
		t.Fatalf("key %s is not listed", keyID)
		return nil
	}
	t.Run("OK", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		p, err := e.AuthenticateKey(ctx, ct.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if p.TenantID != ct.Tenant.ID || !p.IsKey() || p.UserID != "" || p.Plan != engine.PlanStarter ||
			!p.TenantActive || p.Role != "" {
			t.Fatalf("principal = %+v", p)
		}
		if got, want := sorted(p.Scopes), sorted(model.DefaultKeyScopes()); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("scopes = %v, want %v", got, want)
		}
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		for _, k := range []string{"", "fr_live_", ct.APIKey + "x", ct.APIKey[:len(ct.APIKey)-1],
			"fr_test_" + ct.APIKey[8:], ct.APIKey[:39] + "-", strings.ToUpper(ct.APIKey)} {
			_, err := e.AuthenticateKey(ctx, k)
			AssertKind(t, err, model.KindUnauthorized)
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		MustCreateTenant(t, e, "acme")
		_, err := e.AuthenticateKey(ctx, engine.NewAPIKey())
		AssertKind(t, err, model.KindUnauthorized)
	})
	t.Run("LastUsedAt", func(t *testing.T) {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		p, err := e.AuthenticateKey(ctx, ct.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(t, e, ct.Tenant.ID, p.KeyID); got == nil || !got.Equal(epoch) {
			t.Fatalf("last_used_at = %v, want %v", got, epoch)
		}
		// Within a minute the record is not rewritten.
		clock.Advance(30 * time.Second)
		if _, err := e.AuthenticateKey(ctx, ct.APIKey); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(t, e, ct.Tenant.ID, p.KeyID); got == nil || !got.Equal(epoch) {
			t.Fatalf("last_used_at after 30s = %v, want still %v", got, epoch)
		}
		clock.Advance(30 * time.Second)
		if _, err := e.AuthenticateKey(ctx, ct.APIKey); err != nil {
			t.Fatal(err)
		}
		if got, want := lastUsed(t, e, ct.Tenant.ID, p.KeyID), epoch.Add(time.Minute); got == nil || !got.Equal(want) {
			t.Fatalf("last_used_at after 60s = %v, want %v", got, want)
		}
	})
	t.Run("RotationGrace", func(t *testing.T) {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		var nk *model.NewKey
		MustUpdate(t, e, func(tx model.Tx) (err error) {
			nk, err = e.RotateTenantKey(tx, ct.Tenant.ID, "", model.RotateAPIKeyInput{GracePeriodMinutes: ptr[model.Int](10)})
			return err
		})
		if want := epoch.Add(10 * time.Minute); nk.PreviousKeyExpiresAt == nil || !nk.PreviousKeyExpiresAt.Equal(want) {
			t.Fatalf("previous_key_expires_at = %v, want %v", nk.PreviousKeyExpiresAt, want)
		}
		if !engine.LooksLikeAPIKey(nk.APIKey) || nk.APIKey == ct.APIKey {
			t.Fatalf("rotated key = %q", nk.APIKey)
		}
		if nk.Key.Prefix != nk.APIKey[:12] || nk.Key.ExpiresAt != nil || nk.Key.Name != "default" {
			t.Fatalf("rotated key record = %+v", nk.Key)
		}
		if strings.Join(sorted(nk.Key.Scopes), " ") != strings.Join(sorted(model.DefaultKeyScopes()), " ") {
			t.Fatalf("rotated key scopes = %v, want the old key's", nk.Key.Scopes)
		}

		clock.Advance(9*time.Minute + 59*time.Second)
		for _, k := range []string{ct.APIKey, nk.APIKey} {
			if _, err := e.AuthenticateKey(ctx, k); err != nil {
				t.Fatalf("at +9m59s key %s…: %v", k[:12], err)
			}
		}
		if keys, _ := e.APIKeysOf(ctx, ct.Tenant.ID); len(keys) != 2 {
			t.Fatalf("at +9m59s %d keys are listed, want 2", len(keys))
		}

		clock.Advance(time.Second)
		_, err := e.AuthenticateKey(ctx, ct.APIKey)
		AssertKind(t, err, model.KindUnauthorized)
		p, err := e.AuthenticateKey(ctx, nk.APIKey)
		if err != nil {
			t.Fatalf("at +10m the new key: %v", err)
		}
		if p.KeyID != nk.Key.ID {
			t.Fatalf("key id = %s, want %s", p.KeyID, nk.Key.ID)
		}
		keys, _ := e.APIKeysOf(ctx, ct.Tenant.ID)
		if len(keys) != 1 || keys[0].ID != nk.Key.ID {
			t.Fatalf("at +10m keys listed = %+v, want only the new one", keys)
		}
	})
	t.Run("SuspendedTenant", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		mustDo(t, func() error {
			_, err := e.AdminSetTenantStatus(context.Background(), "acme", engine.TenantSuspended)
			return err
		})
		p, err := e.AuthenticateKey(ctx, ct.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if p.TenantActive {
			t.Fatal("TenantActive = true for a suspended tenant")
		}
	})
}

func TestEngine_ChangePassword(t *testing.T) {
	setup := func(t *testing.T) (*engine.Engine, model.Principal) {
		e, _ := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "alice@acme.example", model.RoleFieldOperator)
		return e, model.Principal{TenantID: ct.Tenant.ID, UserID: u.ID, Role: u.RBACLevel}
	}
	change := func(e *engine.Engine, p model.Principal, cur, next string) error {
		return func() error {
			_, err := e.ChangePassword(context.Background(), p, model.ChangePasswordInput{CurrentPassword: cur, NewPassword: next}, nil)
			return err
		}()
	}
	t.Run("OK", func(t *testing.T) {
		e, p := setup(t)
		if err := change(e, p, testPassword, "a brand new password"); err != nil {
			t.Fatal(err)
		}
		if _, err := login(e, "alice@acme.example", "a brand new password"); err != nil {
			t.Fatalf("login with the new password: %v", err)
		}
		_, err := login(e, "alice@acme.example", testPassword)
		AssertKind(t, err, model.KindInvalidCredentials)
		// Every session ends, the caller's included.
		_, err = e.AuthenticateUser(context.Background(), p.TenantID, p.UserID, 1)
		AssertKind(t, err, model.KindUnauthorized)
		if _, err := e.AuthenticateUser(context.Background(), p.TenantID, p.UserID, 2); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrKey", func(t *testing.T) {
		e, p := setup(t)
		err := change(e, model.Principal{TenantID: p.TenantID, KeyID: model.NewID()}, testPassword, "a brand new password")
		AssertKind(t, err, model.KindForbidden)
	})
	t.Run("ErrCurrentRequired", func(t *testing.T) {
		e, p := setup(t)
		AssertInvalid(t, change(e, p, "", "a brand new password"), "current_password")
	})
	t.Run("ErrNewTooShort", func(t *testing.T) {
		e, p := setup(t)
		AssertInvalid(t, change(e, p, testPassword, "short"), "new_password")
	})
	t.Run("ErrWrongCurrent", func(t *testing.T) {
		e, p := setup(t)
		AssertKind(t, change(e, p, "wrong password!", "a brand new password"), model.KindInvalidCredentials)
	})
	t.Run("ErrSamePassword", func(t *testing.T) {
		e, p := setup(t)
		AssertInvalid(t, change(e, p, testPassword, testPassword), "new_password")
	})
}

// TestLogMailer: the mailer of a node without SMTP logs that a token was issued and how to
// get one, never the token, unless ShowTokens (serve --log-reset-links).
func TestLogMailer(t *testing.T) {
	tok := &model.IssuedToken{Email: "ann@acme.example", Kind: engine.TokenReset, Token: model.RandomToken(32),
		ExpiresAt: model.At(epoch.Add(time.Hour))}
	for _, show := range []bool{false, true} {
		var buf strings.Builder
		m := engine.LogMailer{Log: slog.New(slog.NewJSONHandler(&buf, nil)), ShowTokens: show}
		if err := m.SendToken(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, `"email":"ann@acme.example"`) || !strings.Contains(out, `"kind":"reset"`) {
			t.Fatalf("show %v: %s", show, out)
		}
		if strings.Contains(out, tok.Token) != show {
			t.Fatalf("show %v: token in the log %v: %s", show, !show, out)
		}
		if !show && !strings.Contains(out, "fieldrelay user reset-link ann@acme.example") {
			t.Fatalf("the log does not name the command that gives a token: %s", out)
		}
	}
}
