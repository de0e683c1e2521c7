//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package store

import (
	"errors"
	"syscall"
)

// freeSpace cannot tell the free space here: only a failed write says the disk is full.
func freeSpace(string) (int64, error) { return -1, errors.ErrUnsupported }

// isNoSpace reports whether err is a write that failed for want of space.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
