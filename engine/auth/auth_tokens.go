package auth

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AuthTokenTTL is how long a password-reset or verification token is valid.
const AuthTokenTTL = time.Hour

// Kinds of AuthToken (model's, named here too for the engine's callers).
const (
	TokenReset  = model.TokenReset
	TokenVerify = model.TokenVerify
)

// AdminIssueAuthToken creates a reset or verify token for the user with the given email
// (`fieldrelay user reset-link`, forgot-password, user creation without a password).
func (e *Service) AdminIssueAuthToken(ctx context.Context, email, kind string) (*model.IssuedToken, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.IssuedToken, error) { return e.issueAuthToken(tx, email, kind) })
}

// issueAuthToken is AdminIssueAuthToken within tx.
func (e *Service) issueAuthToken(tx model.Tx, email, kind string) (*model.IssuedToken, error) {
	u, err := tx.UserAccountByEmail(email)
	if err != nil {
		return nil, err
	}
	return e.issueToken(tx, u, kind)
}

// issueToken creates a token of the kind for u and stores its hash.
func (e *Service) issueToken(tx model.Tx, u *model.UserAccount, kind string) (*model.IssuedToken, error) {
	token := model.RandomToken(32)
	exp := model.At(e.clock.Now().Add(AuthTokenTTL))
	rec := &model.AuthToken{Kind: kind, TenantID: u.TenantID, UserID: u.ID, ExpiresAt: exp}
	if err := tx.PutAuthToken(model.HashToken(token), rec); err != nil {
		return nil, err
	}
	return &model.IssuedToken{Email: u.Email, Kind: kind, Token: token, ExpiresAt: exp}, nil
}

// ResetPassword sets a new password with a reset token: the token is spent, the login
// lock lifted and every session of the user ended.
func (e *Service) ResetPassword(ctx context.Context, in model.ResetPasswordInput) (*model.PasswordChanged, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.PasswordChanged, error) { return e.resetPassword(tx, in) })
}

// resetPassword is ResetPassword within tx.
func (e *Service) resetPassword(tx model.Tx, in model.ResetPasswordInput) (*model.PasswordChanged, error) {
	if in.Token == "" {
		return nil, model.Invalid("token", "token is required")
	}
	if err := model.CheckPassword("new_password", in.NewPassword); err != nil {
		return nil, err
	}
	u, err := e.spendAuthToken(tx, in.Token, TokenReset)
	if err != nil {
		return nil, err
	}
	u.PasswordHash = e.pw.Hash(in.NewPassword)
	if u.Status == UserPending { // the token proved the email, as a verify token does
		u.Status = UserActive
	}
	u.TokenVersion++
	u.UpdatedAt = model.At(e.clock.Now())
	if err := putUser(tx, u); err != nil {
		return nil, err
	}
	return &model.PasswordChanged{PasswordChanged: true}, tx.PutLoginGuard(u.Email, model.LoginGuard{})
}

