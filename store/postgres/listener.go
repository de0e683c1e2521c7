package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// directoryChannel is the channel on which a transaction that changes a tenant's directory
// notifies (payload: the id of the DB handle that commits it, a space, the tenant id). PostgreSQL delivers the notifications of a transaction
// when it commits, in commit order, to every listening session, this process's included.
const directoryChannel = "fieldrelay_directory"

// beatChannel carries the heartbeats (payload: the id of the DB handle that sends them):
// each handle notifies through its pool, as its transactions do, and hears its own on its
// listener, which proves that the notifications of the other processes reach it
// (docs/decisions/0220-notifications-fail-closed.md).
const beatChannel = "fieldrelay_beat"

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
	// BeatEvery is the interval of the heartbeats; once none has come back for BeatLate,
	// the notifications are down and no cache is trusted: a change committed through another
	// process is in force here within BeatLate plus one check (beatCheck), even when its
	// notification is lost.
	BeatEvery = time.Second
	BeatLate  = 3 * time.Second
	beatCheck = 250 * time.Millisecond
)

// listener keeps one connection of its own LISTENing on directoryChannel and bumps the
// directory versions of the tenants named there, so that a change committed through
// another process invalidates this process's caches. While that connection is lost or
// the heartbeats do not come back (a pooler in transaction mode between the listener and
// PostgreSQL delivers nothing), versions.down makes every Version a new number (no cache
// is trusted); once they flow again, every counter is bumped, for the notifications that
// were missed.
type listener struct {
	cfg  *pgx.ConnConfig
	db   *DB
	stop context.CancelFunc
	done chan struct{}

	// connected is set while the listening connection is up; heard holds the time of
	// the latest heartbeat of this handle heard on it (unix ns; 0: none since it
	// connected).
	connected atomic.Bool
	heard     atomic.Int64
	// mu orders the changes of versions.down; why says why the notifications are down.
	mu  sync.Mutex
	why string
}

// startListener connects the listener and starts it with the heartbeats; it fails when
// the first connection fails.
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
	l := &listener{cfg: cfg, db: db, stop: stop, done: make(chan struct{}), why: "no heartbeat heard yet"}
	db.versions.down.Store(true)
	db.listener = l
	l.connected.Store(true)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.run(lctx, conn) }()
	go func() { defer wg.Done(); l.beat(lctx) }()
	go func() { wg.Wait(); close(l.done) }()
	// The first heartbeat comes back within milliseconds when the notifications flow:
	// wait for it a little, so that the caches work from the start.
	deadline := time.Now().Add(BeatEvery)
	for l.db.versions.down.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// listenConn opens a connection and LISTENs on it.
func (db *DB) listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for _, ch := range []string{directoryChannel, beatChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return conn, nil
}

// close stops the listener and waits for it.
func (l *listener) close() {
	l.stop()
	<-l.done
}

func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
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
			// The notifications are trusted again once a heartbeat comes back on it.
			l.heard.Store(0)
			l.connected.Store(true)
			l.db.log.Info("database listener: reconnected")
		}
		err := l.wait(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		l.connected.Store(false)
		l.check()
		l.db.log.Warn("database listener: connection lost; caches are bypassed until it is back", "err", err)
		closeConn(conn)
		conn = nil
	}
}

// beat sends a heartbeat through the pool every BeatEvery and checks every beatCheck
// that they come back.
func (l *listener) beat(ctx context.Context) {
	tick := time.NewTicker(beatCheck)
	defer tick.Stop()
	var sent time.Time
	for {
		if time.Since(sent) >= BeatEvery {
			sent = time.Now()
			bctx, cancel := context.WithTimeout(ctx, BeatEvery)
			// A failure (the database down) shows as a heartbeat that does not come back.
			_, _ = l.db.pool.Exec(bctx, "SELECT pg_notify($1, $2)", beatChannel, l.db.self)
			cancel()
		}
		l.check()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check sets versions.down from the state of the listener: up when it is connected and
// heard a heartbeat of this handle within BeatLate. Coming up, it bumps every counter
// first (the notifications missed meanwhile), so that no cache entry of before is trusted.
func (l *listener) check() {
	why := ""
	switch heard := l.heard.Load(); {
	case !l.connected.Load():
		why = "the listener has no connection to the database"
	case heard == 0:
		why = "no heartbeat heard since the listener connected"
	case time.Since(time.Unix(0, heard)) > BeatLate:
		why = "no heartbeat heard for " + BeatLate.String() + " (is a pooler in transaction mode between the listener and PostgreSQL? see --database-listen-url)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	down := l.db.versions.down.Load()
	switch {
	case why == "" && down:
		l.db.versions.bumpAll()
		l.db.versions.down.Store(false)
		l.db.log.Info("database notifications: flowing")
	case why != "" && !down:
		l.db.versions.down.Store(true)
		l.db.log.Warn("database notifications: down; caches are bypassed until they flow", "reason", why)
	}
	l.why = why
}

// downWhy says why the notifications are down ("" while they flow).
func (l *listener) downWhy() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
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
	if n.Channel == beatChannel {
		if n.Payload == l.db.self {
			l.heard.Store(time.Now().UnixNano())
			l.check()
		}
		return
	}
	from, tenantID, ok := strings.Cut(n.Payload, " ")
	if !ok || n.Channel != directoryChannel || from == l.db.self {
		return // this handle's own: bumped when the commit returned (tx.changed)
	}
	l.db.versions.bump(tenantID)
}

// NotificationsDown says why the notifications of the other processes do not reach this
// handle ("" while they flow): its caches of the directory are then bypassed.
func (db *DB) NotificationsDown() string { return db.listener.downWhy() }

// canonicalTenant is the form of a tenant id that Version is asked for.
func canonicalTenant(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}
