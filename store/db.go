// Package store is the bbolt implementation of engine.Store: the bucket layout, key
// encoding, indexes, cursors and backups of a node's data directory.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"

	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the database file inside a data directory.
const FileName = "fieldrelay.db"

// ErrLocked is returned by Open when another process holds the data directory.
var ErrLocked = errors.New("the data directory is in use by another process")

// ErrForeign is returned by Open for a file that is not a fieldrelay database.
var ErrForeign = errors.New("not a fieldrelay data file")

// DB is a node's bbolt database.
type DB struct {
	bolt     *bolt.DB
	path     string
	loop     *commitLoop // the group commit loop of Batch; nil when read-only
	versions versions
	teams    teamCache
	writeTx  atomic.Uint64 // write transactions committed, for Stats
	space    *spaceGuard   // nil when read-only
}

var _ model.Store = (*DB)(nil)

// Options configure Open.
type Options struct {
	// LockTimeout is how long to wait for another process to release the file (0: two
	// seconds; never forever, which neither a server nor an admin command wants).
	LockTimeout time.Duration
	// ReadOnly opens the file without writing to it.
	ReadOnly bool
	// Space sets how writes are refused when the disk fills up.
	Space SpaceOptions
	// exclusive opens a database file read-write, so that no other process holds it, but
	// writes nothing to it (Compact reads it while no one else may write it).
	exclusive bool
}

// Path returns the database file of a data directory.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Open opens (creating when needed) the database of dataDir, creates its buckets and
// checks its schema version.
func Open(dataDir string, opt Options) (db *DB, err error) {
	if !opt.ReadOnly {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the data directory: %w", err)
		}
	}
	return OpenFile(Path(dataDir), opt)
}

// OpenFile opens the database file at path.
func OpenFile(path string, opt Options) (db *DB, err error) {
	var b *bolt.DB
	var file *os.File // the file bbolt opened, to release it when bolt.Open panics
	// bbolt panics on some corrupt files; a bad file is an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			// Release the file lock, or the next Open of this file would find it locked.
			if b != nil {
				_ = b.Close()
			} else if file != nil {
				releaseFile(file)
			}
			db, err = nil, fmt.Errorf("%s: %w (%v)", path, ErrForeign, r)
		}
	}()
	if opt.LockTimeout == 0 {
		opt.LockTimeout = 2 * time.Second
	}
	b, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opt.LockTimeout, ReadOnly: opt.ReadOnly, FreelistType: bolt.FreelistMapType,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, ferr := os.OpenFile(name, flag, perm)
			file = f
			return f, ferr
		}})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, ErrLocked
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch),
		errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrInvalidMapping):
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrForeign, err)
	case err != nil:
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	db = &DB{bolt: b, path: path}
	if err := db.init(opt.ReadOnly || opt.exclusive); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !opt.ReadOnly && !opt.exclusive {
		db.space = newSpaceGuard(path, opt.Space)
		db.loop = startLoop(db)
	}
	return db, nil
}

// init creates the root buckets of a new file and checks the schema of an existing one.
func (db *DB) init(readOnly bool) error {
	var fresh, foreign bool
	var version int
	err := db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			fresh, foreign = empty, !empty
			return nil
		}
		v, err := strconv.Atoi(string(meta.Get(metaSchemaVersion)))
		if err != nil {
			foreign = true
		}
		version = v
		return nil
	})
	switch {
	case err != nil:
		return err
	case foreign:
		return ErrForeign
	case version > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this binary's %d: upgrade fieldrelay", version, schemaVersion)
	case readOnly:
		if fresh {
			return ErrForeign
		}
		return nil
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range rootBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		// Migrations from older versions run here, in order, when there are any.
		// Nested buckets added to the layout are created in existing tenants.
		root := tx.Bucket(bucketTenantRoot)
		err := root.ForEachBucket(func(k []byte) error {
			tb := root.Bucket(k)
			if tb.Bucket(tbEventsOpen) == nil {
				if err := buildOpenIndex(tb); err != nil {
					return err
				}
			}
			for _, name := range tenantBuckets {
				if _, err := tb.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			return moveOpenAlerts(tb)
		})
		if err != nil {
			return err
		}
		if _, err := packTenants(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(metaSchemaVersion, []byte(strconv.Itoa(schemaVersion)))
	})
}

// View runs fn in a read-only transaction.
func (db *DB) View(ctx context.Context, fn func(model.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.bolt.View(func(btx *bolt.Tx) error { return fn(&tx{btx: btx, db: db}) })
}

// Update runs fn in a read-write transaction; it commits (fsynced) when fn returns nil.
// While the disk is full it returns model.DiskFull without running fn.
func (db *DB) Update(ctx context.Context, fn func(model.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.space.check(); err != nil {
		return err
	}
	err := db.bolt.Update(func(btx *bolt.Tx) error { return fn(&tx{btx: btx, db: db}) })
	if err == nil {
		db.writeTx.Add(1)
	}
	return db.space.failedWrite(err)
}

// Backup writes a consistent snapshot of the database to w, while others keep working.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := db.View(ctx, func(t model.Tx) (err error) {
		n, err = t.(*tx).btx.WriteTo(w)
		return err
	})
	return n, err
}

// Close commits the Batch calls already queued, then closes the database file.
func (db *DB) Close() error {
	db.loop.stop()
	return db.bolt.Close()
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }
