package store

import (
	"bytes"
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The tenants, their users and the login guards of model.Tx.

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
	tb.FillPercent = tenantFill
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
