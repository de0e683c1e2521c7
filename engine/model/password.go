package model

// Password length limits.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// checkPassword applies the password rules.
func CheckPassword(field, pw string) error {
	if pw == "" {
		return Invalid(field, "%s is required", field)
	}
	if len([]rune(pw)) < MinPasswordLen {
		return Invalid(field, "%s must have at least %d characters", field, MinPasswordLen)
	}
	if len(pw) > MaxPasswordLen {
		return Invalid(field, "%s must have at most %d bytes", field, MaxPasswordLen)
	}
	return nil
}
