//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package store

import (
	"errors"
	"syscall"
)

// freeSpace returns the bytes of the filesystem holding dir that an unprivileged writer
// may still use (statfs's available blocks, not its free ones: the root reserve does not
// count).
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // Bsize's type differs by system
}

// isNoSpace reports whether err is a write that failed for want of space: the disk is
// full, the user's quota is spent, or the file reached its size limit (RLIMIT_FSIZE).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}
