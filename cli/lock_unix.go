//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

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
