package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5/pgconn"
)

// The bounds that keep a request from hanging on a database that cannot be reached
// (docs/decisions/0101-database-unreachable.md).
const (
	// defaultConnectTimeout bounds the opening of a connection when the URL sets no
	// connect_timeout: a database that does not answer (a host gone, packets dropped)
	// is unavailable after it, not after the kernel's TCP timeouts.
	defaultConnectTimeout = 5 * time.Second
	// defaultTxTimeout bounds a transaction whose context has no deadline (Options.TxTimeout),
	// under the HTTP server's write timeout, so that a request on a connection that went
	// silent answers 503 before its client's connection is cut.
	defaultTxTimeout = 30 * time.Second
	// unavailableRetryAfter is the Retry-After of an answer that the database could not
	// give: about what a restart of PostgreSQL takes.
	unavailableRetryAfter = 2 * time.Second
)

// unreachable reports whether err says that the database could not be reached or that
// the connection to it was lost (rather than that a statement failed).
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.Is(err, pgconn.ErrConnClosed) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08, connection exception; 57P01-03, the server shutting down, crashed
		// or starting; 53300, too many connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code == "53300"
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// dialFailed reports whether err is the failure to open a connection: the database is
// down or unreachable, and trying again at once would only fail again.
func dialFailed(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// unavailable returns err as a KindUnavailable error (503 with a Retry-After) when it says
// that the database could not be reached; any other error is returned as it is.
func unavailable(err error) error {
	if !unreachable(err) {
		return err
	}
	if k := model.ErrorKind(err); k != model.KindInternal {
		return err // a kind of its own was chosen nearer the cause
	}
	return &model.Error{Kind: model.KindUnavailable, Msg: "the database is not available; try again shortly",
		RetryAfter: unavailableRetryAfter, Err: err}
}

// Unreachable reports whether an error of Open says that the database could not be
// reached yet (refused, timed out, starting up), rather than that it refused this process
// (a wrong password, a schema newer than the binary): a process may wait for it to come.
func Unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000") {
		return false // authentication, or no such database
	}
	return unreachable(err)
}
