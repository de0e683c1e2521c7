package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/auth"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The names of engine/auth that the server, the command line and the tests use; its use
// cases are the Engine's through the embedded auth.Service.

// API key format and rotation grace periods, in minutes.
const (
	APIKeyPrefix      = auth.APIKeyPrefix
	APIKeyShownPrefix = auth.APIKeyShownPrefix
	DefaultGraceMin   = auth.DefaultGraceMin
	MaxGraceMin       = auth.MaxGraceMin
)

// Login lock rules and the lifetime of a login's token.
const (
	MaxLoginFailures = auth.MaxLoginFailures
	LoginLockFor     = auth.LoginLockFor
	TokenLifetime    = auth.TokenLifetime
)

// AuthTokenTTL is how long a password-reset or verification token is valid.
const AuthTokenTTL = auth.AuthTokenTTL

// Kinds of AuthToken.
const (
	TokenReset  = auth.TokenReset
	TokenVerify = auth.TokenVerify
)

// User statuses.
const (
	UserActive    = auth.UserActive
	UserSuspended = auth.UserSuspended
	UserPending   = auth.UserPending
)

// LogMailer is the Mailer of a node without SMTP (auth.LogMailer).
type LogMailer = auth.LogMailer

// NewAPIKey returns a fresh key (auth.NewAPIKey).
func NewAPIKey() string { return auth.NewAPIKey() }

// LooksLikeAPIKey reports whether s has the shape of a key (model.LooksLikeAPIKey).
func LooksLikeAPIKey(s string) bool { return model.LooksLikeAPIKey(s) }
