// Package auth holds who may call the node: the API keys of the tenants (create, list,
// rotate, revoke, and the check of a key on each request), the user accounts (create,
// update, status), the login with its lock-out, the tokens of a session, and the reset and
// verification tokens mailed through the outbox.
//
// A Service is built from its parts (Parts): the store, the clock, the password hashing,
// and what it needs of the engine as functions (the idempotency frame of a write use case,
// an outbox entry for a mail). It never sees the engine: engine/layering_test.go holds it.
// The engine embeds it, so that its use cases are the Engine's.
package auth

import (
	"context"
	"log/slog"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/dircache"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/password"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Parts are what a Service is built from.
type Parts struct {
	// Store is the engine's store (with its pre-commit hooks).
	Store model.Store
	Clock model.Clock
	Log   *slog.Logger
	// Password sets the cost of password hashing (password.DefaultParams when zero).
	Password password.Params
	// Mailer delivers account tokens (a LogMailer that logs no token when nil).
	Mailer model.Mailer
	// Frame is the idempotency frame of the write use cases.
	Frame writes.Frame
	// Enqueue writes an outbox entry within tx (an account mail), delivered after commit.
	Enqueue func(tx model.Tx, o *model.OutboxEntry) error
}

// Service runs the use cases of API keys, accounts and logins.
type Service struct {
	store   model.Store
	clock   model.Clock
	log     *slog.Logger
	pw      password.Params
	mailer  model.Mailer
	frame   writes.Frame
	enqueue func(tx model.Tx, o *model.OutboxEntry) error
	// Caches of the directory, checked against the store's directory versions.
	keys  dircache.Cache[keyAuth]
	users dircache.Cache[userAuth]
	// touched holds when this process last recorded each key's use (hash → time.Time):
	// the cached record's LastUsedAt is not refreshed by a touch, which invalidates nothing.
	touched sync.Map
	// deadlines holds the monotonic ends of the lock-outs and key expiries this run set
	// (deadlines.go).
	deadlines *deadlines
	// dummyHash is verified against for unknown emails, so that a login costs the same
	// whether or not the account exists.
	dummyHash string
}

// New returns the Service of an engine.
func New(p Parts) *Service {
	s := &Service{store: p.Store, clock: p.Clock, log: p.Log, pw: p.Password, mailer: p.Mailer, frame: p.Frame,
		enqueue: p.Enqueue, deadlines: newDeadlines()}
	if s.mailer == nil {
		s.mailer = LogMailer{Log: s.log}
	}
	if s.pw == (password.Params{}) {
		s.pw = password.DefaultParams
	}
	s.dummyHash = s.pw.Hash(model.RandomToken(16))
	return s
}

// write runs fn through the engine's frame.
func write[T any](ctx context.Context, e *Service, tenantID string, w *model.Write, fn func(model.Tx) (T, error)) (T, error) {
	return writes.Do(ctx, e.frame, tenantID, w, fn)
}

// tenantBySlug reads the tenant of a slug.
func (e *Service) tenantBySlug(ctx context.Context, slug string) (*model.Tenant, error) {
	var t *model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = tx.TenantBySlug(slug)
		return err
	})
	return t, err
}

// What the engine's other use cases need of accounts and keys within their transaction.
// Functions, not methods, so that the Engine that embeds a Service does not show them.

// CreateKey creates an API key of a tenant within tx (a new tenant's default key) and
// returns the key, shown once.
func CreateKey(s *Service, tx model.Tx, tenantID, name string, scopes []string, expires *model.Time) (string, *model.APIKeyRecord, error) {
	return s.createAPIKey(tx, tenantID, name, scopes, expires)
}

// CreateUserIn creates a user of the tenant of a slug within tx (a new tenant's users).
func CreateUserIn(s *Service, tx model.Tx, slug string, in model.CreateUserInput) (*model.User, error) {
	return s.createUserIn(tx, slug, in)
}

// Mail is the account mail of the outbox: the token of an attempt, issued within its
// transaction, and the call that sends it.
type Mail struct{ s *Service }

// MailOf returns the account mail of s.
func MailOf(s *Service) Mail { return Mail{s} }

// Prepare issues, within tx, the token an attempt of an account mail sends; nil when the
// user is gone.
func (m Mail) Prepare(tx model.Tx, o *model.OutboxEntry) (*model.IssuedToken, error) {
	return m.s.mailAttempt(tx, o)
}

// Send makes the call of an account mail's attempt.
func (m Mail) Send(ctx context.Context, t *model.IssuedToken) model.SendResult {
	return m.s.sendMail(ctx, t)
}

// KeysOf lists the active keys of a tenant by id (for the engine's tests, which hold the
// rotation's grace period).
func KeysOf(ctx context.Context, s *Service, tenantID string) ([]model.APIKey, error) {
	return s.apiKeysOf(ctx, tenantID)
}

// RotateKeyIn rotates a key of a tenant by id within tx, callerKeyID the calling key (for
// the engine's tests).
func RotateKeyIn(s *Service, tx model.Tx, tenantID, callerKeyID string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	return s.rotateAPIKey(tx, tenantID, callerKeyID, in)
}
