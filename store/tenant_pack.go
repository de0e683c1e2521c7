package store

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// A tenant's bucket holds one key per nested bucket (35 of them), with the small ones
// inline. Every commit that writes an event rewrites the pages of that bucket that name
// the buckets it wrote (events, its indexes, alerts, usage), and the branch above them.
// While a tenant is young its event, alert and index buckets are inline and grow towards
// a quarter of a page each before they get pages of their own: the tenant's bucket then
// passes a page and bbolt splits it in two, and never joins the halves again once those
// buckets have moved out (bbolt merges a node only when it falls under a quarter of a
// page). From then on each commit that touches the tenant writes three pages (a branch
// and both halves) where one would do. packTenants rebuilds such a bucket as one page
// (docs/decisions/0246-one-page-per-tenant.md).

// packRoom is what a tenant bucket's keys and values may take to fit on one page: a page
// less its header and a margin, so that it does not split again at the next write.
const packRoom = 3584

// tenantFill is the fill of a tenant's bucket: when it must split, the first page is
// filled before a second one is started, so the buckets an event writes (whose names
// come first: alerts, events) keep sharing a page.
const tenantFill = 1.0

// packCheckEvery is how many group commits pass between two looks at the tenants'
// buckets: a look reads each tenant's root page (and, for a split one, its keys) while it
// holds the write lock, and a rewrite is rare (once in a tenant's youth).
const packCheckEvery = 128

// needsPack reports whether a tenant's bucket is split over several pages while its keys
// would fit on one. btx must be the writer's (Tx.Page), or no one else may be writing.
func needsPack(btx *bolt.Tx, tb *bolt.Bucket) bool {
	root := tb.RootPage()
	if root == 0 {
		return false // inline
	}
	p, err := btx.Page(int(root))
	if err != nil || p == nil || p.Type != "branch" {
		return false
	}
	size := 0
	c := tb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if size += 16 + len(k) + len(v); size > packRoom {
			return false
		}
	}
	return true
}

// packTenants rebuilds, in btx, the bucket of every tenant that needsPack, and answers
// how many it rebuilt. The nested buckets move as they are (bbolt's MoveBucket carries a
// bucket's root page, or an inline bucket's bytes): nothing below a tenant's bucket is
// copied.
func packTenants(btx *bolt.Tx) (int, error) {
	root := btx.Bucket(bucketTenantRoot)
	var split [][]byte
	err := root.ForEachBucket(func(k []byte) error {
		if needsPack(btx, root.Bucket(k)) {
			split = append(split, bytes.Clone(k))
		}
		return nil
	})
	if err != nil || len(split) == 0 {
		return 0, err
	}
	for _, k := range split {
		if err := packTenant(root, k); err != nil {
			return 0, err
		}
	}
	return len(split), nil
}

// tmpTenantKey names the bucket a tenant's buckets wait in while its own is rebuilt: 17
// bytes, so never a tenant's 16-byte key.
var tmpTenantKey = []byte("\x00packing-tenant\x00\x00")

func packTenant(root *bolt.Bucket, k []byte) error {
	old := root.Bucket(k)
	var names [][]byte
	if err := old.ForEachBucket(func(name []byte) error {
		names = append(names, bytes.Clone(name))
		return nil
	}); err != nil {
		return err
	}
	tmp, err := root.CreateBucket(tmpTenantKey)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := old.MoveBucket(name, tmp); err != nil {
			return err
		}
	}
	if err := root.DeleteBucket(k); err != nil {
		return err
	}
	fresh, err := root.CreateBucket(k)
	if err != nil {
		return err
	}
	fresh.FillPercent = tenantFill
	for _, name := range names {
		if err := tmp.MoveBucket(name, fresh); err != nil {
			return err
		}
	}
	return root.DeleteBucket(tmpTenantKey)
}
