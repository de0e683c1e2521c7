package model

import "context"

// AuthToken is a single-use token that resets a password or activates an account. Only
// its hash is stored.
type AuthToken struct {
	Kind      string `json:"kind"`
	TenantID  string `json:"tenant_id"`
	UserID    string `json:"user_id"`
	ExpiresAt Time   `json:"expires_at"`
}

// Kinds of AuthToken.
const (
	TokenReset  = "reset"
	TokenVerify = "verify"
)

// IssuedToken is a new token, shown once.
type IssuedToken struct {
	Email     string `json:"email"`
	Kind      string `json:"kind"`
	Token     string `json:"token"`
	ExpiresAt Time   `json:"expires_at"`
}

// ResetPasswordInput is the body of POST /v1/auth/reset-password.
type ResetPasswordInput struct {
	Token       string `json:"token"`
	NewPassword string `json:"new_password"`
}

// Mailer delivers reset and verify tokens to their users. The outbox scheduler calls it,
// outside any transaction, for each attempt of an account mail (OutboxMail).
type Mailer interface {
	SendToken(ctx context.Context, t *IssuedToken) error
}

// ForgotPasswordInput is the body of POST /v1/auth/forgot-password.
type ForgotPasswordInput struct {
	Email string `json:"email"`
}

// VerifyInput is the body of POST /v1/auth/verify.
type VerifyInput struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}
