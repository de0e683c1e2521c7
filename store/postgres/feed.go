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

// The change feed of GET /v1/stream (model.ChangeFeed; docs/decisions/0105-stream-postgres.md,
// docs/decisions/0238-stream-tenant-sequence.md): a change is a row of stream_changes written
// in the transaction that makes it, numbered by its tenant's sequence: stream_heads holds
// each tenant's last number, which a write transaction reads with the tenant's row lock
// (lockTenant) and advances before it commits (flushChanges). The tenant's writers wait for
// each other on that lock, so its numbers are given in the order of the commits, without
// gaps: a change that a statement sees has every smaller number of its tenant committed and
// visible too. Every process polls the rows of the tenants it has subscribers for after its
// head of each, in seq order.
const (
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
	// maxChanges bounds the changes of one tenant in one transaction.
	maxChanges = 1 << 20
)

var _ model.ChangeFeed = (*DB)(nil)

// feed is the state of a DB's change feed.
type feed struct {
	once sync.Once
	// mu guards heads: the seq up to which the poller delivered, by tenant. A tenant
	// enters it when a subscriber asks for its head (FeedHead), which the poller then
	// delivers after; the poller reads only the tenants it holds.
	mu      sync.Mutex
	heads   map[string]uint64
	wake    chan struct{} // made by Open
	stop    context.CancelFunc
	done    chan struct{}
	running atomic.Bool
	// pruneBelow holds each tenant's head at the previous prune (pruneFeed, in the
	// poller's goroutine).
	pruneBelow map[string]uint64
}

// pendingChanges are the changes of one tenant that a transaction adds before it commits
// (flushChanges).
type pendingChanges struct {
	names, perms, teams, data []string
	at                        []time.Time
}

// AppendChange records c within mtx, a transaction of this DB.
func (db *DB) AppendChange(mtx model.TxCommit, tenantID string, c model.Change) error {
	t, ok := mtx.(*tx)
	if !ok {
		return errors.New("postgres: AppendChange in a transaction of another store")
	}
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return err
	}
	if t.changes == nil {
		t.changes = map[string]*pendingChanges{}
		t.OnCommit(db.nudgeFeed)
	}
	p := t.changes[tn]
	if p == nil {
		p = &pendingChanges{}
		t.changes[tn] = p
	}
	if len(p.names) >= maxChanges {
		return errors.New("postgres: too many stream changes in one transaction")
	}
	p.names, p.perms, p.teams = append(p.names, c.Name), append(p.perms, c.Perm), append(p.teams, c.TeamID)
	p.at, p.data = append(p.at, c.At.Time), append(p.data, string(c.Data))
	return nil
}

// flushChanges sends, before the commit, the statements that number the transaction's
// changes of each tenant after the tenant's last seq, under the tenant's lock
// (lockTenant): the new head, then the changes (merged into multi-row inserts when sent,
// rows.go), all of one tenant's shard on Citus. The head is advanced and read in one
// upsert, which works on the row's latest committed version: a head read with the lock's own statement would come from
// that statement's snapshot, taken before the lock was granted, and under READ COMMITTED
// miss the changes of the transaction it waited for (two processes then gave one seq
// twice). A head read under the lock by a statement of its own (readForGroup), whose
// snapshot follows the lock, is advanced by a queued write instead.
func (t *tx) flushChanges() error {
	for tn, p := range t.changes {
		if _, ok := t.heads[tn]; !ok {
			return model.NotFound("tenant")
		}
		n := len(p.names)
		var last int64
		if h, ok := t.headsRead[tn]; ok {
			// Read under the lock with the group's reads: the new head is queued with the
			// changes (docs/decisions/0232-begin-commit-pipelined.md).
			last = h + int64(n)
			t.headsRead[tn] = last
			if err := t.write(`INSERT INTO stream_heads (tenant_id, seq) VALUES ($1, $2)
				ON CONFLICT (tenant_id) DO UPDATE SET seq = excluded.seq`, tn, last); err != nil {
				return err
			}
		} else if _, err := t.scan(`INSERT INTO stream_heads (tenant_id, seq) VALUES ($1, $2)
			ON CONFLICT (tenant_id) DO UPDATE SET seq = stream_heads.seq + excluded.seq RETURNING seq`,
			[]any{tn, int64(n)}, &last); err != nil {
			return err
		}
		head := last - int64(n)
		t.heads[tn] = last
		for i := range n {
			// The data, or the event whose document they are as this transaction leaves
			// it (feed_events.go).
			var data, event any = p.data[i], nil
			if id := t.publishedEvent(tn, []byte(p.data[i])); id != "" {
				data, event = nil, id
			}
			// Queued one a row, sent as multi-row inserts (rows.go).
			if err := t.write(insertChange, tn, head+int64(i)+1, p.names[i], p.perms[i], p.teams[i], p.at[i], data, event); err != nil {
				return err
			}
		}
	}
	t.changes = nil
	return nil
}

