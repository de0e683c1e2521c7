package postgres

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/jackc/pgx/v5"
)

// The tenants, their users, login guards, API keys, auth tokens and idempotency records
// of model.Tx. Slugs, emails and API key hashes are global lookups: small tables of
// their own (tenant_slugs, user_emails, api_key_hashes) beside the tenant's records.

func (t *tx) Tenant(id string) (*model.Tenant, error) {
	tn, err := t.canonTenant(id) // a write transaction locks it: its update runs as if alone
	if err != nil {
		return nil, err
	}
	return getDoc[model.Tenant](t, "tenant", "SELECT doc FROM tenants WHERE tenant_id = $1", tn)
}

func (t *tx) TenantBySlug(slug string) (*model.Tenant, error) {
	var id string
	found, err := t.scan("SELECT tenant_id FROM tenant_slugs WHERE slug = $1", []any{slug}, &id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound("tenant " + slug)
	}
	return t.Tenant(id)
}

func (t *tx) PutTenant(tn *model.Tenant) error {
	t.changed(tn.ID)
	id, err := t.canonTenant(tn.ID)
	if err != nil {
		return err
	}
	var owner string
	found, err := t.scan("SELECT tenant_id FROM tenant_slugs WHERE slug = $1", []any{tn.Slug}, &owner)
	if err != nil {
		return err
	}
	if found && owner != id {
		return model.Errorf(model.KindConflict, "slug %s is taken", model.Quote(tn.Slug))
	}
	doc, err := jsonOf(tn)
	if err != nil {
		return err
	}
	if _, err := t.exec(`DELETE FROM tenant_slugs WHERE tenant_id = $1 AND slug <> $2`, id, tn.Slug); err != nil {
		return err
	}
	if !found {
		if _, err := t.exec(`INSERT INTO tenant_slugs (slug, tenant_id) VALUES ($1, $2)`, tn.Slug, id); err != nil {
			return err
		}
	}
	_, err = t.exec(`INSERT INTO tenants (tenant_id, slug, doc) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id) DO UPDATE SET slug = excluded.slug, doc = excluded.doc`, id, tn.Slug, doc)
	if err == nil {
		// This transaction holds the row it wrote: its other writes of the tenant go as
		// VALUES (ofTenant), and its stream starts at 0 when the tenant is new.
		if _, ok := t.heads[id]; !ok && t.rw {
			if t.heads == nil {
				t.heads = map[string]int64{}
			}
			t.heads[id] = 0
		}
		t.exists(id)
	}
	return err
}

func (t *tx) Tenants() ([]model.Tenant, error) {
	out, err := docs[model.Tenant](t, "SELECT doc FROM tenants ORDER BY tenant_id")
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

func (t *tx) UserAccount(tenantID, id string) (*model.UserAccount, error) {
	tn, uidv, err := t.ids(tenantID, id, "user")
	if err != nil {
		return nil, err
	}
	return getDoc[model.UserAccount](t, "user", "SELECT doc FROM users WHERE tenant_id = $1 AND id = $2", tn, uidv)
}

func (t *tx) UserAccountByEmail(email string) (*model.UserAccount, error) {
	var tn, id string
	found, err := t.scan("SELECT tenant_id, user_id FROM user_emails WHERE email = $1", []any{email}, &tn, &id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound("user")
	}
	return t.UserAccount(tn, id)
}

func (t *tx) PutUserAccount(u *model.UserAccount) error {
	t.changed(u.TenantID)
	tn, id, err := t.ids(u.TenantID, u.ID, "user")
	if err != nil {
		return err
	}
	var ownerT, ownerU string
	found, err := t.scan("SELECT tenant_id, user_id FROM user_emails WHERE email = $1", []any{u.Email}, &ownerT, &ownerU)
	if err != nil {
		return err
	}
	if found && (ownerT != tn || ownerU != id) {
		return model.Errorf(model.KindConflict, "a user with email %s exists", u.Email)
	}
	doc, err := jsonOf(u)
	if err != nil {
		return err
	}
	if err := t.put(`INSERT INTO users (tenant_id, id, email, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET email = excluded.email, doc = excluded.doc`, tn, id, u.Email, doc); err != nil {
		return err
	}
	if _, err := t.exec(`DELETE FROM user_emails WHERE tenant_id = $1 AND user_id = $2 AND email <> $3`, tn, id, u.Email); err != nil {
		return err
	}
	if !found {
		_, err = t.exec(`INSERT INTO user_emails (email, tenant_id, user_id) VALUES ($1, $2, $3)`, u.Email, tn, id)
	}
	return err
}

func (t *tx) Users(tenantID string, p model.Page) ([]model.User, string, error) {
	accounts, next, err := newest[model.UserAccount](t, "users", tenantID, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]model.User, len(accounts))
	for i := range accounts {
		out[i] = accounts[i].User
	}
	return out, next, nil
}

