package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// The change feed of GET /v1/stream (model.ChangeFeed;
// docs/decisions/0105-stream-postgres.md): a change is a
// row of stream_changes written in the transaction that
// makes it, numbered seq = (transaction id << seqShift) | its number in the transaction.
// Every process polls the rows of the tenants it has subscribers for, in seq order, up to
// the horizon: the oldest transaction id still running, below which every transaction has
// ended, so that no row can appear below a seq already read.
const (
	seqShift = 20
	// feedKeep is how many changes of a tenant are kept for Last-Event-ID resume (as the
	// engine's ring keeps in memory on bbolt).
	feedKeep = 1000
	// feedPoll is the pause between two polls; a commit of this process wakes the poller
	// at once.
	feedPoll = 100 * time.Millisecond
	// feedPruneEvery is how often the changes past feedKeep are deleted (by one process
	// at a time: feedPruneLock).
	feedPruneEvery = time.Minute
	feedPruneLock  = 0x6669656c64707275 // "fieldpru"
)

// horizonSQL is the first seq that a transaction still running may write.
const horizonSQL = `SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20)`

var _ model.ChangeFeed = (*DB)(nil)

// feed is the state of a DB's change feed.
type feed struct {
	once    sync.Once
	head    atomic.Uint64
	wake    chan struct{} // made by Open
	stop    context.CancelFunc
	done    chan struct{}
	running atomic.Bool
	// pruneBelow is the horizon at the previous prune (pruneFeed, in the poller's goroutine).
	pruneBelow uint64
}

// AppendChange records c within mtx, a transaction of this DB.
func (db *DB) AppendChange(mtx model.TxCommit, tenantID string, c model.Change) error {
	t, ok := mtx.(*tx)
	if !ok {
		return errors.New("postgres: AppendChange in a transaction of another store")
	}
	tn, err := canonTenant(tenantID)
	if err != nil {
		return err
	}
	t.feedN++
	if t.feedN >= 1<<seqShift {
		return errors.New("postgres: too many stream changes in one transaction")
	}
	if t.feedN == 1 {
		t.OnCommit(db.nudgeFeed)
	}
	const insert = `INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data, event_id)
		VALUES ($1, (pg_current_xact_id()::text::bigint << 20) | $2, $3, $4, $5, $6, $7, $8)`
	// The data, or the event whose document they are (feed_events.go).
	var data, event any = json.RawMessage(c.Data), nil
	if id := t.publishedEvent(tn, c.Data); id != "" {
		data, event = nil, id
	}
	args := []any{tn, int64(t.feedN), c.Name, c.Perm, c.TeamID, c.At.Time, data, event}
	if !t.wrote {
		// A transaction that wrote no row yet gets its id now, with the change (and the
		// writes queued before it): the id orders its changes, and holds the horizon of
		// every poller below them until it ends, from the first change on.
		_, err = t.exec(insert, args...)
		t.wrote = t.wrote || err == nil
		return err
	}
	// Else the change is queued: it goes out with the transaction's next statement or
	// before its commit, in the order of its statements (tx.write).
	return t.write(insert, args...)
}

// nudgeFeed wakes the poller (a change of this process committed).
func (db *DB) nudgeFeed() {
	select {
	case db.feed.wake <- struct{}{}:
	default:
	}
}

// FeedHead is the seq up to which the poller has delivered.
func (db *DB) FeedHead() uint64 { return db.feed.head.Load() }

// FollowChanges starts the poller (once).
func (db *DB) FollowChanges(watching func() []string, deliver func(string, model.Change)) {
	db.feed.once.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		db.feed.stop, db.feed.done = stop, make(chan struct{})
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if h, err := db.horizon(hctx); err == nil {
			db.feed.head.Store(h - 1)
		}
		cancel()
		db.feed.running.Store(true)
		go db.followFeed(ctx, watching, deliver)
	})
}

// closeFeed stops the poller and waits for it.
func (db *DB) closeFeed() {
	if db.feed.running.Load() {
		db.feed.stop()
		<-db.feed.done
	}
}

func (db *DB) horizon(ctx context.Context) (uint64, error) {
	var h int64
	if err := db.pool.QueryRow(ctx, horizonSQL).Scan(&h); err != nil {
		return 0, err
	}
	return uint64(h), nil
}

func (db *DB) followFeed(ctx context.Context, watching func() []string, deliver func(string, model.Change)) {
	defer close(db.feed.done)
	poll := time.NewTimer(0)
	defer poll.Stop()
	prune := time.NewTicker(feedPruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			if err := db.pruneFeed(ctx); err != nil && ctx.Err() == nil {
				db.log.Warn("stream: pruning old changes failed", "err", err)
			}
			continue
		case <-db.feed.wake:
		case <-poll.C:
		}
		more, err := db.pollFeed(ctx, watching, deliver)
		if err != nil && ctx.Err() == nil {
			db.log.Warn("stream: reading the changes failed", "err", err)
		}
		next := feedPoll
		if more {
			next = 0
		}
		poll.Reset(next)
	}
}

