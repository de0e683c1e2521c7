package store

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The API keys of model.Tx.

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

// TouchAPIKey implements model.Tx: the record is rewritten without t.changed.
func (t *tx) TouchAPIKey(hash string, at time.Time, every time.Duration) (bool, error) {
	k, err := t.APIKeyByHash(hash)
	if err != nil {
		return false, err
	}
	if k.LastUsedAt != nil && at.Sub(k.LastUsedAt.Time) < every {
		return false, nil
	}
	k.LastUsedAt = model.TimePtr(at)
	return true, putJSON(t.btx.Bucket(bucketAPIKeys), []byte(hash), k)
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