// spendAuthToken finds the user of a valid token of the given kind and deletes the token.
func (e *Service) spendAuthToken(tx model.Tx, token, kind string) (*model.UserAccount, error) {
	bad := model.Errorf(model.KindUnauthorized, "the token is invalid, used or expired")
	hash := model.HashToken(token)
	rec, err := tx.AuthToken(hash)
	if model.IsKind(err, model.KindNotFound) {
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
	if model.IsKind(err, model.KindNotFound) {
		return nil, bad
	}
	return u, err
}

// LogMailer is the delivery of a node with no SMTP relay: it logs that a token was issued
// (email, kind, expiry) and that `fieldrelay user reset-link EMAIL` gives the admin one to
// hand over, never the token itself, which would let whoever reads the log take the
// account. With ShowTokens (`serve --log-reset-links`, for evaluation) it logs the token
// too (docs/decisions/0079-tokens-out-of-log.md).
type LogMailer struct {
	Log        *slog.Logger
	ShowTokens bool
}

// SendToken logs the issue of the token; the token itself only with ShowTokens.
func (m LogMailer) SendToken(_ context.Context, t *model.IssuedToken) error {
	if m.ShowTokens {
		m.Log.Info("account token issued: deliver it to the user (--log-reset-links)", "email", t.Email, "kind", t.Kind,
			"token", t.Token, "expires_at", t.ExpiresAt.Format(model.TimeLayout))
		return nil
	}
	m.Log.Info("account token issued; the token is not logged (no SMTP): the command in reset_link issues one to hand over",
		"email", t.Email, "kind", t.Kind, "expires_at", t.ExpiresAt.Format(model.TimeLayout),
		"reset_link", "fieldrelay user reset-link "+t.Email)
	return nil
}

// mailToken writes, within tx, the outbox entry that mails u a token of the kind. The
// token is issued by the attempt that sends it (mailAttempt): the request does not wait
// for the relay, and the data directory never holds a token in plaintext.
func (e *Service) mailToken(tx model.Tx, u *model.UserAccount, kind string) error {
	now := model.At(e.clock.Now())
	return e.enqueue(tx, &model.OutboxEntry{ID: model.NewID(), TenantID: u.TenantID, Kind: model.OutboxMail,
		UserID: u.ID, TokenKind: kind, DueAt: now, CreatedAt: now})
}

// mailAttempt issues, within tx, the token an attempt of an account mail sends; nil when
// the user is gone. Every attempt issues its own token, valid AuthTokenTTL from the
// attempt: a retry hours later still sends a valid one, and the token of a failed
// attempt, which nobody received, expires unused.
func (e *Service) mailAttempt(tx model.Tx, o *model.OutboxEntry) (*model.IssuedToken, error) {
	u, err := tx.UserAccount(o.TenantID, o.UserID)
	if model.IsKind(err, model.KindNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.issueToken(tx, u, o.TokenKind)
}

// sendMail makes the call of an account mail's attempt.
func (e *Service) sendMail(ctx context.Context, t *model.IssuedToken) model.SendResult {
	if err := e.mailer.SendToken(ctx, t); err != nil {
		e.log.Warn("delivering an account token failed", "kind", t.Kind, "err", err)
		return model.SendResult{Err: err}
	}
	return model.SendResult{}
}

// ForgotPassword mails a reset token to the user with the email, if there is one, through
// the outbox (mailToken). It answers the same whether or not the account exists.
func (e *Service) ForgotPassword(ctx context.Context, in model.ForgotPasswordInput) error {
	return e.store.Update(ctx, func(tx model.Tx) error { return e.forgotPassword(tx, in) })
}

// forgotPassword is ForgotPassword within tx.
func (e *Service) forgotPassword(tx model.Tx, in model.ForgotPasswordInput) error {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return model.Invalid("email", "email is required")
	}
	u, err := tx.UserAccountByEmail(email)
	if model.IsKind(err, model.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return e.mailToken(tx, u, TokenReset)
}

// VerifyAccount activates a pending user with its verify token, setting its password
// (required when it has none).
func (e *Service) VerifyAccount(ctx context.Context, in model.VerifyInput) (*model.User, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.User, error) { return e.verifyAccount(tx, in) })
}

// verifyAccount is VerifyAccount within tx.
func (e *Service) verifyAccount(tx model.Tx, in model.VerifyInput) (*model.User, error) {
	if in.Token == "" {
		return nil, model.Invalid("token", "token is required")
	}
	if in.Password != "" {
		if err := model.CheckPassword("password", in.Password); err != nil {
			return nil, err
		}
	}
	u, err := e.spendAuthToken(tx, in.Token, TokenVerify)
	if err != nil {
		return nil, err
	}
	if u.PasswordHash == "" && in.Password == "" {
		return nil, model.Invalid("password", "password is required to activate this account")
	}
	if u.Status != UserPending {
		return nil, model.Errorf(model.KindConflict, "this account is already %s", u.Status)
	}
	if in.Password != "" {
		u.PasswordHash = e.pw.Hash(in.Password)
	}
	u.Status = UserActive
	u.TokenVersion++
	u.UpdatedAt = model.At(e.clock.Now())
	return &u.User, putUser(tx, u)
}
