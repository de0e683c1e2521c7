package engine

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"
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

// LoginGuard counts an email's consecutive failed logins, whether or not the account
// exists.
type LoginGuard struct {
	Failures    int   `json:"failures,omitempty"`
	LockedUntil *Time `json:"locked_until,omitempty"`
}

// IsZero reports whether the guard holds nothing.
func (g LoginGuard) IsZero() bool { return g.Failures == 0 && g.LockedUntil == nil }

// lockedFor returns how long the guard still locks at now (0 when it does not).
func (g LoginGuard) lockedFor(now time.Time) time.Duration {
	if g.LockedUntil == nil || !now.Before(g.LockedUntil.Time) {
		return 0
	}
	return g.LockedUntil.Sub(now)
}

// LoginInput is the body of POST /v1/auth/login.
type LoginInput struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Login checks an email and password. Five consecutive failures lock the email for 15
// minutes: the fifth still answers invalid_credentials, every attempt during the lock
// account_locked. An unknown email costs the same hashing time as a known one.
func (e *Engine) Login(ctx context.Context, in LoginInput) (*UserAccount, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return nil, Invalid("email", "email is required")
	}
	if in.Password == "" {
		return nil, Invalid("password", "password is required")
	}
	if len(email) > 254 || len(in.Password) > MaxPasswordLen {
		return nil, Errorf(KindInvalidCredentials, "invalid email or password")
	}
	var guard LoginGuard
	var acct *UserAccount
	err := e.store.View(ctx, func(tx Tx) (err error) {
		if guard, err = tx.LoginGuard(email); err != nil {
			return err
		}
		acct, err = tx.UserAccountByEmail(email)
		if IsKind(err, KindNotFound) {
			acct, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if d := guard.lockedFor(e.clock.Now()); d > 0 {
		return nil, lockedError(d)
	}
	hash := e.dummyHash
	if acct != nil && acct.PasswordHash != "" {
		hash = acct.PasswordHash
	}
	ok := VerifyPassword(hash, in.Password) && acct != nil && acct.PasswordHash != ""
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
		return nil, Errorf(KindInvalidCredentials, "invalid email or password")
	}
	if d, err := e.clearLoginGuard(ctx, email); err != nil {
		return nil, err
	} else if d > 0 {
		return nil, lockedError(d)
	}
	if acct.Status != UserActive {
		return nil, Errorf(KindAccountSuspended, "this account is %s", acct.Status)
	}
	return acct, nil
}

func lockedError(d time.Duration) *Error {
	return &Error{Kind: KindAccountLocked, RetryAfter: d,
		Msg: "too many failed logins: the account is locked for a while, or until its password is reset"}
}

// recordLoginFailure counts a failed login of email. When a concurrent attempt locked the
// email meanwhile, it counts nothing and returns how long the lock still lasts.
func (e *Engine) recordLoginFailure(ctx context.Context, email string) (locked time.Duration, err error) {
	err = e.store.Update(ctx, func(tx Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil {
			return err
		}
		now := e.clock.Now()
		if locked = g.lockedFor(now); locked > 0 {
			return nil
		}
		if g.LockedUntil != nil {
			g = LoginGuard{} // an expired lock starts a fresh count
		}
		g.Failures++
		if g.Failures >= MaxLoginFailures {
			g = LoginGuard{LockedUntil: TimePtr(now.Add(LoginLockFor))}
		}
		return tx.PutLoginGuard(email, g)
	})
	return locked, err
}

// clearLoginGuard resets the failure count of email after a successful login. When a
// concurrent attempt locked the email meanwhile, it clears nothing and returns how long
// the lock still lasts.
func (e *Engine) clearLoginGuard(ctx context.Context, email string) (locked time.Duration, err error) {
	var g LoginGuard
	err = e.store.View(ctx, func(tx Tx) (err error) {
		g, err = tx.LoginGuard(email)
		return err
	})
	if err != nil || g.IsZero() {
		return 0, err // the common case: nothing to clear, no write
	}
	err = e.store.Update(ctx, func(tx Tx) error {
		g, err := tx.LoginGuard(email)
		if err != nil {
			return err
		}
		if locked = g.lockedFor(e.clock.Now()); locked > 0 {
			return nil
		}
		return tx.PutLoginGuard(email, LoginGuard{})
	})
	return locked, err
}

// UnlockUser clears the login lock of an email (`fieldrelay user unlock`).
func (e *Engine) UnlockUser(tx Tx, email string) (*User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	u, err := tx.UserAccountByEmail(email)
	if err != nil {
		return nil, err
	}
	return &u.User, tx.PutLoginGuard(email, LoginGuard{})
}

// AuthenticateUser resolves the principal of a valid token's claims: the user must exist in
// the tenant, be active, and carry the token version of the claim.
func (e *Engine) AuthenticateUser(ctx context.Context, tenantID, userID string, ver int64) (Principal, error) {
	stale := Errorf(KindUnauthorized, "the token is no longer valid; log in again")
	k := tenantID + "/" + userID
	v := e.store.Version(tenantID)
	ua, ok := e.users.get(k, v)
	if !ok {
		err := e.store.View(ctx, func(tx Tx) error {
			u, err := tx.UserAccount(tenantID, userID)
			if IsKind(err, KindNotFound) {
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
				p: Principal{TenantID: t.ID, Plan: t.LicenseType, TenantActive: t.Status == TenantActive,
					UserID: u.ID, Role: u.RBACLevel}}
			return nil
		})
		if err != nil {
			return Principal{}, err
		}
		e.users.put(k, v, ua)
	}
	if ua.version != ver || !ua.active {
		return Principal{}, stale
	}
	return ua.p, nil
}

// userAuth is what a token's check needs of its user, cached.
type userAuth struct {
	version int64
	active  bool
	p       Principal
}

// keyAuth is what a key's check needs of its record, cached.
type keyAuth struct {
	key *APIKeyRecord
	p   Principal
}

// AuthenticateKey resolves the principal of an API key. It notes the key's last use at
// most once a minute.
func (e *Engine) AuthenticateKey(ctx context.Context, key string) (Principal, error) {
	bad := Errorf(KindUnauthorized, "invalid API key")
	if !LooksLikeAPIKey(key) {
		return Principal{}, bad
	}
	hash := HashToken(key)
	now := e.clock.Now()
	v := e.store.Version("")
	ka, ok := e.keys.get(hash, v)
	if !ok {
		err := e.store.View(ctx, func(tx Tx) error {
			k, err := tx.APIKeyByHash(hash)
			if IsKind(err, KindNotFound) {
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
			ka = keyAuth{key: k, p: Principal{TenantID: t.ID, Plan: t.LicenseType,
				TenantActive: t.Status == TenantActive, KeyID: k.ID, Scopes: k.Scopes}}
			return nil
		})
		if err != nil {
			return Principal{}, err
		}
		e.keys.put(hash, v, ka)
	}
	if !ka.key.Active(now) {
		return Principal{}, bad
	}
	if last := ka.key.LastUsedAt; last == nil || now.Sub(last.Time) >= keyTouchEvery {
		e.touchKey(ctx, hash, now)
	}
	return ka.p, nil
}

// touchKey records a key's last use; a failure is logged, never fatal to the request.
func (e *Engine) touchKey(ctx context.Context, hash string, now time.Time) {
	err := e.store.Update(ctx, func(tx Tx) error {
		k, err := tx.APIKeyByHash(hash)
		if err != nil {
			return err
		}
		k.LastUsedAt = TimePtr(now)
		return tx.PutAPIKey(k)
	})
	if err != nil {
		e.log.Warn("recording an API key's last use failed", "err", err)
	}
}

// ChangePasswordInput is the body of POST /v1/auth/change-password.
type ChangePasswordInput struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// PasswordChanged answers a password change.
type PasswordChanged struct {
	PasswordChanged bool `json:"password_changed"`
}

// ChangePassword sets a new password for the principal's user, after checking the
// current one. It ends every session of the user, the caller's included.
func (e *Engine) ChangePassword(tx Tx, p Principal, in ChangePasswordInput) (*PasswordChanged, error) {
	if p.UserID == "" {
		return nil, Errorf(KindForbidden, "only a logged-in user can change its password")
	}
	if in.CurrentPassword == "" {
		return nil, Invalid("current_password", "current_password is required")
	}
	if err := checkPassword("new_password", in.NewPassword); err != nil {
		return nil, err
	}
	u, err := tx.UserAccount(p.TenantID, p.UserID)
	if err != nil {
		return nil, err
	}
	if !VerifyPassword(u.PasswordHash, in.CurrentPassword) {
		return nil, Errorf(KindInvalidCredentials, "the current password is wrong")
	}
	if in.NewPassword == in.CurrentPassword {
		return nil, Invalid("new_password", "new_password must differ from the current password")
	}
	u.PasswordHash = e.pw.Hash(in.NewPassword)
	u.TokenVersion++
	u.UpdatedAt = At(e.clock.Now())
	return &PasswordChanged{true}, tx.PutUserAccount(u)
}
