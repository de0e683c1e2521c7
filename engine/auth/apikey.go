package auth

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// API key format: the live-key prefix and 32 base62 characters (model/apikey.go).
const (
	APIKeyPrefix    = model.APIKeyPrefix
	apiKeyRandomLen = model.APIKeyRandomLen
	// APIKeyShownPrefix is how many leading characters of a key are listed.
	APIKeyShownPrefix = model.APIKeyShownPrefix
)

// Rotation grace periods, in minutes.
const (
	DefaultGraceMin = 1440
	MaxGraceMin     = 10080
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewAPIKey returns a fresh key: APIKeyPrefix and 32 base62 characters from crypto/rand.
func NewAPIKey() string {
	out := make([]byte, 0, len(APIKeyPrefix)+apiKeyRandomLen)
	out = append(out, APIKeyPrefix...)
	var buf [64]byte
	for len(out) < cap(out) {
		_, _ = rand.Read(buf[:])
		for _, b := range buf {
			if b < 248 { // 248 = 4*62: rejection keeps the draw uniform
				out = append(out, base62[b%62])
				if len(out) == cap(out) {
					break
				}
			}
		}
	}
	return string(out)
}

// LooksLikeAPIKey reports whether s has the shape of a key (model.LooksLikeAPIKey).
func LooksLikeAPIKey(s string) bool { return model.LooksLikeAPIKey(s) }

func (e *Service) createAPIKey(tx model.Tx, tenantID, name string, scopes []string, expires *model.Time) (string, *model.APIKeyRecord, error) {
	key := NewAPIKey()
	rec := &model.APIKeyRecord{APIKey: model.APIKey{ID: model.NewID(), TenantID: tenantID, Name: name,
		Prefix: key[:APIKeyShownPrefix], Scopes: scopes, CreatedAt: model.At(e.clock.Now()), ExpiresAt: expires},
		Hash: model.HashToken(key)}
	return key, rec, tx.PutAPIKey(rec)
}

// AdminCreateAPIKey creates a key for the tenant with the given slug (`fieldrelay apikey create`).
func (e *Service) AdminCreateAPIKey(ctx context.Context, slug string, in model.CreateAPIKeyInput) (*model.NewKey, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.NewKey, error) { return e.createAPIKeyIn(tx, slug, in) })
}

// createAPIKeyIn is AdminCreateAPIKey within tx.
func (e *Service) createAPIKeyIn(tx model.Tx, slug string, in model.CreateAPIKeyInput) (*model.NewKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	key, rec, err := e.createAPIKey(tx, t.ID, in.Name, in.Scopes, nil)
	if err != nil {
		return nil, err
	}
	return &model.NewKey{APIKey: key, Key: &rec.APIKey}, nil
}

// AdminAPIKeys lists the active keys of the tenant with the given slug, newest first,
// without their secrets (`fieldrelay apikey list`).
func (e *Service) AdminAPIKeys(ctx context.Context, slug string) ([]model.APIKey, error) {
	t, err := e.tenantBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	return e.apiKeysOf(ctx, t.ID)
}

// apiKeysOf lists the active keys of a tenant, newest first, without their secrets.
func (e *Service) apiKeysOf(ctx context.Context, tenantID string) ([]model.APIKey, error) {
	var out []model.APIKey
	err := e.store.View(ctx, func(tx model.Tx) error {
		recs, err := tx.APIKeys(tenantID)
		for _, r := range recs {
			if e.keyActive(&r.APIKey) {
				out = append(out, r.APIKey)
			}
		}
		return err
	})
	return out, err
}

