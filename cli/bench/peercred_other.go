//go:build !linux

package bench

import (
	"fmt"
	"net"
	"runtime"
)

// unixPeerPID needs SO_PEERCRED, which only Linux has: elsewhere pass --server-pid.
func unixPeerPID(*net.UnixConn) (int, error) {
	return 0, fmt.Errorf("finding the server's pid from its admin socket needs Linux (SO_PEERCRED), not %s: pass --server-pid", runtime.GOOS)
}