// insertChange writes one stream change.
const insertChange = `INSERT INTO stream_changes (tenant_id, seq, name, perm, team_id, at, data, event_id) VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::uuid)`

// nudgeFeed wakes the poller (a change of this process committed).
func (db *DB) nudgeFeed() {
	select {
	case db.feed.wake <- struct{}{}:
	default:
	}
}

// FeedHead is the seq of a tenant's changes up to which the poller has delivered. For a
// tenant it does not follow yet, it is the tenant's last seq now, and the poller follows
// the tenant from there.
func (db *DB) FeedHead(ctx context.Context, tenantID string) (uint64, error) {
	tn, err := canonTenant(tenantID)
	if err != nil {
		return 0, err
	}
	db.feed.mu.Lock()
	h, ok := db.feed.heads[tn]
	db.feed.mu.Unlock()
	if ok {
		return h, nil
	}
	var last int64
	err = db.pool.QueryRow(ctx, "SELECT coalesce((SELECT seq FROM stream_heads WHERE tenant_id = $1), 0)", tn).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	db.feed.mu.Lock()
	defer db.feed.mu.Unlock()
	if h, ok := db.feed.heads[tn]; ok {
		return h, nil // set meanwhile: the poller may have delivered past last
	}
	if db.feed.heads == nil {
		db.feed.heads = map[string]uint64{}
	}
	db.feed.heads[tn] = uint64(last)
	return uint64(last), nil
}

