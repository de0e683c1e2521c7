//go:build !unix

package cli

// openFileLimits: no RLIMIT_NOFILE here; the connection cap is autoMaxConns.
func openFileLimits() fileLimits { return fileLimits{} }