func (t *tx) LoginGuard(email string) (model.LoginGuard, error) {
	g, err := getDoc[model.LoginGuard](t, "login guard", "SELECT doc FROM login_guards WHERE email = $1"+t.forUpdate(), email)
	t.readRow("login_guards/"+email, err == nil)
	if model.IsKind(err, model.KindNotFound) {
		return model.LoginGuard{}, nil
	}
	if err != nil {
		return model.LoginGuard{}, err
	}
	return *g, nil
}

func (t *tx) PutLoginGuard(email string, g model.LoginGuard) error {
	if g.IsZero() {
		_, err := t.exec("DELETE FROM login_guards WHERE email = $1", email)
		return err
	}
	doc, err := jsonOf(g)
	if err != nil {
		return err
	}
	if t.claimRow("login_guards/" + email) {
		_, err = t.exec(`INSERT INTO login_guards (email, doc) VALUES ($1, $2)`, email, doc)
		return err
	}
	_, err = t.exec(`INSERT INTO login_guards (email, doc) VALUES ($1, $2)
		ON CONFLICT (email) DO UPDATE SET doc = excluded.doc`, email, doc)
	return err
}

func (t *tx) APIKeyByHash(hash string) (*model.APIKeyRecord, error) {
	var tn, id string
	found, err := t.scan("SELECT tenant_id, key_id FROM api_key_hashes WHERE hash = $1", []any{hash}, &tn, &id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound("api key")
	}
	return t.APIKey(tn, id)
}

func (t *tx) APIKey(tenantID, id string) (*model.APIKeyRecord, error) {
	tn, kid, err := t.ids(tenantID, id, "api key")
	if err != nil {
		return nil, err
	}
	return getDoc[model.APIKeyRecord](t, "api key", "SELECT doc FROM api_keys WHERE tenant_id = $1 AND id = $2", tn, kid)
}

