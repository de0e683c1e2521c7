//go:build unix

package cli

import "syscall"

// openFileLimits reads the process's RLIMIT_NOFILE.
func openFileLimits() fileLimits {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return fileLimits{}
	}
	return fileLimits{soft: uint64(r.Cur), hard: uint64(r.Max), known: true}
}