// FollowChanges starts the poller (once).
func (db *DB) FollowChanges(watching func() []string, deliver func(string, model.Change)) {
	db.feed.once.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		db.feed.stop, db.feed.done = stop, make(chan struct{})
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

// pollFeed delivers the changes of the watched tenants after their heads, up to feedKeep of
// each, with one query per tenant sent together (each touches one tenant: one shard on
// Citus); more is true when a tenant filled its page.
func (db *DB) pollFeed(ctx context.Context, watching func() []string, deliver func(string, model.Change)) (more bool, err error) {
	type watched struct {
		tenant string
		head   uint64
	}
	var ws []watched
	db.feed.mu.Lock()
	now := map[string]bool{}
	for _, tn := range watching() {
		now[canonicalTenant(tn)] = true
		if h, ok := db.feed.heads[canonicalTenant(tn)]; ok {
			ws = append(ws, watched{tn, h})
		}
	}
	// A tenant no longer watched is dropped: its head would be stale when a subscriber
	// comes back (FeedHead then reads it afresh).
	for tn := range db.feed.heads {
		if !now[tn] {
			delete(db.feed.heads, tn)
		}
	}
	db.feed.mu.Unlock()
	if len(ws) == 0 {
		return false, nil
	}
	b := &pgx.Batch{}
	for _, w := range ws {
		b.Queue(changeRows+` WHERE s.tenant_id = $1 AND s.seq > $2 ORDER BY s.seq LIMIT $3`,
			canonicalTenant(w.tenant), int64(w.head), feedKeep)
	}
	br := db.pool.SendBatch(ctx, b)
	defer br.Close()
	for _, w := range ws {
		rows, err := br.Query()
		if err != nil {
			return false, err
		}
		n, last := 0, w.head
		err = forChanges(rows, func(_ string, c model.Change) {
			deliver(w.tenant, c)
			last = c.Seq
			n++
		})
		if err != nil {
			return false, err
		}
		db.feed.mu.Lock()
		if h, ok := db.feed.heads[canonicalTenant(w.tenant)]; ok && h == w.head {
			db.feed.heads[canonicalTenant(w.tenant)] = last
		}
		db.feed.mu.Unlock()
		more = more || n == feedKeep
	}
	return more, br.Close()
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

// ChangesAfter reads a tenant's changes after a seq, then the tenant's bounds, in one round
// trip: after is held when no change after it was pruned (read after the changes: a prune
// between the two shows) and it is no greater than the tenant's last seq.
func (db *DB) ChangesAfter(ctx context.Context, tenantID string, after uint64) (out []model.Change, held bool, err error) {
	tn, err := canonTenant(tenantID)
	if err != nil {
		return nil, false, err
	}
	b := &pgx.Batch{}
	b.Queue(changeRows+` WHERE s.tenant_id = $1 AND s.seq > $2 ORDER BY s.seq LIMIT $3`, tn, int64(after), feedKeep+1)
	b.Queue(`SELECT coalesce((SELECT seq FROM stream_heads WHERE tenant_id = $1), 0),
		coalesce((SELECT upto FROM stream_pruned WHERE tenant_id = $1), 0)`, tn)
	br := db.pool.SendBatch(ctx, b)
	defer br.Close()
	out = []model.Change{}
	var last, upto int64
	rows, err := br.Query()
	if err == nil {
		err = forChanges(rows, func(_ string, c model.Change) { out = append(out, c) })
	}
	if err == nil {
		err = br.QueryRow().Scan(&last, &upto)
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: %w", err)
	}
	held = after >= uint64(upto) && after <= uint64(last) && len(out) <= feedKeep
	if len(out) > feedKeep {
		out = out[:feedKeep]
	}
	return out, held, br.Close()
}

// pruneFeed deletes each tenant's changes but the last feedKeep, in one process at a
// time, and only those up to the tenant's last seq at this process's previous prune: they
// have been committed for a while, so every process's poller has delivered them.
func (db *DB) pruneFeed(ctx context.Context) error {
	rows, err := db.pool.Query(ctx, "SELECT tenant_id::text, seq FROM stream_heads")
	if err != nil {
		return err
	}
	heads := map[string]uint64{}
	var tn string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&tn, &seq}, func() error {
		heads[tn] = uint64(seq)
		return nil
	}); err != nil {
		return err
	}
	below := db.feed.pruneBelow
	db.feed.pruneBelow = heads
	if len(below) == 0 {
		return nil
	}
	// One transaction under a transaction-level lock: a pooler in transaction mode
	// (PgBouncer) keeps no session's lock behind.
	return pgx.BeginFunc(ctx, db.pool, func(conn pgx.Tx) error {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", int64(feedPruneLock)).Scan(&got); err != nil || !got {
			return err
		}
		return pruneTenants(ctx, conn, below)
	})
}

// pruneTenants prunes the stream of each tenant of below up to its seq there.
func pruneTenants(ctx context.Context, conn pgx.Tx, below map[string]uint64) error {
	for tn, upto := range below {
		_, err := conn.Exec(ctx, `WITH cut AS (SELECT seq FROM stream_changes WHERE tenant_id = $1
				ORDER BY seq DESC OFFSET $2 LIMIT 1),
			d AS (DELETE FROM stream_changes WHERE tenant_id = $1 AND seq <= (SELECT seq FROM cut) AND seq <= $3
				RETURNING seq)
			INSERT INTO stream_pruned (tenant_id, upto) SELECT $1, max(seq) FROM d HAVING count(*) > 0
			ON CONFLICT (tenant_id) DO UPDATE SET upto = greatest(stream_pruned.upto, excluded.upto)`,
			tn, feedKeep, int64(upto))
		if err != nil {
			return err
		}
	}
	return nil
}