// rotateAPIKey replaces a key of tenantID by a new one with the same name and scopes; the
// old key stays valid for the grace period. callerKeyID is the key making the call, if any.
func (e *Service) rotateAPIKey(tx model.Tx, tenantID, callerKeyID string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	grace := model.Int(DefaultGraceMin)
	if in.GracePeriodMinutes != nil {
		grace = *in.GracePeriodMinutes
	}
	if grace < 0 || grace > MaxGraceMin {
		return nil, model.Invalid("grace_period_minutes", "grace_period_minutes must be between 0 and %d", MaxGraceMin)
	}
	now := e.clock.Now()
	old, err := e.keyToRotate(tx, tenantID, callerKeyID, in.KeyID)
	if err != nil {
		return nil, err
	}
	expires := model.TimePtr(now.Add(time.Duration(grace) * time.Minute))
	if old.ExpiresAt != nil && old.ExpiresAt.Before(expires.Time) {
		expires = old.ExpiresAt // a rotation never lengthens a key's life
	} else {
		// The grace lasts its minutes of elapsed time while the node runs, however its
		// wall clock steps; expires_at is what a restart or another process reads.
		at, id, wall := e.clock.Mono()+expires.Sub(now), old.ID, expires.Time
		tx.OnCommit(func() { e.setDeadline(apiKeyDeadline(id), wall, at) })
	}
	old.ExpiresAt = expires
	if err := tx.PutAPIKey(old); err != nil {
		return nil, err
	}
	key, rec, err := e.createAPIKey(tx, tenantID, old.Name, old.Scopes, nil)
	if err != nil {
		return nil, err
	}
	return &model.NewKey{APIKey: key, Key: &rec.APIKey, PreviousKeyExpiresAt: expires}, nil
}

func (e *Service) keyToRotate(tx model.Tx, tenantID, callerKeyID, keyID string) (*model.APIKeyRecord, error) {
	if keyID == "" {
		keyID = callerKeyID
	}
	if keyID != "" {
		if !model.ValidID(keyID) {
			return nil, model.NotFound("api key")
		}
		k, err := tx.APIKey(tenantID, keyID)
		if err != nil {
			return nil, err
		}
		if !e.keyActive(&k.APIKey) {
			return nil, model.NotFound("api key")
		}
		return k, nil
	}
	keys, err := tx.APIKeys(tenantID)
	if err != nil {
		return nil, err
	}
	for i := len(keys) - 1; i >= 0; i-- { // oldest first
		if keys[i].ExpiresAt == nil {
			return &keys[i], nil
		}
	}
	return nil, model.NotFound("api key without an expiry")
}

// AdminRotateAPIKey rotates a key of the tenant with the given slug (`fieldrelay apikey rotate`).
func (e *Service) AdminRotateAPIKey(ctx context.Context, slug string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	return write(ctx, e, "", nil, func(tx model.Tx) (*model.NewKey, error) { return e.rotateAPIKeyIn(tx, slug, in) })
}

// rotateAPIKeyIn is AdminRotateAPIKey within tx.
func (e *Service) rotateAPIKeyIn(tx model.Tx, slug string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	return e.rotateAPIKey(tx, t.ID, "", in)
}

// grantable reports whether p may give a key these scopes: a user holding tenant:admin
// may give any scope; anyone else only scopes it holds itself, so that managing keys
// never widens one's own access.
func grantable(p model.Principal, scopes []string) error {
	if !p.IsKey() && p.Can(model.PermTenantAdmin) {
		return nil
	}
	for _, s := range scopes {
		if !p.Can(s) {
			return model.Errorf(model.KindForbidden, "you cannot give a key the %s scope, which you do not hold", s)
		}
	}
	return nil
}

// ListAPIKeys lists the active keys of p's tenant, newest first, without their secrets
// (GET /v1/tenant/api-keys, apikeys:manage).
func (e *Service) ListAPIKeys(ctx context.Context, p model.Principal, page model.Page) ([]model.APIKey, string, error) {
	if err := p.Require(model.PermAPIKeysManage); err != nil {
		return nil, "", err
	}
	keys, err := e.apiKeysOf(ctx, p.TenantID)
	if err != nil {
		return nil, "", err
	}
	return model.PageList(keys, model.ByIDNewestFirst(func(k *model.APIKey) string { return k.ID }), nil, page)
}

// CreateAPIKey creates a key of p's tenant with the given name and scopes (POST
// /v1/tenant/api-keys, apikeys:manage). Without scopes, the key gets every scope but
// sms:inbound that p may give. The key is shown once.
func (e *Service) CreateAPIKey(ctx context.Context, p model.Principal, in model.CreateAPIKeyInput, w *model.Write) (*model.NewKey, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.NewKey, error) { return e.createAPIKeyAs(tx, p, in) })
}

