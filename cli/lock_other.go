//go:build !unix

package cli

import (
	"errors"
	"io/fs"
	"os"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/fieldrelay/fieldrelay/store"
)

// lockFile checks that no process holds the database by opening it with bbolt's lock and
// closing it again (where files cannot be renamed while open, the lock cannot be kept
// across the rename). It returns store.ErrLocked while another process has it open.
func lockFile(path string) (unlock func(), err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	db, err := store.OpenFile(path, store.Options{LockTimeout: adminLockTimeout})
	if errors.Is(err, store.ErrLocked) {
		return nil, err
	}
	if err == nil {
		_ = db.Close()
	}
	return func() {}, nil // a damaged database is what a restore replaces
}

// lockDataDir creates the data directory when needed. Where flock is missing, nothing keeps
// two serve processes on --database from sharing it: give each one its own --data.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, model.Errorf(model.KindInternal, "cannot create the data directory %s: %v", dir, err)
	}
	return func() {}, nil
}
