package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// tx implements engine.Tx over a bbolt transaction.
type tx struct {
	btx *bolt.Tx
	db  *DB // for the directory versions; nil in some tests
}

var _ model.Tx = (*tx)(nil)

func (t *tx) OnCommit(fn func()) { t.btx.OnCommit(fn) }

// tenant returns the bucket of a tenant, or not_found.
func (t *tx) tenant(tenantID string) (*bolt.Bucket, error) {
	k, err := idKey(tenantID)
	if err != nil {
		return nil, model.NotFound("tenant")
	}
	b := t.btx.Bucket(bucketTenantRoot).Bucket(k)
	if b == nil {
		return nil, model.NotFound("tenant")
	}
	return b, nil
}

// tbucket returns a nested bucket of a tenant.
func (t *tx) tbucket(tenantID string, name []byte) (*bolt.Bucket, error) {
	b, err := t.tenant(tenantID)
	if err != nil {
		return nil, err
	}
	return b.Bucket(name), nil
}

// getJSON decodes the value at k in b into v; found is false when there is none.
func getJSON(b *bolt.Bucket, k []byte, v any) (found bool, err error) {
	raw := b.Get(k)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decoding record %x: %w", k, err)
	}
	return true, nil
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

func (t *tx) Meta(key string) ([]byte, error) {
	v := t.btx.Bucket(bucketMeta).Get([]byte(key))
	if v == nil {
		return nil, nil
	}
	return bytes.Clone(v), nil
}

func (t *tx) PutMeta(key string, value []byte) error {
	return t.btx.Bucket(bucketMeta).Put([]byte(key), value)
}

func (t *tx) Tenant(id string) (*model.Tenant, error) {
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("tenant")
	}
	var out model.Tenant
	if ok, err := getJSON(t.btx.Bucket(bucketTenants), k, &out); !ok || err != nil {
		if err == nil {
			err = model.NotFound("tenant")
		}
		return nil, err
	}
	return &out, nil
}

func (t *tx) TenantBySlug(slug string) (*model.Tenant, error) {
	id := t.btx.Bucket(bucketSlugs).Get([]byte(slug))
	if id == nil {
		return nil, model.NotFound("tenant " + slug)
	}
	return t.Tenant(idString(id))
}

func (t *tx) PutTenant(tn *model.Tenant) error {
	t.changed(tn.ID)
	k, err := idKey(tn.ID)
	if err != nil {
		return err
	}
	slugs := t.btx.Bucket(bucketSlugs)
	if owner := slugs.Get([]byte(tn.Slug)); owner != nil && !bytes.Equal(owner, k) {
		return model.Errorf(model.KindConflict, "slug %s is taken", model.Quote(tn.Slug))
	}
	var old model.Tenant
	if ok, err := getJSON(t.btx.Bucket(bucketTenants), k, &old); err != nil {
		return err
	} else if ok && old.Slug != tn.Slug {
		if err := slugs.Delete([]byte(old.Slug)); err != nil {
			return err
		}
	}
	if err := slugs.Put([]byte(tn.Slug), k); err != nil {
		return err
	}
	tb, err := t.btx.Bucket(bucketTenantRoot).CreateBucketIfNotExists(k)
	if err != nil {
		return err
	}
	for _, name := range tenantBuckets {
		if _, err := tb.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return putJSON(t.btx.Bucket(bucketTenants), k, tn)
}

func (t *tx) Tenants() ([]model.Tenant, error) {
	var out []model.Tenant
	err := t.btx.Bucket(bucketTenants).ForEach(func(_, v []byte) error {
		var tn model.Tenant
		if err := json.Unmarshal(v, &tn); err != nil {
			return err
		}
		out = append(out, tn)
		return nil
	})
	return out, err
}

func (t *tx) UserAccount(tenantID, id string) (*model.UserAccount, error) {
	b, err := t.tbucket(tenantID, tbUsers)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("user")
	}
	var u model.UserAccount
	if ok, err := getJSON(b, k, &u); !ok || err != nil {
		if err == nil {
			err = model.NotFound("user")
		}
		return nil, err
	}
	return &u, nil
}

func (t *tx) UserAccountByEmail(email string) (*model.UserAccount, error) {
	v := t.btx.Bucket(bucketUsersByEmail).Get([]byte(email))
	if len(v) != 32 {
		return nil, model.NotFound("user")
	}
	return t.UserAccount(idString(v[:16]), idString(v[16:]))
}

func (t *tx) PutUserAccount(u *model.UserAccount) error {
	t.changed(u.TenantID)
	b, err := t.tbucket(u.TenantID, tbUsers)
	if err != nil {
		return err
	}
	ref, err := pair(u.TenantID, u.ID)
	if err != nil {
		return err
	}
	emails := t.btx.Bucket(bucketUsersByEmail)
	if owner := emails.Get([]byte(u.Email)); owner != nil && !bytes.Equal(owner, ref) {
		return model.Errorf(model.KindConflict, "a user with email %s exists", u.Email)
	}
	var old model.UserAccount
	if ok, err := getJSON(b, ref[16:], &old); err != nil {
		return err
	} else if ok && old.Email != u.Email {
		if err := emails.Delete([]byte(old.Email)); err != nil {
			return err
		}
	}
	if err := emails.Put([]byte(u.Email), ref); err != nil {
		return err
	}
	return putJSON(b, ref[16:], u)
}

func (t *tx) Users(tenantID string, p model.Page) ([]model.User, string, error) {
	b, err := t.tbucket(tenantID, tbUsers)
	if err != nil {
		return nil, "", err
	}
	out := []model.User{}
	next, err := listNewestFirst(b, p, 16, func(_, v []byte) error {
		var u model.UserAccount
		if err := json.Unmarshal(v, &u); err != nil {
			return err
		}
		out = append(out, u.User)
		return nil
	})
	return out, next, err
}

