package auth

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/password"
)

// Login lock rules.
const (
	MaxLoginFailures = 5
	LoginLockFor     = 15 * time.Minute
	// TokenLifetime is how long a login's token is valid.
	TokenLifetime = 8 * time.Hour
	// keyTouchEvery is how stale last_used_at may get before a request writes it.
	keyTouchEvery = time.Minute
)

// Login checks an email and password. Five consecutive failures lock the email for 15
// minutes: the fifth still answers invalid_credentials, every attempt during the lock
// account_locked. An unknown email costs the same hashing time as a known one.
func (e *Service) Login(ctx context.Context, in model.LoginInput) (*model.UserAccount, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return nil, model.Invalid("email", "email is required")
	}
	if in.Password == "" {
		return nil, model.Invalid("password", "password is required")
	}
	if len(email) > 254 || len(in.Password) > model.MaxPasswordLen {
		return nil, model.Errorf(model.KindInvalidCredentials, "invalid email or password")
	}
	var guard model.LoginGuard
	var acct *model.UserAccount
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		if guard, err = tx.LoginGuard(email); err != nil {
			return err
		}
		acct, err = tx.UserAccountByEmail(email)
		if model.IsKind(err, model.KindNotFound) {
			acct, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if d := e.lockedFor(email, guard); d > 0 {
		return nil, lockedError(d)
	}
	hash := e.dummyHash
	if acct != nil && acct.PasswordHash != "" {
		hash = acct.PasswordHash
	}
	ok := password.VerifyPassword(hash, in.Password) && acct != nil && acct.PasswordHash != ""
	// The outcome is judged against the guard as it is after hashing: a concurrent attempt
	// may have locked the email meanwhile, and parallel guesses get no more tries than
	// sequential ones.
	if !ok {
		d, err := e.recordLoginFailure(ctx, email)
		if err != nil {
			return nil, err
		}
		if d > 0 {
			return nil, lockedError(d)
		}
		return nil, model.Errorf(model.KindInvalidCredentials, "invalid email or password")
	}
	if d, err := e.clearLoginGuard(ctx, email); err != nil {
		return nil, err
	} else if d > 0 {
		return nil, lockedError(d)
	}
	if acct.Status != UserActive {
		return nil, model.Errorf(model.KindAccountSuspended, "this account is %s", acct.Status)
	}
	return acct, nil
}

// loginDeadline is the key of an email's lock-out among the engine's deadlines.
func loginDeadline(email string) string { return "login/" + email }

// lockedFor returns how long the guard g of email still locks (0 when it does not): on
// the monotonic clock when this run set the lock, on its stored time otherwise
// (deadlines.go).
func (e *Service) lockedFor(email string, g model.LoginGuard) time.Duration {
	if g.LockedUntil == nil {
		return 0
	}
	return e.timeLeft(loginDeadline(email), g.LockedUntil.Time)
}

func lockedError(d time.Duration) *model.Error {
	return &model.Error{Kind: model.KindAccountLocked, RetryAfter: d,
		Msg: "too many failed logins: the account is locked for a while, or until its password is reset"}
}

// recordLoginFailure counts a failed login of email. When a concurrent attempt locked the
// email meanwhile, it counts nothing and returns how long the lock still lasts.
func (e *Service) recordLoginFailure(ctx context.Context, email string) (locked time.Duration, err error) {
	err = e.store.Update(ctx, func(tx model.Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		if locked = e.lockedFor(email, g); locked > 0 {
			return nil
		}
		if g.LockedUntil != nil {
			g = model.LoginGuard{} // an expired lock starts a fresh count
		}
		g.Failures++
		if g.Failures >= MaxLoginFailures {
			until := model.At(now.Add(LoginLockFor))
			g = model.LoginGuard{LockedUntil: &until}
			// The lock lasts LoginLockFor of elapsed time while the node runs, however its
			// wall clock steps; locked_until is what a restart reads.
			at := e.clock.Mono() + until.Sub(now)
			tx.OnCommit(func() { e.setDeadline(loginDeadline(email), until.Time, at) })
		}
		return tx.PutLoginGuard(email, g)
	})
	return locked, err
}

// clearLoginGuard resets the failure count of email after a successful login. When a
// concurrent attempt locked the email meanwhile, it clears nothing and returns how long
// the lock still lasts.
func (e *Service) clearLoginGuard(ctx context.Context, email string) (locked time.Duration, err error) {
	var g model.LoginGuard
	err = e.store.View(ctx, func(tx model.Tx) (err error) {
		g, err = tx.LoginGuard(email)
		return err
	})
	if err != nil || g.IsZero() {
		return 0, err // the common case: nothing to clear, no write
	}
	err = e.store.Update(ctx, func(tx model.Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil {
			return err
		}
		if locked = e.lockedFor(email, g); locked > 0 {
			return nil
		}
		return tx.PutLoginGuard(email, model.LoginGuard{})
	})
	return locked, err
}

// AdminUnlockUser clears the login lock of an email (`fieldrelay user unlock`).
func (e *Service) AdminUnlockUser(ctx context.Context, email string) (*model.User, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.User, error) { return e.unlockUser(tx, email) })
}

// unlockUser is AdminUnlockUser within tx.
func (e *Service) unlockUser(tx model.Tx, email string) (*model.User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	u, err := tx.UserAccountByEmail(email)
	if err != nil {
		return nil, err
	}
	return &u.User, tx.PutLoginGuard(email, model.LoginGuard{})
}