// pollFeed delivers the changes of the watched tenants between the head and the horizon;
// more is true when it stopped at a page's end.
func (db *DB) pollFeed(ctx context.Context, watching func() []string, deliver func(string, model.Change)) (more bool, err error) {
	// The horizon is read before the tenants: a tenant that a subscriber adds after this
	// point reads its backlog up to a horizon at least as high (Subscribe, engine/stream/stream.go).
	h, err := db.horizon(ctx)
	if err != nil {
		return false, err
	}
	head := db.feed.head.Load()
	if h <= head {
		return false, nil
	}
	tenants := watching()
	if len(tenants) == 0 {
		db.feed.head.Store(h - 1)
		return false, nil
	}
	rows, err := db.pool.Query(ctx, changeRows+` WHERE s.tenant_id = ANY($1::uuid[]) AND s.seq > $2 AND s.seq < $3
		ORDER BY s.seq LIMIT $4`, tenants, int64(head), int64(h), feedKeep)
	if err != nil {
		return false, err
	}
	n := 0
	last := head
	err = forChanges(rows, func(tenantID string, c model.Change) {
		deliver(tenantID, c)
		last = c.Seq
		n++
	})
	if err != nil {
		return false, err
	}
	if n == feedKeep {
		db.feed.head.Store(last)
		return true, nil
	}
	db.feed.head.Store(h - 1)
	return false, nil
}

// forChanges scans rows of (tenant_id, seq, name, perm, team_id, at, data).
func forChanges(rows pgx.Rows, fn func(string, model.Change)) error {
	defer rows.Close()
	for rows.Next() {
		var tenantID, data string
		var seq int64
		var at time.Time
		var c model.Change
		if err := rows.Scan(&tenantID, &seq, &c.Name, &c.Perm, &c.TeamID, &at, &data); err != nil {
			return err
		}
		c.Seq, c.At, c.Data = uint64(seq), model.At(at), json.RawMessage(data)
		fn(tenantID, c)
	}
	return rows.Err()
}

// ChangesAfter reads a tenant's changes after a seq, up to the horizon, in one snapshot
// (so that a prune is seen whole or not at all).
func (db *DB) ChangesAfter(ctx context.Context, tenantID string, after uint64) (out []model.Change, held bool, err error) {
	tn, err := canonTenant(tenantID)
	if err != nil {
		return nil, false, err
	}
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ptx pgx.Tx) error {
		var h, upto int64
		err := ptx.QueryRow(ctx, horizonSQL+`, coalesce((SELECT upto FROM stream_pruned WHERE tenant_id = $1), 0)`, tn).Scan(&h, &upto)
		if err != nil {
			return err
		}
		rows, err := ptx.Query(ctx, changeRows+` WHERE s.tenant_id = $1 AND s.seq > $2 AND s.seq < $3 ORDER BY s.seq LIMIT $4`,
			tn, int64(after), h, feedKeep+1)
		if err != nil {
			return err
		}
		out = []model.Change{}
		if err := forChanges(rows, func(_ string, c model.Change) { out = append(out, c) }); err != nil {
			return err
		}
		held = after >= uint64(upto) && after < uint64(h) && len(out) <= feedKeep
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("postgres: %w", err)
	}
	if len(out) > feedKeep {
		out = out[:feedKeep]
	}
	return out, held, nil
}

// pruneFeed deletes each tenant's changes but the last feedKeep, in one process at a
// time, and only those below the horizon of this process's previous prune: they have been
// final for a while, so every process's poller has delivered them (a transaction held open
// may keep more than feedKeep changes above the horizon for longer than the interval).
func (db *DB) pruneFeed(ctx context.Context) error {
	h, err := db.horizon(ctx)
	if err != nil {
		return err
	}
	below := db.feed.pruneBelow
	db.feed.pruneBelow = h
	if below == 0 {
		return nil
	}
	// One transaction under a transaction-level lock: a pooler in transaction mode
	// (PgBouncer) keeps no session's lock behind.
	return pgx.BeginFunc(ctx, db.pool, func(conn pgx.Tx) error {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", int64(feedPruneLock)).Scan(&got); err != nil || !got {
			return err
		}
		rows, err := conn.Query(ctx, "SELECT tenant_id::text FROM tenants")
		if err != nil {
			return err
		}
		tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return pruneTenants(ctx, conn, tenants, below)
	})
}

// pruneTenants prunes the stream of each tenant below the horizon below.
func pruneTenants(ctx context.Context, conn pgx.Tx, tenants []string, below uint64) error {
	for _, tn := range tenants {
		_, err := conn.Exec(ctx, `WITH cut AS (SELECT seq FROM stream_changes WHERE tenant_id = $1
				ORDER BY seq DESC OFFSET $2 LIMIT 1),
			d AS (DELETE FROM stream_changes WHERE tenant_id = $1 AND seq <= (SELECT seq FROM cut) AND seq < $3
				RETURNING seq)
			INSERT INTO stream_pruned (tenant_id, upto) SELECT $1, max(seq) FROM d HAVING count(*) > 0
			ON CONFLICT (tenant_id) DO UPDATE SET upto = greatest(stream_pruned.upto, excluded.upto)`,
			tn, feedKeep, int64(below))
		if err != nil {
			return err
		}
	}
	return nil
}
