package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes is how many bytes of keys and values one transaction of the copy holds:
// the copy commits as it goes, so its memory stays small whatever the file's size.
const compactTxBytes = 64 << 20

// CompactResult tells what a compaction did.
type CompactResult struct {
	Path string `json:"path"`
	// Before and After are the file's sizes; Records the keys and nested buckets copied.
	Before  int64 `json:"before_bytes"`
	After   int64 `json:"after_bytes"`
	Records int64 `json:"records"`
	// Kept is the previous file, when asked to keep it ("" when it was removed).
	Kept       string  `json:"kept,omitempty"`
	DurationMs float64 `json:"duration_ms"`
}

// Compact rewrites the database of dataDir into a new file with no free pages, checks
// that the copy holds the same records (every key, value and bucket sequence, by a
// digest of both files) and passes Check, and only then puts it in place of the old file
// in one rename. Until that rename the old file is the database, untouched: a compaction
// that is interrupted or fails leaves it as it was (a leftover copy is removed by the next
// run). keep keeps the old file beside the new one, named with the time. The data
// directory must not be in use: Compact holds bbolt's lock for the whole run.
func Compact(dataDir string, keep bool, lockTimeout time.Duration) (*CompactResult, error) {
	start := time.Now()
	path := Path(dataDir)
	tmp := path + ".compact"
	_ = os.Remove(tmp) // a copy left by an interrupted run
	src, err := OpenFile(path, Options{LockTimeout: lockTimeout, exclusive: true})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	res := &CompactResult{Path: path, Before: fi.Size()}
	st := src.bolt.Stats()
	live := fi.Size() - int64(st.FreePageN+st.PendingPageN)*int64(src.bolt.Info().PageSize)
	if free, err := freeSpace(dataDir); err == nil && free < live {
		return nil, fmt.Errorf("compacting needs about %d bytes free beside the database; %s has %d", live, dataDir, free)
	}
	if err := copyCompact(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	n, err := verifyCompact(src, tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	res.Records = n
	if keep {
		res.Kept = fmt.Sprintf("%s.before-compact-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Link(path, res.Kept); err != nil {
			_ = os.Remove(tmp)
			return nil, fmt.Errorf("keeping the old file: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	if err := syncDir(dataDir); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil {
		res.After = fi.Size()
	}
	res.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// copyCompact copies src into a new file at dst, fsynced.
func copyCompact(src *DB, dst string) error {
	// NoSync while copying (the file is not the database until it is renamed), one fsync
	// at the end.
	out, err := bolt.Open(dst, 0o600, &bolt.Options{NoSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	if err := bolt.Compact(out, src.bolt, compactTxBytes); err != nil {
		_ = out.Close()
		return fmt.Errorf("copying: %w", err)
	}
	out.NoSync = false
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// verifyCompact checks the copy at path against src: the same digest of every bucket,
// key, value and sequence, and a clean Check. It returns the records counted.
func verifyCompact(src *DB, path string) (int64, error) {
	want, n, err := digest(src.bolt)
	if err != nil {
		return 0, err
	}
	cp, err := OpenFile(path, Options{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("opening the copy: %w", err)
	}
	defer cp.Close()
	got, m, err := digest(cp.bolt)
	if err != nil {
		return 0, fmt.Errorf("reading the copy: %w", err)
	}
	if !bytes.Equal(got, want) || m != n {
		return 0, errors.New("the copy does not hold the same records as the database: the database is left as it was")
	}
	report, err := cp.Check()
	if err != nil {
		return 0, err
	}
	if !report.OK {
		return 0, fmt.Errorf("the copy does not pass check: the database is left as it was\n%s", FormatCheck(report))
	}
	return n, nil
}

// digest hashes every bucket name, sequence, key and value of db in order, and counts
// the keys and nested buckets.
func digest(db *bolt.DB) ([]byte, int64, error) {
	h := sha256.New()
	var n int64
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return digestBucket(h, name, b, &n)
		})
	})
	return h.Sum(nil), n, err
}

func digestBucket(h hash.Hash, name []byte, b *bolt.Bucket, n *int64) error {
	field(h, []byte("bucket"))
	field(h, name)
	field(h, binary.BigEndian.AppendUint64(nil, b.Sequence()))
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		*n++
		if v == nil {
			if err := digestBucket(h, k, b.Bucket(k), n); err != nil {
				return err
			}
			continue
		}
		field(h, k)
		field(h, v)
	}
	field(h, []byte("end"))
	return nil
}

// field writes p to h with its length, so that no two sequences of fields hash alike.
func field(h hash.Hash, p []byte) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(p))))
	h.Write(p)
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
