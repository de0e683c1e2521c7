package model

// LoginGuard counts an email's consecutive failed logins, whether or not the account
// exists.
type LoginGuard struct {
	Failures    int   `json:"failures,omitempty"`
	LockedUntil *Time `json:"locked_until,omitempty"`
}

// IsZero reports whether the guard holds nothing.
func (g LoginGuard) IsZero() bool { return g.Failures == 0 && g.LockedUntil == nil }

// LoginInput is the body of POST /v1/auth/login.
type LoginInput struct {
	Email    string `json:"email"`
	Password string `json:"password"`
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