func (t *tx) PutAPIKey(rec *model.APIKeyRecord) error {
	t.changed(rec.TenantID)
	tn, id, err := t.ids(rec.TenantID, rec.ID, "api key")
	if err != nil {
		return err
	}
	doc, err := jsonOf(rec)
	if err != nil {
		return err
	}
	if err := t.put(`INSERT INTO api_keys (tenant_id, id, hash, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET hash = excluded.hash, doc = excluded.doc`, tn, id, rec.Hash, doc); err != nil {
		return err
	}
	if _, err := t.exec(`DELETE FROM api_key_hashes WHERE tenant_id = $1 AND key_id = $2 AND hash <> $3`, tn, id, rec.Hash); err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO api_key_hashes (hash, tenant_id, key_id) VALUES ($1, $2, $3)
		ON CONFLICT (hash) DO UPDATE SET tenant_id = excluded.tenant_id, key_id = excluded.key_id`, rec.Hash, tn, id)
	return err
}

// TouchAPIKey implements model.Tx in one statement, without t.changed (no notification):
// the condition on the stored last use makes the processes of a tier write it at most once
// per every between them. The times compare as text (model.TimeLayout: UTC, fixed width),
// not cast to timestamptz: Citus refuses a STABLE function of a column in an UPDATE.
func (t *tx) TouchAPIKey(hash string, at time.Time, every time.Duration) (bool, error) {
	last, err := jsonOf(model.TimePtr(at))
	if err != nil {
		return false, err
	}
	var wrote, found bool
	ok, err := t.scan(`WITH k AS (SELECT tenant_id, key_id FROM api_key_hashes WHERE hash = $1),
		u AS (UPDATE api_keys a SET doc = jsonb_set(a.doc, '{last_used_at}', $2::jsonb)
			FROM k WHERE a.tenant_id = k.tenant_id AND a.id = k.key_id
			AND (a.doc->>'last_used_at' IS NULL OR a.doc->>'last_used_at' <= $3)
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM k)`, []any{hash, last, at.Add(-every).UTC().Format(model.TimeLayout)}, &wrote, &found)
	if err != nil {
		return false, err
	}
	if !ok || !found {
		return false, model.NotFound("api key")
	}
	return wrote, nil
}

func (t *tx) DeleteAPIKey(tenantID, id string) error {
	t.changed(tenantID)
	rec, err := t.APIKey(tenantID, id)
	if err != nil {
		return err
	}
	tn, kid, _ := t.ids(tenantID, id, "api key")
	if _, err := t.exec("DELETE FROM api_keys WHERE tenant_id = $1 AND id = $2", tn, kid); err != nil {
		return err
	}
	_, err = t.exec("DELETE FROM api_key_hashes WHERE hash = $1", rec.Hash)
	return err
}

func (t *tx) APIKeys(tenantID string) ([]model.APIKeyRecord, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	out, err := docs[model.APIKeyRecord](t, "SELECT doc FROM api_keys WHERE tenant_id = $1 ORDER BY id DESC", tn)
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

func (t *tx) AuthToken(hash string) (*model.AuthToken, error) {
	return getDoc[model.AuthToken](t, "token", "SELECT doc FROM auth_tokens WHERE hash = $1"+t.forUpdate(), hash)
}

func (t *tx) PutAuthToken(hash string, a *model.AuthToken) error {
	doc, err := jsonOf(a)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO auth_tokens (hash, doc) VALUES ($1, $2)
		ON CONFLICT (hash) DO UPDATE SET doc = excluded.doc`, hash, doc)
	return err
}

func (t *tx) DeleteAuthToken(hash string) error {
	_, err := t.exec("DELETE FROM auth_tokens WHERE hash = $1", hash)
	return err
}

func (t *tx) Idempotency(tenantID, key string) (*model.IdempotencyRecord, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return nil, err
	}
	r, err := getDoc[model.IdempotencyRecord](t, "idempotency record", "SELECT doc FROM idempotency WHERE tenant_id = $1 AND key = $2", tn, key)
	if model.IsKind(err, model.KindNotFound) {
		return nil, t.requireTenant(tn)
	}
	return r, err
}

func (t *tx) PutIdempotency(tenantID, key string, r *model.IdempotencyRecord) error {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return err
	}
	doc, err := jsonOf(r)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO idempotency (tenant_id, key, created_at, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, key) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc`,
		tn, key, r.CreatedAt.Time, doc)
}

// ExpireIdempotency deletes tenant by tenant: no statement writes across tenants.
func (t *tx) ExpireIdempotency(before time.Time) (int, error) {
	var tenants []string
	err := t.each("SELECT tenant_id FROM tenants ORDER BY tenant_id", nil, func(r pgx.Rows) (bool, error) {
		var id string
		err := r.Scan(&id)
		tenants = append(tenants, id)
		return true, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, tn := range tenants {
		tag, err := t.exec("DELETE FROM idempotency WHERE tenant_id = $1 AND created_at < $2", tn, before)
		if err != nil {
			return 0, err
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}
