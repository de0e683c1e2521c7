package cli

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// Connection caps of serve (docs/decisions/0141-connection-caps.md).
const (
	// DefaultMaxConnsPerIP is the default of --max-conns-per-ip.
	DefaultMaxConnsPerIP = 256
	// autoMaxConns is the most connections the default --max-conns (0) allows: at about
	// 20 KB of memory each, some 80 MB.
	autoMaxConns = 4096
	// maxFileReserve is the share of the open-file limit kept from client connections for
	// the node's own files: the database, the log, the admin socket and its clients,
	// snapshots, outbound webhook, SMS and upstream connections (the webhook client keeps
	// up to 100 idle), a PostgreSQL pool. Half of a limit under 1,024.
	maxFileReserve = 512
)

// fileLimits is the process's limit of open files (RLIMIT_NOFILE), as the Go runtime
// left it: since Go 1.19 it raises the soft limit to the hard one at start.
type fileLimits struct {
	soft, hard uint64
	known      bool // false where it cannot be read
}

// connRoom is how many client connections fl leaves room for, or 0 when it is not known.
func (fl fileLimits) connRoom() uint64 {
	if !fl.known {
		return 0
	}
	reserve := min(maxFileReserve, fl.soft/2)
	return fl.soft - reserve
}

// connLimits are the server's connection caps for --max-conns and --max-conns-per-ip
// under the file limit fl: --max-conns 0 is the smaller of autoMaxConns and the room the
// limit leaves; a larger --max-conns than that room is refused, since the node would run
// out of files before it reached its cap.
func connLimits(maxConns, perIP int, fl fileLimits) (server.ConnLimits, error) {
	if maxConns < 0 {
		return server.ConnLimits{}, model.Invalid("max-conns", "--max-conns must not be negative (0: automatic)")
	}
	if perIP < 0 {
		return server.ConnLimits{}, model.Invalid("max-conns-per-ip", "--max-conns-per-ip must not be negative (0: no cap)")
	}
	room := fl.connRoom()
	total := maxConns
	switch {
	case total == 0 && room > 0:
		total = int(min(autoMaxConns, room))
	case total == 0:
		total = autoMaxConns
	case room > 0 && uint64(total) > room:
		return server.ConnLimits{}, model.Invalid("max-conns",
			"--max-conns %d is more than the open-file limit of %d leaves room for (%d, with %d kept for the node's own files): "+
				"raise the limit (LimitNOFILE= in the systemd unit, ulimit -n) or lower --max-conns", total, fl.soft, room, fl.soft-room)
	}
	return server.ConnLimits{Total: total, PerAddress: perIP}, nil
}
