package engine

import (
	"time"
)

// AuthTokenTTL is how long a password-reset or verification token is valid.
const AuthTokenTTL = time.Hour

// Kinds of AuthToken.
const (
	TokenReset  = "reset"
	TokenVerify = "verify"
)

// AuthToken is a single-use token that resets a password or activates an account. Only
// its hash is stored.
type AuthToken struct {
	Kind      string `json:"kind"`
	TenantID  string `json:"tenant_id"`
	UserID    string `json:"user_id"`
	ExpiresAt Time   `json:"expires_at"`
}

// IssuedToken is a new token, shown once.
type IssuedToken struct {
	Email     string `json:"email"`
	Kind      string `json:"kind"`
	Token     string `json:"token"`
	ExpiresAt Time   `json:"expires_at"`
}

// IssueAuthToken creates a reset or verify token for the user with the given email
// (`fieldrelay user reset-link`, forgot-password, user creation without a password).
func (e *Engine) IssueAuthToken(tx Tx, email, kind string) (*IssuedToken, error) {
	u, err := tx.UserAccountByEmail(email)
	if err != nil {
		return nil, err
	}
	token := RandomToken(32)
	exp := At(e.clock.Now().Add(AuthTokenTTL))
	rec := &AuthToken{Kind: kind, TenantID: u.TenantID, UserID: u.ID, ExpiresAt: exp}
	if err := tx.PutAuthToken(HashToken(token), rec); err != nil {
		return nil, err
	}
	return &IssuedToken{Email: u.Email, Kind: kind, Token: token, ExpiresAt: exp}, nil
}

// ResetPasswordInput is the body of POST /v1/auth/reset-password.
type ResetPasswordInput struct {
	Token       string `json:"token"`
	NewPassword string `json:"new_password"`
}

// ResetPassword sets a new password with a reset token: the token is spent, the login
// lock lifted and every session of the user ended.
func (e *Engine) ResetPassword(tx Tx, in ResetPasswordInput) (*PasswordChanged, error) {
	if in.Token == "" {
		return nil, Invalid("token", "token is required")
	}
	if err := checkPassword("new_password", in.NewPassword); err != nil {
		return nil, err
	}
	u, err := e.spendAuthToken(tx, in.Token, TokenReset)
	if err != nil {
		return nil, err
	}
	u.PasswordHash = e.pw.Hash(in.NewPassword)
	u.TokenVersion++
	u.UpdatedAt = At(e.clock.Now())
	if err := tx.PutUserAccount(u); err != nil {
		return nil, err
	}
	return &PasswordChanged{true}, tx.PutLoginGuard(u.Email, LoginGuard{})
}

// spendAuthToken finds the user of a valid token of the given kind and deletes the token.
func (e *Engine) spendAuthToken(tx Tx, token, kind string) (*UserAccount, error) {
	bad := Errorf(KindUnauthorized, "the token is invalid, used or expired")
	hash := HashToken(token)
	rec, err := tx.AuthToken(hash)
	if IsKind(err, KindNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	if err := tx.DeleteAuthToken(hash); err != nil {
		return nil, err
	}
	if rec.Kind != kind || !e.clock.Now().Before(rec.ExpiresAt.Time) {
		return nil, bad
	}
	u, err := tx.UserAccount(rec.TenantID, rec.UserID)
	if IsKind(err, KindNotFound) {
		return nil, bad
	}
	return u, err
}