// AuthenticateUser resolves the principal of a valid token's claims: the user must exist in
// the tenant, be active, and carry the token version of the claim.
func (e *Service) AuthenticateUser(ctx context.Context, tenantID, userID string, ver int64) (model.Principal, error) {
	stale := model.Errorf(model.KindUnauthorized, "the token is no longer valid; log in again")
	k := tenantID + "/" + userID
	v := e.store.Version(tenantID)
	ua, ok := e.users.Get(k, v)
	if !ok {
		err := e.store.View(ctx, func(tx model.Tx) error {
			u, err := tx.UserAccount(tenantID, userID)
			if model.IsKind(err, model.KindNotFound) {
				return stale
			}
			if err != nil {
				return err
			}
			t, err := tx.Tenant(tenantID)
			if err != nil {
				return err
			}
			ua = userAuth{version: u.TokenVersion, active: u.Status == UserActive,
				p: model.Principal{TenantID: t.ID, Plan: t.LicenseType, TenantActive: t.Status == model.TenantActive,
					UserID: u.ID, Role: u.RBACLevel}}
			return nil
		})
		if err != nil {
			return model.Principal{}, err
		}
		e.users.Put(k, v, ua)
	}
	if ua.version != ver || !ua.active {
		return model.Principal{}, stale
	}
	return ua.p, nil
}

// userAuth is what a token's check needs of its user, cached.
type userAuth struct {
	version int64
	active  bool
	p       model.Principal
}

// keyAuth is what a key's check needs of its record, cached.
type keyAuth struct {
	key *model.APIKeyRecord
	p   model.Principal
}

// AuthenticateKey resolves the principal of an API key. It notes the key's last use at
// most once a minute.
func (e *Service) AuthenticateKey(ctx context.Context, key string) (model.Principal, error) {
	bad := model.Errorf(model.KindUnauthorized, "invalid API key")
	if !LooksLikeAPIKey(key) {
		return model.Principal{}, bad
	}
	hash := model.HashToken(key)
	now := e.clock.Now()
	v := e.store.Version("")
	ka, ok := e.keys.Get(hash, v)
	if !ok {
		err := e.store.View(ctx, func(tx model.Tx) error {
			k, err := tx.APIKeyByHash(hash)
			if model.IsKind(err, model.KindNotFound) {
				return bad
			}
			if err != nil {
				return err
			}
			if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 {
				return bad
			}
			t, err := tx.Tenant(k.TenantID)
			if err != nil {
				return err
			}
			ka = keyAuth{key: k, p: model.Principal{TenantID: t.ID, Plan: t.LicenseType,
				TenantActive: t.Status == model.TenantActive, KeyID: k.ID, Scopes: k.Scopes}}
			return nil
		})
		if err != nil {
			return model.Principal{}, err
		}
		e.keys.Put(hash, v, ka)
	}
	if !e.keyActive(&ka.key.APIKey) {
		return model.Principal{}, bad
	}
	last := ka.key.LastUsedAt
	if t, ok := e.touched.Load(hash); ok && (last == nil || t.(time.Time).After(last.Time)) {
		last = model.TimePtr(t.(time.Time))
	}
	if last == nil || now.Sub(last.Time) >= keyTouchEvery {
		e.touchKey(ctx, hash, now)
	}
	return ka.p, nil
}

// touchKey records a key's last use, at most once per keyTouchEvery per key across the
// processes (the store compares with the last use recorded) and without invalidating any
// cache (docs/decisions/0222-api-key-last-use.md); a failure is logged, never fatal to the
// request.
func (e *Service) touchKey(ctx context.Context, hash string, now time.Time) {
	e.touched.Store(hash, now)
	err := e.store.Update(ctx, func(tx model.Tx) error {
		_, err := tx.TouchAPIKey(hash, now, keyTouchEvery)
		return err
	})
	if err != nil && !model.IsKind(err, model.KindNotFound) {
		e.log.Warn("recording an API key's last use failed", "err", err)
	}
}

// ChangePassword sets a new password for the principal's user, after checking the
// current one. It ends every session of the user, the caller's included.
func (e *Service) ChangePassword(ctx context.Context, p model.Principal, in model.ChangePasswordInput, w *model.Write) (*model.PasswordChanged, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.PasswordChanged, error) { return e.changePassword(tx, p, in) })
}

// changePassword is ChangePassword within tx.
func (e *Service) changePassword(tx model.Tx, p model.Principal, in model.ChangePasswordInput) (*model.PasswordChanged, error) {
	if p.UserID == "" {
		return nil, model.Errorf(model.KindForbidden, "only a logged-in user can change its password")
	}
	if in.CurrentPassword == "" {
		return nil, model.Invalid("current_password", "current_password is required")
	}
	if err := model.CheckPassword("new_password", in.NewPassword); err != nil {
		return nil, err
	}
	u, err := tx.UserAccount(p.TenantID, p.UserID)
	if err != nil {
		return nil, err
	}
	if err := model.CopyConflict("user "+u.Email, u.Origin); err != nil {
		return nil, err
	}
	if !password.VerifyPassword(u.PasswordHash, in.CurrentPassword) {
		return nil, model.Errorf(model.KindInvalidCredentials, "the current password is wrong")
	}
	if in.NewPassword == in.CurrentPassword {
		return nil, model.Invalid("new_password", "new_password must differ from the current password")
	}
	u.PasswordHash = e.pw.Hash(in.NewPassword)
	u.TokenVersion++
	u.UpdatedAt = model.At(e.clock.Now())
	return &model.PasswordChanged{PasswordChanged: true}, putUser(tx, u)
}
