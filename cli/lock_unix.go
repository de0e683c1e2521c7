//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/fieldrelay/fieldrelay/store"
)

// lockFile takes, without waiting, the exclusive flock that bbolt holds on an open database,
// and returns its release. It returns store.ErrLocked while another process has the file
// open; a file that does not exist needs no lock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, store.ErrLocked
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

// dataLockName is the lock file that a serve on --database holds in its data directory.
const dataLockName = "serve.lock"

// lockDataDir creates the data directory when needed and takes, without waiting, the flock
// of its serve.lock: a process that serves a --database holds its --data so, as bbolt's
// lock holds it otherwise. It returns the release.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, model.Errorf(model.KindInternal, "cannot create the data directory %s: %v", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, dataLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, model.Errorf(model.KindInternal, "cannot lock the data directory %s: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, model.Errorf(model.KindUnavailable,
				"the data directory %s is in use by another process (each serve process needs a --data of its own)", dir)
		}
		return nil, model.Errorf(model.KindInternal, "cannot lock the data directory %s: %v", dir, err)
	}
	return func() { _ = f.Close() }, nil
}
