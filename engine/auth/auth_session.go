package auth

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// SessionUser answers the account of a console session
// (docs/decisions/0118-console-session.md): the user
// must exist in the tenant, be active and carry the
// session's token version. A logout, a password change, a suspension or a reactivation
// moved the version on, and the session ended with it.
func (e *Service) SessionUser(ctx context.Context, tenantID, userID string, ver int64) (*model.UserAccount, error) {
	if _, err := e.AuthenticateUser(ctx, tenantID, userID, ver); err != nil {
		return nil, err
	}
	var u *model.UserAccount
	err := e.store.View(ctx, func(tx model.Tx) error {
		var err error
		u, err = tx.UserAccount(tenantID, userID)
		return err
	})
	if model.IsKind(err, model.KindNotFound) {
		return nil, model.Errorf(model.KindUnauthorized, "the session is no longer valid; log in again")
	}
	return u, err
}

// Logout ends every session of the principal's user at once: its token version moves
// on, so each token and console session issued to it before is refused from now on.
func (e *Service) Logout(ctx context.Context, p model.Principal) error {
	if p.UserID == "" {
		return model.Errorf(model.KindForbidden, "only a logged-in user can log out; an API key has no session")
	}
	_, err := write(ctx, e, p.TenantID, nil, func(tx model.Tx) (struct{}, error) {
		u, err := tx.UserAccount(p.TenantID, p.UserID)
		if err != nil {
			return struct{}{}, err
		}
		u.TokenVersion++
		u.UpdatedAt = model.At(e.clock.Now())
		return struct{}{}, putUser(tx, u)
	})
	return err
}
