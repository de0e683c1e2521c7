package store

import (
	"fmt"
	"os"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// FootprintReport is where the bytes of the database file go: the pages of each kind of
// bucket and the pages no bucket holds (free pages, and the freelist's own).
type FootprintReport struct {
	// FileBytes is the file's size on disk.
	FileBytes int64 `json:"file_bytes"`
	PageSize  int   `json:"page_size"`
	// Pages is the file's high-water mark in pages; the file may be longer (bbolt grows
	// it ahead of use).
	Pages int `json:"pages"`
	// FreePages are the pages below the high-water mark that no bucket holds: bbolt's free
	// and pending pages and the freelist's own pages (the meta pages excluded).
	FreePages int `json:"free_pages"`
	// Buckets has one row per kind of bucket, largest first: a root bucket by its name, a
	// tenant's bucket as t/*/NAME, summed over the tenants; "t" is the tenants' own buckets
	// (the pages that name each tenant's buckets) and "root" the root's pages.
	Buckets []BucketFootprint `json:"buckets"`
}

// BucketFootprint is the footprint of one kind of bucket (bbolt's BucketStats, summed).
type BucketFootprint struct {
	Name string `json:"name"`
	// Buckets counts the buckets of this kind, Inline those stored inside their parent's
	// page (which then count no page of their own).
	Buckets int `json:"buckets"`
	Inline  int `json:"inline"`
	Keys    int `json:"keys"`
	// BranchPages and LeafPages count overflow pages too.
	BranchPages int `json:"branch_pages"`
	LeafPages   int `json:"leaf_pages"`
	// Bytes are the bytes of its pages, InUse those that hold page headers, keys and
	// values; FillPct is InUse over Bytes.
	Bytes   int64   `json:"bytes"`
	InUse   int64   `json:"in_use"`
	FillPct float64 `json:"fill_pct"`
}

// add sums a bbolt BucketStats into f (an inline bucket's bytes are in its parent's page).
func (f *BucketFootprint) add(s bolt.BucketStats) {
	f.Buckets += s.BucketN
	f.Inline += s.InlineBucketN
	f.Keys += s.KeyN
	f.BranchPages += s.BranchPageN + s.BranchOverflowN
	f.LeafPages += s.LeafPageN + s.LeafOverflowN
	f.Bytes += int64(s.BranchAlloc + s.LeafAlloc)
	f.InUse += int64(s.BranchInuse + s.LeafInuse)
}

// plus adds o's figures to f (sign 1), or takes them out (sign -1: bbolt's stats of a
// bucket hold those of the buckets inside it).
func (f *BucketFootprint) plus(o *BucketFootprint, sign int) {
	f.Buckets += sign * o.Buckets
	f.Inline += sign * o.Inline
	f.Keys += sign * o.Keys
	f.BranchPages += sign * o.BranchPages
	f.LeafPages += sign * o.LeafPages
	f.Bytes += int64(sign) * o.Bytes
	f.InUse += int64(sign) * o.InUse
}

// Footprint reads the pages of every bucket in one read transaction (it walks them all:
// as long as a check of the file).
func (db *DB) Footprint() (*FootprintReport, error) {
	r := &FootprintReport{PageSize: db.bolt.Info().PageSize}
	err := db.bolt.View(func(btx *bolt.Tx) error {
		fi, err := os.Stat(db.path)
		if err != nil {
			return err
		}
		r.FileBytes = fi.Size()
		r.Pages = int(btx.Size() / int64(r.PageSize))
		kinds := map[string]*BucketFootprint{}
		kind := func(name string) *BucketFootprint {
			if kinds[name] == nil {
				kinds[name] = &BucketFootprint{Name: name}
			}
			return kinds[name]
		}
		all := &BucketFootprint{Name: "root"}
		all.add(btx.Cursor().Bucket().Stats())
		err = btx.ForEach(func(name []byte, b *bolt.Bucket) error {
			f := kind(string(name))
			f.add(b.Stats())
			all.plus(f, -1)
			if string(name) != string(bucketTenantRoot) {
				return nil
			}
			return b.ForEachBucket(func(tk []byte) error {
				tb := b.Bucket(tk)
				return tb.ForEachBucket(func(n []byte) error {
					nested := &BucketFootprint{}
					nested.add(tb.Bucket(n).Stats())
					f.plus(nested, -1)
					kind("t/*/"+string(n)).plus(nested, 1)
					return nil
				})
			})
		})
		if err != nil {
			return err
		}
		// The root is no bucket of its own: its row is the pages that name the root buckets.
		all.Buckets, all.Inline = 0, 0
		kinds[all.Name] = all
		used := 2 // the meta pages
		for _, f := range kinds {
			if f.Bytes > 0 {
				f.FillPct = float64(f.InUse) / float64(f.Bytes) * 100
			}
			used += f.BranchPages + f.LeafPages
			r.Buckets = append(r.Buckets, *f)
		}
		r.FreePages = r.Pages - used
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(r.Buckets, func(i, j int) bool {
		a, b := r.Buckets[i], r.Buckets[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Name < b.Name
	})
	return r, nil
}

// FormatFootprint renders a footprint report for people: one line per kind of bucket that
// holds a page or a key.
func FormatFootprint(r *FootprintReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "file: %d bytes; %d pages of %d bytes up to the high-water mark, %d of them free (%.1f%%)\n",
		r.FileBytes, r.Pages, r.PageSize, r.FreePages, pct(int64(r.FreePages), int64(r.Pages)))
	fmt.Fprintf(&b, "%-34s %10s %8s %9s %9s %14s %6s %6s\n", "bucket", "keys", "branch", "leaf", "buckets", "bytes", "file%", "fill%")
	for _, f := range r.Buckets {
		if f.Bytes == 0 && f.Keys == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-34s %10d %8d %9d %9d %14d %6.1f %6.1f\n", f.Name, f.Keys, f.BranchPages, f.LeafPages,
			f.Buckets, f.Bytes, pct(f.Bytes, r.FileBytes), f.FillPct)
	}
	return b.String()
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b) * 100
}
