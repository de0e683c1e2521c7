package engine

import (
	"context"
	"strings"
)

// User statuses.
const (
	UserActive    = "active"
	UserSuspended = "suspended"
	// UserPending is a user created without a password, until it verifies its account.
	UserPending = "pending"
)

// User is a person who logs in; it belongs to one tenant.
type User struct {
	ID        string `json:"id"`
	TenantID  string `json:"tenant_id"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	RBACLevel Role   `json:"rbac_level"`
	Status    string `json:"status"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
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
}

// Validate checks the fields and normalises the email.
func (in *CreateUserInput) Validate(passwordRequired bool) error {
	var err error
	if in.Email, err = normalizeEmail("email", in.Email); err != nil {
		return err
	}
	if in.Name, err = requireText("name", in.Name, 200); err != nil {
		return err
	}
	if in.Role == "" {
		return Invalid("role", "role is required")
	}
	if !ValidRole(in.Role) {
		return Invalid("role", "role must be one of company_admin, company_tech, operational_supervisor, field_operator, corporate_client, api_user")
	}
	if in.Password != "" || passwordRequired {
		return checkPassword("password", in.Password)
	}
	return nil
}

// CreateUser creates a user of the principal's tenant (POST /v1/tenant/users): active
// with a password, pending without one.
func (e *Engine) CreateUser(tx Tx, p Principal, in CreateUserInput) (*User, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, err
	}
	if err := in.Validate(false); err != nil {
		return nil, err
	}
	return e.createUser(tx, p.TenantID, in)
}

// CreateUserIn creates an active user in the tenant with the given slug
// (`fieldrelay user create`); the password is required.
func (e *Engine) CreateUserIn(tx Tx, slug string, in CreateUserInput) (*User, error) {
	if err := in.Validate(true); err != nil {
		return nil, err
	}
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	return e.createUser(tx, t.ID, in)
}

func (e *Engine) createUser(tx Tx, tenantID string, in CreateUserInput) (*User, error) {
	now := At(e.clock.Now())
	u := &UserAccount{User: User{ID: NewID(), TenantID: tenantID, Email: in.Email, Name: in.Name,
		RBACLevel: in.Role, Status: UserPending, CreatedAt: now, UpdatedAt: now}, TokenVersion: 1}
	if in.Password != "" {
		u.PasswordHash = e.pw.Hash(in.Password)
		u.Status = UserActive
	}
	if err := tx.PutUserAccount(u); err != nil {
		return nil, err
	}
	if u.Status == UserPending {
		t, err := e.IssueAuthToken(tx, u.Email, TokenVerify)
		if err != nil {
			return nil, err
		}
		e.sendAfterCommit(tx, t)
	}
	return &u.User, nil
}

// Users lists the principal's tenant's users, newest first (GET /v1/tenant/users).
func (e *Engine) Users(ctx context.Context, p Principal, page Page) ([]User, string, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, "", err
	}
	var out []User
	var next string
	err := e.store.View(ctx, func(tx Tx) (err error) {
		out, next, err = tx.Users(p.TenantID, page)
		return err
	})
	return out, next, err
}

// UpdateUserInput changes some fields of a user; nil fields stay as they are.
type UpdateUserInput struct {
	Status *string `json:"status"`
	Role   *string `json:"role"`
	Name   *string `json:"name"`
}

// UpdateUser changes a user of the principal's tenant (PATCH /v1/tenant/users/:id). A
// change of status or role ends the user's sessions. Admins cannot change their own
// status or role, so a tenant cannot lock out its last admin by mistake.
func (e *Engine) UpdateUser(tx Tx, p Principal, id string, in UpdateUserInput) (*User, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, err
	}
	if in.Status != nil && *in.Status != UserActive && *in.Status != UserSuspended {
		return nil, Invalid("status", "status must be active or suspended")
	}
	if in.Role != nil && !ValidRole(*in.Role) {
		return nil, Invalid("role", "role must be one of company_admin, company_tech, operational_supervisor, field_operator, corporate_client, api_user")
	}
	var name string
	if in.Name != nil {
		var err error
		if name, err = requireText("name", *in.Name, 200); err != nil {
			return nil, err
		}
	}
	if !ValidID(id) {
		return nil, NotFound("user")
	}
	u, err := tx.UserAccount(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	if id == p.UserID && ((in.Status != nil && *in.Status != u.Status) || (in.Role != nil && *in.Role != u.RBACLevel)) {
		return nil, Errorf(KindConflict, "you cannot change your own status or role")
	}
	if in.Status != nil && *in.Status != u.Status {
		if u.Status == UserPending {
			return nil, Errorf(KindConflict, "a pending user becomes active by verifying its account")
		}
		u.Status = *in.Status
		u.TokenVersion++
	}
	if in.Role != nil && *in.Role != u.RBACLevel {
		u.RBACLevel = *in.Role
		u.TokenVersion++
	}
	if in.Name != nil {
		u.Name = name
	}
	u.UpdatedAt = At(e.clock.Now())
	if err := tx.PutUserAccount(u); err != nil {
		return nil, err
	}
	return &u.User, nil
}

// SetUserStatus suspends or activates a user by email (`fieldrelay user suspend|activate`).
// Both end the user's sessions at once.
func (e *Engine) SetUserStatus(tx Tx, email, status string) (*User, error) {
	if status != UserActive && status != UserSuspended {
		return nil, Invalid("status", "status must be active or suspended")
	}
	u, err := tx.UserAccountByEmail(strings.ToLower(strings.TrimSpace(email)))
	if err != nil {
		return nil, err
	}
	u.Status = status
	u.TokenVersion++
	u.UpdatedAt = At(e.clock.Now())
	if err := tx.PutUserAccount(u); err != nil {
		return nil, err
	}
	return &u.User, nil
}
