package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// A central tier's process and its database may start together (a supervisor, a
// compose file): serve does not exit while the database cannot be reached, it waits for
// it, answering meanwhile on its address (docs/decisions/0221-serve-before-database.md).

// Backoff of the attempts to open a database that cannot be reached.
const (
	dbWaitFirst = 100 * time.Millisecond
	dbWaitMax   = 5 * time.Second
)

// listening is the node's address and TLS, made before the store opens when it waits
// for its database.
type listening struct {
	ln          net.Listener
	tlsConfig   *tls.Config
	fingerprint string
	selfSigned  *server.SelfSigned
}

// openWaiting opens the database of Config.Database, retrying with backoff while it cannot
// be reached; meanwhile the stand-in handler (server.Starting) answers on l's listener:
// /healthz 200, the rest 503 with the reason. It returns once the store is open and the
// stand-in has handed the listener back, or with the first error that waiting cannot cure.
func (m *Main) openWaiting(ctx context.Context, log *slog.Logger, l *listening) (model.Store, error) {
	db, err := m.open(ctx, log)
	if err == nil || !waitable(err) {
		return db, err
	}
	var why atomic.Value
	why.Store(err.Error())
	h := &handoff{Listener: l.ln}
	var inner net.Listener = h
	if l.tlsConfig != nil {
		inner = tls.NewListener(h, l.tlsConfig)
	}
	hs := &http.Server{Handler: server.Starting(func() string { return why.Load().(string) }),
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(inner) })
	defer func() {
		h.handBack()
		wg.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = hs.Shutdown(sctx) // closes the stand-in's idle connections, not the listener
		cancel()
		h.resume()
	}()
	log.Warn("the database cannot be reached yet; waiting for it (/healthz answers, /readyz says why)", "error", err.Error())
	pause := dbWaitFirst
	for {
		select {
		case <-ctx.Done():
			return nil, model.Errorf(model.KindUnavailable, "stopped while waiting for the database: %s", why.Load())
		case <-time.After(pause):
		}
		pause = min(2*pause, dbWaitMax)
		db, err := m.open(ctx, log)
		if err == nil {
			log.Info("the database answers: starting")
			return db, nil
		}
		if !waitable(err) {
			return nil, err
		}
		why.Store(err.Error())
		log.Warn("the database cannot be reached yet", "error", err.Error(), "next_attempt_in", pause.String())
	}
}

// waitable reports whether an error opening the database may go away by waiting: the
// database could not be reached (dbUnreachable).
func waitable(err error) bool {
	var u *dbUnreachable
	return errors.As(err, &u)
}

// dbUnreachable marks the error of a database that could not be reached yet (refused, timed
// out, starting up; postgres.Unreachable), as opposed to one that refused this process.
type dbUnreachable struct{ error }

func (u *dbUnreachable) Unwrap() error { return u.error }

// handoff is the stand-in's view of the node's listener: handBack makes its Accept fail
// (by a deadline, without closing the listener) so that the stand-in stops, and its Close
// leaves the listener to the node.
type handoff struct {
	net.Listener
	back atomic.Bool
}

func (h *handoff) Accept() (net.Conn, error) {
	c, err := h.Listener.Accept()
	if err == nil {
		return c, nil
	}
	var ne net.Error
	if h.back.Load() && errors.As(err, &ne) && ne.Timeout() {
		return nil, net.ErrClosed
	}
	return nil, err
}

func (h *handoff) Close() error { return nil }

func (h *handoff) handBack() {
	h.back.Store(true)
	if d, ok := h.Listener.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Now())
	}
}

func (h *handoff) resume() {
	if d, ok := h.Listener.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Time{})
	}
}
