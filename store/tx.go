package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// tx implements model.Tx over a bbolt transaction. This file holds the transaction and the
// helpers every area uses (tenant buckets, JSON values, newest-first pages, meta); each
// tx_<area>.go holds the methods of one area of model.Tx.
type tx struct {
	btx   *bolt.Tx
	db    *DB // for the directory versions; nil in some tests
	local model.TxLocal
	// lastID and last are the tenant bucket tenant found last: the writes of a use case
	// touch one tenant, through several of its buckets. A tenant's bucket is never
	// deleted.
	lastID string
	last   *bolt.Bucket
}

var _ model.Tx = (*tx)(nil)

func (t *tx) OnCommit(fn func()) { t.btx.OnCommit(fn) }

// Local implements model.Tx: a Batch call's run has its own tx, so its own local state.
func (t *tx) Local() *model.TxLocal { return &t.local }

// tenant returns the bucket of a tenant, or not_found.
func (t *tx) tenant(tenantID string) (*bolt.Bucket, error) {
	if t.last != nil && t.lastID == tenantID {
		return t.last, nil
	}
	k, err := idKey(tenantID)
	if err != nil {
		return nil, model.NotFound("tenant")
	}
	b := t.btx.Bucket(bucketTenantRoot).Bucket(k)
	if b == nil {
		return nil, model.NotFound("tenant")
	}
	b.FillPercent = tenantFill
	t.lastID, t.last = tenantID, b
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
