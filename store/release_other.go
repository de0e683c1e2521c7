//go:build !unix

package store

import "os"

// releaseFile closes f, which releases the lock bbolt took on it.
func releaseFile(f *os.File) { _ = f.Close() }
