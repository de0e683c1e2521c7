//go:build !unix

package cli

import (
	"errors"
	"io/fs"
	"os"

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
