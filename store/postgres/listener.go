package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// directoryChannel is the channel on which a transaction that changes a tenant's directory
// notifies (payload: the id of the DB handle that commits it, a space, the tenant id). PostgreSQL delivers the notifications of a transaction
// when it commits, in commit order, to every listening session, this process's included.
const directoryChannel = "fieldrelay_directory"

// ListenerApplicationName is the application_name of the listening session in
// pg_stat_activity.
const ListenerApplicationName = "fieldrelay listener"

// Timing of the listener.
const (
	// listenIdle is how long the listener waits for a notification before it checks that
	// its connection still answers (a connection cut without a word would wait forever).
	listenIdle = 5 * time.Second
	// listenPing bounds that check, and listenRetryMax the pause between reconnections.
	listenPing     = 2 * time.Second
	listenRetryMax = 2 * time.Second
	// listenConnect bounds one attempt to reconnect.
	listenConnect = 5 * time.Second
)

// listener keeps one connection of its own LISTENing on directoryChannel and bumps the
// directory versions of the tenants named there, so that a change committed through
// another process invalidates this process's caches. While that connection is lost,
// versions.down makes every Version a new number (no cache is trusted); once it is back,
// every counter is bumped, for the notifications that were missed.
type listener struct {
	cfg  *pgx.ConnConfig
	db   *DB
	stop context.CancelFunc
	done chan struct{}
}

// startListener connects the listener and starts it; it fails when the first connection
// fails.
func (db *DB) startListener(ctx context.Context, cfg *pgx.ConnConfig) error {
	cfg = cfg.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	// An operator (and a test) tells the listening session from the pool's by its name.
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	conn, err := db.listenConn(ctx, cfg)
	if err != nil {
		return err
	}
	lctx, stop := context.WithCancel(context.Background())
	l := &listener{cfg: cfg, db: db, stop: stop, done: make(chan struct{})}
	db.listener = l
	go l.run(lctx, conn)
	return nil
}

// listenConn opens a connection and LISTENs on it.
func (db *DB) listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+directoryChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// close stops the listener and waits for it.
func (l *listener) close() {
	l.stop()
	<-l.done
}

func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	pause := 50 * time.Millisecond
	for {
		if conn == nil {
			cctx, cancel := context.WithTimeout(ctx, listenConnect)
			c, err := l.db.listenConn(cctx, l.cfg)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.db.log.Warn("database listener: reconnecting failed", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
				pause = min(2*pause, listenRetryMax)
				continue
			}
			conn, pause = c, 50*time.Millisecond
			// Notifications sent while no connection listened are lost: trust nothing
			// cached before.
			l.db.versions.bumpAll()
			l.db.versions.down.Store(false)
			l.db.log.Info("database listener: reconnected")
		}
		err := l.wait(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		l.db.versions.down.Store(true)
		l.db.log.Warn("database listener: connection lost; caches are bypassed until it is back", "err", err)
		closeConn(conn)
		conn = nil
	}
}

// closeConn closes a connection, waiting a second at most (a dead peer may not answer).
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// wait handles the notifications of conn until ctx ends or the connection fails.
func (l *listener) wait(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.notified(n)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, listenPing)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// notified handles one notification.
func (l *listener) notified(n *pgconn.Notification) {
	from, tenantID, ok := strings.Cut(n.Payload, " ")
	if !ok || n.Channel != directoryChannel || from == l.db.self {
		return // this handle's own: bumped when the commit returned (tx.changed)
	}
	l.db.versions.bump(tenantID)
}

// canonicalTenant is the form of a tenant id that Version is asked for.
func canonicalTenant(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}
