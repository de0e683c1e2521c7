//go:build unix

package store

import (
	"os"
	"syscall"
)

// releaseFile drops the flock bbolt took on f and closes it. Closing alone is not enough
// when bolt.Open panicked: its memory map still references the file, which keeps the
// lock alive.
func releaseFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
