package model

import (
	"regexp"
	"strings"
)

// User is a person who logs in; it belongs to one tenant.
type User struct {
	ID        string `json:"id"`
	TenantID  string `json:"tenant_id"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	RBACLevel Role   `json:"rbac_level"`
	Status    string `json:"status"`
	// Origin and OriginVersion as a Team's: a user copied from a central node.
	Origin        *string `json:"origin,omitempty"`
	OriginVersion int64   `json:"origin_version,omitempty"`
	// Phone (E.164, "" when none) and OnDuty say where an unacknowledged alert is
	// escalated: to the supervisors on duty (docs/decisions/0263-alert-escalation.md).
	Phone     string `json:"phone"`
	OnDuty    bool   `json:"on_duty"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

// PhoneRE is the shape of a phone number: E.164.
var PhoneRE = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// CheckPhone trims a phone number and checks its shape; "" is no phone.
func CheckPhone(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s != "" && !PhoneRE.MatchString(s) {
		return "", Invalid(field, "%s must be an E.164 number such as +33612345678", field)
	}
	return s, nil
}

// UserAccount is a User with its secrets, as stored; never returned by the API.
type UserAccount struct {
	User
	PasswordHash string `json:"password_hash,omitempty"`
	// TokenVersion is the `ver` claim every valid token of the user carries.
	TokenVersion int64 `json:"token_version"`
}

// CreateUserInput is the body of POST /v1/tenant/users and of `fieldrelay user create`.
type CreateUserInput struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
	Phone    string `json:"phone"`
	OnDuty   bool   `json:"on_duty"`
}

// Validate checks the fields and normalises the email.
func (in *CreateUserInput) Validate(passwordRequired bool) error {
	var err error
	if in.Email, err = NormalizeEmail("email", in.Email); err != nil {
		return err
	}
	if in.Name, err = RequireText("name", in.Name, 200); err != nil {
		return err
	}
	if in.Role == "" {
		return Invalid("role", "role is required")
	}
	if !ValidRole(in.Role) {
		return Invalid("role", "role must be one of company_admin, company_tech, operational_supervisor, field_operator, corporate_client, api_user")
	}
	if in.Phone, err = CheckPhone("phone", in.Phone); err != nil {
		return err
	}
	if in.Password != "" || passwordRequired {
		return CheckPassword("password", in.Password)
	}
	return nil
}

// UpdateUserInput changes some fields of a user; nil fields stay as they are.
type UpdateUserInput struct {
	Status *string `json:"status"`
	Role   *string `json:"role"`
	Name   *string `json:"name"`
	// Phone "" removes the user's phone.
	Phone  *string `json:"phone"`
	OnDuty *bool   `json:"on_duty"`
}