// listNewestFirst walks b backwards from the page's cursor, calling fn for the entries
// the page takes (Page.Full, on the stored JSON), and returns the cursor of the next page
// ("" when there is none).
func listNewestFirst(b *bolt.Bucket, p model.Page, keyLen int, fn func(k, v []byte) error) (string, error) {
	c := b.Cursor()
	var k, v []byte
	if p.Cursor == "" {
		k, v = c.Last()
	} else {
		after, err := decodeCursor(p.Cursor, keyLen)
		if err != nil {
			return "", err
		}
		k, v = c.Seek(after)
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, after) >= 0 {
			k, v = c.Prev()
		}
	}
	var last []byte
	for n, size := 0, 0; k != nil; k, v = c.Prev() {
		if p.Full(n, size, len(v)) {
			return encodeCursor(last), nil
		}
		if err := fn(k, v); err != nil {
			return "", err
		}
		last = bytes.Clone(k)
		n, size = n+1, size+len(v)
	}
	return "", nil
}

func (t *tx) LoginGuard(email string) (model.LoginGuard, error) {
	var g model.LoginGuard
	_, err := getJSON(t.btx.Bucket(bucketLoginGuards), []byte(email), &g)
	return g, err
}

func (t *tx) PutLoginGuard(email string, g model.LoginGuard) error {
	b := t.btx.Bucket(bucketLoginGuards)
	if g.IsZero() {
		return b.Delete([]byte(email))
	}
	return putJSON(b, []byte(email), g)
}

func (t *tx) APIKeyByHash(hash string) (*model.APIKeyRecord, error) {
	var k model.APIKeyRecord
	if ok, err := getJSON(t.btx.Bucket(bucketAPIKeys), []byte(hash), &k); !ok || err != nil {
		if err == nil {
			err = model.NotFound("api key")
		}
		return nil, err
	}
	return &k, nil
}

func (t *tx) APIKey(tenantID, id string) (*model.APIKeyRecord, error) {
	b, err := t.tbucket(tenantID, tbAPIKeys)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("api key")
	}
	hash := b.Get(k)
	if hash == nil {
		return nil, model.NotFound("api key")
	}
	return t.APIKeyByHash(string(hash))
}

func (t *tx) PutAPIKey(rec *model.APIKeyRecord) error {
	t.changed(rec.TenantID)
	b, err := t.tbucket(rec.TenantID, tbAPIKeys)
	if err != nil {
		return err
	}
	k, err := idKey(rec.ID)
	if err != nil {
		return err
	}
	if err := b.Put(k, []byte(rec.Hash)); err != nil {
		return err
	}
	return putJSON(t.btx.Bucket(bucketAPIKeys), []byte(rec.Hash), rec)
}

func (t *tx) DeleteAPIKey(tenantID, id string) error {
	t.changed(tenantID)
	rec, err := t.APIKey(tenantID, id)
	if err != nil {
		return err
	}
	b, _ := t.tbucket(tenantID, tbAPIKeys)
	k, _ := idKey(id)
	if err := b.Delete(k); err != nil {
		return err
	}
	return t.btx.Bucket(bucketAPIKeys).Delete([]byte(rec.Hash))
}

func (t *tx) APIKeys(tenantID string) ([]model.APIKeyRecord, error) {
	b, err := t.tbucket(tenantID, tbAPIKeys)
	if err != nil {
		return nil, err
	}
	var out []model.APIKeyRecord
	c := b.Cursor()
	for k, hash := c.Last(); k != nil; k, hash = c.Prev() {
		rec, err := t.APIKeyByHash(string(hash))
		if err != nil {
			return nil, err
		}
		out = append(out, *rec)
	}
	return out, nil
}

func (t *tx) Idempotency(tenantID, key string) (*model.IdempotencyRecord, error) {
	b, err := t.tbucket(tenantID, tbIdempotency)
	if err != nil {
		return nil, err
	}
	var r model.IdempotencyRecord
	if ok, err := getJSON(b, []byte(key), &r); !ok || err != nil {
		return nil, err
	}
	return &r, nil
}

func (t *tx) PutIdempotency(tenantID, key string, r *model.IdempotencyRecord) error {
	b, err := t.tbucket(tenantID, tbIdempotency)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(key), r)
}

func (t *tx) Team(tenantID, id string) (*model.Team, error) {
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("team")
	}
	var tm model.Team
	if ok, err := getJSON(b, k, &tm); !ok || err != nil {
		if err == nil {
			err = model.NotFound("team")
		}
		return nil, err
	}
	return &tm, nil
}

func (t *tx) PutTeam(tenantID string, tm *model.Team) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return err
	}
	k, err := idKey(tm.ID)
	if err != nil {
		return err
	}
	return putJSON(b, k, tm)
}

func (t *tx) Teams(tenantID string) ([]model.Team, error) {
	b, err := t.tbucket(tenantID, tbTeams)
	if err != nil {
		return nil, err
	}
	out := []model.Team{}
	if t.db == nil {
		err = b.ForEach(func(_, v []byte) error {
			var tm model.Team
			if err := json.Unmarshal(v, &tm); err != nil {
				return err
			}
			out = append(out, tm)
			return nil
		})
		return out, err
	}
	tk, err := idKey(tenantID)
	if err != nil {
		return nil, err
	}
	err = b.ForEach(func(k, v []byte) error {
		tm, err := t.db.teams.decode(tk, k, v)
		if err != nil {
			return err
		}
		out = append(out, tm)
		return nil
	})
	return out, err
}
