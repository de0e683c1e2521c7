package auth

import (
	"context"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// User statuses.
const (
	UserActive    = "active"
	UserSuspended = "suspended"
	// UserPending is a user created without a password, until it verifies its account.
	UserPending = "pending"
)

// CreateUser creates a user of the principal's tenant (POST /v1/tenant/users): active
// with a password, pending without one.
func (e *Service) CreateUser(ctx context.Context, p model.Principal, in model.CreateUserInput, w *model.Write) (*model.User, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.User, error) { return e.createUserAs(tx, p, in) })
}

// createUserAs is CreateUser within tx.
func (e *Service) createUserAs(tx model.Tx, p model.Principal, in model.CreateUserInput) (*model.User, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	if err := in.Validate(false); err != nil {
		return nil, err
	}
	return e.createUser(tx, p.TenantID, in)
}

// AdminCreateUser creates an active user in the tenant with the given slug
// (`fieldrelay user create`); the password is required.
func (e *Service) AdminCreateUser(ctx context.Context, slug string, in model.CreateUserInput) (*model.User, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.User, error) { return e.createUserIn(tx, slug, in) })
}

// createUserIn is AdminCreateUser within tx.
func (e *Service) createUserIn(tx model.Tx, slug string, in model.CreateUserInput) (*model.User, error) {
	if err := in.Validate(true); err != nil {
		return nil, err
	}
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	return e.createUser(tx, t.ID, in)
}

func (e *Service) createUser(tx model.Tx, tenantID string, in model.CreateUserInput) (*model.User, error) {
	now := model.At(e.clock.Now())
	u := &model.UserAccount{User: model.User{ID: model.NewID(), TenantID: tenantID, Email: in.Email, Name: in.Name,
		RBACLevel: in.Role, Status: UserPending, Phone: in.Phone, OnDuty: in.OnDuty, CreatedAt: now, UpdatedAt: now}, TokenVersion: 1}
	if in.Password != "" {
		u.PasswordHash = e.pw.Hash(in.Password)
		u.Status = UserActive
	}
	if err := putUser(tx, u); err != nil {
		return nil, err
	}
	if u.Status == UserPending {
		if err := e.mailToken(tx, u, TokenVerify); err != nil {
			return nil, err
		}
	}
	return &u.User, nil
}

// Users lists the principal's tenant's users, newest first (GET /v1/tenant/users).
func (e *Service) Users(ctx context.Context, p model.Principal, page model.Page) ([]model.User, string, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, "", err
	}
	var out []model.User
	var next string
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		out, next, err = tx.Users(p.TenantID, page)
		return err
	})
	return out, next, err
}

// UpdateUser changes a user of the principal's tenant (PATCH /v1/tenant/users/:id). A
// change of status or role ends the user's sessions. Admins cannot change their own
// status or role, so a tenant cannot lock out its last admin by mistake.
func (e *Service) UpdateUser(ctx context.Context, p model.Principal, id string, in model.UpdateUserInput, w *model.Write) (*model.User, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.User, error) { return e.updateUser(tx, p, id, in) })
}

// updateUser is UpdateUser within tx.
func (e *Service) updateUser(tx model.Tx, p model.Principal, id string, in model.UpdateUserInput) (*model.User, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	if in.Status != nil && *in.Status != UserActive && *in.Status != UserSuspended {
		return nil, model.Invalid("status", "status must be active or suspended")
	}
	if in.Role != nil && !model.ValidRole(*in.Role) {
		return nil, model.Invalid("role", "role must be one of company_admin, company_tech, operational_supervisor, field_operator, corporate_client, api_user")
	}
	var name string
	if in.Name != nil {
		var err error
		if name, err = model.RequireText("name", *in.Name, 200); err != nil {
			return nil, err
		}
	}
	var phone string
	if in.Phone != nil {
		var err error
		if phone, err = model.CheckPhone("phone", *in.Phone); err != nil {
			return nil, err
		}
	}
	if !model.ValidID(id) {
		return nil, model.NotFound("user")
	}
	u, err := tx.UserAccount(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	if err := model.CopyConflict("user "+u.Email, u.Origin); err != nil {
		return nil, err
	}
	if id == p.UserID && ((in.Status != nil && *in.Status != u.Status) || (in.Role != nil && *in.Role != u.RBACLevel)) {
		return nil, model.Errorf(model.KindConflict, "you cannot change your own status or role")
	}
	if in.Status != nil && *in.Status != u.Status {
		if u.Status == UserPending {
			return nil, model.Errorf(model.KindConflict, "a pending user becomes active by verifying its account")
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
	if in.Phone != nil {
		u.Phone = phone
	}
	if in.OnDuty != nil {
		u.OnDuty = *in.OnDuty
	}
	u.UpdatedAt = model.At(e.clock.Now())
	if err := putUser(tx, u); err != nil {
		return nil, err
	}
	return &u.User, nil
}

// AdminSetUserStatus suspends or activates a user by email (`fieldrelay user suspend|activate`).
// Both end the user's sessions at once.
func (e *Service) AdminSetUserStatus(ctx context.Context, email, status string) (*model.User, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.User, error) { return e.setUserStatus(tx, email, status) })
}

// setUserStatus is AdminSetUserStatus within tx.
func (e *Service) setUserStatus(tx model.Tx, email, status string) (*model.User, error) {
	if status != UserActive && status != UserSuspended {
		return nil, model.Invalid("status", "status must be active or suspended")
	}
	u, err := tx.UserAccountByEmail(strings.ToLower(strings.TrimSpace(email)))
	if err != nil {
		return nil, err
	}
	// As PATCH /v1/tenant/users/:id: a user without a password activates itself by
	// verifying its account.
	if status == UserActive && u.Status == UserPending {
		return nil, model.Errorf(model.KindConflict, "a pending user becomes active by verifying its account")
	}
	u.Status = status
	u.TokenVersion++
	u.UpdatedAt = model.At(e.clock.Now())
	if err := putUser(tx, u); err != nil {
		return nil, err
	}
	return &u.User, nil
}

// putUser stores a user and, when the user is this node's own, logs the change for the
// sites below (docs/decisions/0196-downstream-log.md).
func putUser(tx model.Tx, u *model.UserAccount) error {
	if err := tx.PutUserAccount(u); err != nil {
		return err
	}
	if u.Origin == nil {
		writes.Changed(tx, u.TenantID, model.DownUser, u.ID)
	}
	return nil
}