// createAPIKeyAs is CreateAPIKey within tx.
func (e *Service) createAPIKeyAs(tx model.Tx, p model.Principal, in model.CreateAPIKeyInput) (*model.NewKey, error) {
	if err := p.Require(model.PermAPIKeysManage); err != nil {
		return nil, err
	}
	if in.Scopes == nil {
		in.Scopes = []string{}
		for _, s := range model.DefaultKeyScopes() {
			if grantable(p, []string{s}) == nil {
				in.Scopes = append(in.Scopes, s)
			}
		}
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := grantable(p, in.Scopes); err != nil {
		return nil, err
	}
	key, rec, err := e.createAPIKey(tx, p.TenantID, in.Name, in.Scopes, nil)
	if err != nil {
		return nil, err
	}
	return &model.NewKey{APIKey: key, Key: &rec.APIKey}, nil
}

// RotateAPIKey rotates a key of p's tenant (POST /v1/tenant/api-keys/rotate,
// apikeys:manage): by default the calling key, else the tenant's oldest key without an
// expiry. The new key has the old one's name and scopes, so p must be able to give them.
// The grace period is 1 to 10080 minutes here: a key to end at once is revoked (the
// command line's `--grace 0s` does that through AdminRotateAPIKey).
func (e *Service) RotateAPIKey(ctx context.Context, p model.Principal, in model.RotateAPIKeyInput, w *model.Write) (*model.NewKey, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.NewKey, error) { return e.rotateKey(tx, p, in) })
}

// rotateKey is RotateAPIKey within tx.
func (e *Service) rotateKey(tx model.Tx, p model.Principal, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	if err := p.Require(model.PermAPIKeysManage); err != nil {
		return nil, err
	}
	if in.GracePeriodMinutes != nil && (*in.GracePeriodMinutes < 1 || *in.GracePeriodMinutes > MaxGraceMin) {
		return nil, model.Invalid("grace_period_minutes", "grace_period_minutes must be between 1 and %d", MaxGraceMin)
	}
	old, err := e.keyToRotate(tx, p.TenantID, p.KeyID, in.KeyID)
	if err != nil {
		return nil, err
	}
	if err := grantable(p, old.Scopes); err != nil {
		return nil, err
	}
	in.KeyID = old.ID
	return e.rotateAPIKey(tx, p.TenantID, "", in)
}

// RevokeAPIKey deletes a key of p's tenant at once (DELETE /v1/tenant/api-keys/:id,
// apikeys:manage); an unknown id, or another tenant's key, is not found.
func (e *Service) RevokeAPIKey(ctx context.Context, p model.Principal, id string, w *model.Write) (*model.APIKey, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.APIKey, error) { return e.revokeAPIKey(tx, p, id) })
}

// revokeAPIKey is RevokeAPIKey within tx.
func (e *Service) revokeAPIKey(tx model.Tx, p model.Principal, id string) (*model.APIKey, error) {
	if err := p.Require(model.PermAPIKeysManage); err != nil {
		return nil, err
	}
	if !model.ValidID(id) {
		return nil, model.NotFound("api key")
	}
	k, err := tx.APIKey(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	if k.TenantID != p.TenantID {
		return nil, model.NotFound("api key")
	}
	return &k.APIKey, tx.DeleteAPIKey(p.TenantID, id)
}

// apiKeyDeadline is the key of an API key's expiry among the engine's deadlines.
func apiKeyDeadline(id string) string { return "apikey/" + id }

// keyActive reports whether a key is usable now: before its expiry, on the monotonic
// clock when this run set the expiry (a rotation's grace), on its stored time otherwise
// (deadlines.go).
func (e *Service) keyActive(k *model.APIKey) bool {
	return k.ExpiresAt == nil || e.timeLeft(apiKeyDeadline(k.ID), k.ExpiresAt.Time) > 0
}
