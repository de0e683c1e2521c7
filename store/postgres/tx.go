package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tx implements model.Tx over one PostgreSQL transaction. The methods of model.Tx take no
// context: tx holds the one of View or Update. This file holds the helpers every area
// uses; each tx_<area>.go holds the methods of one area.
//
// The transaction's BEGIN is not a round trip of its own: it is queued (pending) and goes
// out with the first statement, and the COMMIT goes out with the last writes (commit).
type tx struct {
	ctx  context.Context
	conn *pgxpool.Conn
	db   *DB
	// begun is set once the BEGIN was sent: the connection then holds a transaction to
	// end, by the commit or a rollback.
	begun    bool
	onCommit []func()
	// notified holds the tenants whose directory change this transaction announced.
	notified map[string]bool
	// changes holds the stream changes of this run by tenant, added before the commit
	// (feed.go).
	changes map[string]*pendingChanges
	// events holds the documents of the events this run wrote, by tenant: a stream change
	// that carries one names its event instead (feed_events.go).
	events map[string]*eventDocs
	// failed is the first statement error: PostgreSQL aborts the transaction there.
	failed error
	// retry is set when that error (or the commit's) allows running the whole fn again.
	retry bool
	cause error
	// seed is drawn at random for each run of the transaction (usageShard).
	seed uint64
	// committing is set once the commit is sent: a connection lost then leaves the
	// outcome unknown, and fn is not run again.
	committing bool
	// wroteTeams is set once the transaction wrote a team: its team reads skip the cache
	// (team_cache.go).
	wroteTeams bool
	// known holds the tenants this transaction saw exist: tenants are never deleted, so
	// the check is made once per tenant and transaction (requireTenant).
	known map[string]bool
	// rw is set in a write transaction: it locks what it reads (lockTenant, forUpdate).
	rw bool
	// locked holds the tenants whose row this write transaction locked (lockTenant), and
	// heads those of them that exist (or that it created), whose stream changes it may
	// number: no other transaction numbers them until this one ends; flushChanges records
	// there the last seq it gave (feed.go).
	locked map[string]bool
	heads  map[string]int64
	// headsRead holds the stream heads read under the lock (readForGroup): flushChanges
	// numbers after them and writes the new head with the changes.
	headsRead map[string]int64
	// missing holds the global rows (table/key) that this write transaction read and
	// found absent: it inserts them without ON CONFLICT (claimRow); metaRead the meta
	// values it read, which it writes only if unchanged (PutMeta).
	missing  map[string]bool
	metaRead map[string][]byte
	// pending holds the writes whose outcome is only success or failure, sent together
	// with the next statement or before the commit (write, flush).
	pending *pgx.Batch
	// usage holds the counters added to tenants known to exist, written before the
	// commit (AddUsage).
	usage map[usageKey]uint64
	// upstreams holds the upstream settings documents read (nil: none), by tenant
	// (Upstream): a group of Batch calls reads each tenant's once.
	upstreams map[string][]byte
	// group holds the replies read for a Batch group (batch_reads.go).
	group *groupReads
	// local is the engine's state for this run of the transaction (model.TxLocal).
	local model.TxLocal
}

var _ model.Tx = (*tx)(nil)

func (t *tx) OnCommit(fn func()) { t.onCommit = append(t.onCommit, fn) }

// Local implements model.Tx.
func (t *tx) Local() *model.TxLocal { return &t.local }

// changed bumps the tenant's directory version once the transaction commits, in this
// process at once and in the others when they hear the notification that the commit
// delivers (listener.go).
func (t *tx) changed(tenantID string) {
	tn := canonicalTenant(tenantID)
	if t.notified[tn] {
		return
	}
	if t.notified == nil {
		t.notified = map[string]bool{}
	}
	t.notified[tn] = true
	// A failure is noted in t.failed: the transaction does not commit.
	_, _ = t.exec("SELECT pg_notify($1, $2)", directoryChannel, t.db.self+" "+tn)
	t.OnCommit(func() { t.db.versions.bump(tn) })
}

// note records a statement's error.
func (t *tx) note(err error) {
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		return
	}
	if t.failed == nil {
		t.failed = err
	}
	if retryable(err) {
		t.retry, t.cause = true, err
	}
}

// write queues a statement whose only outcome the caller needs is success or failure:
// it goes out in one round trip with the statements queued after it and the next one
// that needs an answer (or the commit). A failure is noted as for any statement and
// returned by that later call: PostgreSQL aborts the transaction at the first failed
// statement, so nothing that runs after it can commit either way.
func (t *tx) write(sql string, args ...any) error {
	if t.pending == nil {
		t.pending = &pgx.Batch{}
	} else if t.pending.Len() >= maxPending {
		if err := t.flush(); err != nil {
			return err
		}
		t.pending = &pgx.Batch{}
	}
	t.pending.Queue(sql, args...)
	return nil
}

// maxPending bounds the writes queued before they are sent on their own.
const maxPending = 256

// send sends the queued writes followed by the statement that queue adds (none when
// queue is nil), reads the outcome of each write, and returns the results, positioned at
// that statement's, for the caller to read and close. A failed write is returned as err.
func (t *tx) send(queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	b := t.pending
	if b == nil {
		b = &pgx.Batch{}
	}
	t.pending = nil
	b = mergeRows(b)
	n := b.Len()
	if queue != nil {
		queue(b)
	}
	t.begun = true
	br := t.conn.SendBatch(t.ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			t.note(err)
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	return br, nil
}

// commit sends the queued writes and the COMMIT, in one round trip. A write that fails
// there fails the transaction as any statement does (PostgreSQL skips the COMMIT that
// follows it in the pipeline); a transaction that sent nothing but its BEGIN, which is
// still queued, has nothing to commit.
func (t *tx) commit() error {
	if !t.begun && t.pending.Len() == 1 {
		t.pending = nil
		return nil
	}
	br, err := t.send(func(b *pgx.Batch) { b.Queue("commit") })
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	t.note(err)
	if err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	t.begun = false
	return nil
}

// flush sends the queued writes, if any.
func (t *tx) flush() error {
	if t.pending == nil || t.pending.Len() == 0 {
		return nil
	}
	br, err := t.send(nil)
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		t.note(err)
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

func (t *tx) exec(sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	var err error
	if t.pending != nil && t.pending.Len() > 0 {
		var br pgx.BatchResults
		if br, err = t.send(func(b *pgx.Batch) { b.Queue(sql, args...) }); err != nil {
			return tag, err
		}
		tag, err = br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	} else {
		tag, err = t.conn.Exec(t.ctx, sql, args...)
	}
	t.note(err)
	if err != nil {
		return tag, fmt.Errorf("postgres: %w", err)
	}
	return tag, nil
}

// scan runs a one-row query; found is false when there is no row.
func (t *tx) scan(sql string, args []any, dest ...any) (found bool, err error) {
	if t.pending != nil && t.pending.Len() > 0 {
		br, serr := t.send(func(b *pgx.Batch) { b.Queue(sql, args...) })
		if serr != nil {
			return false, serr
		}
		err = br.QueryRow().Scan(dest...)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	} else {
		err = t.conn.QueryRow(t.ctx, sql, args...).Scan(dest...)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	t.note(err)
	if err != nil {
		return false, fmt.Errorf("postgres: %w", err)
	}
	return true, nil
}

// each runs a query and calls fn for each row until fn returns false or an error.
func (t *tx) each(sql string, args []any, fn func(pgx.Rows) (bool, error)) error {
	if err := t.flush(); err != nil {
		return err
	}
	rows, err := t.conn.Query(t.ctx, sql, args...)
	if err != nil {
		t.note(err)
		return fmt.Errorf("postgres: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		more, err := fn(rows)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		t.note(err)
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// docs lists the JSON documents of a query, decoded.
func docs[T any](t *tx, sql string, args ...any) ([]T, error) {
	out := []T{}
	err := t.each(sql, args, func(r pgx.Rows) (bool, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return false, err
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, fmt.Errorf("postgres: decoding a record: %w", err)
		}
		out = append(out, v)
		return true, nil
	})
	return out, err
}

// getDoc decodes the one JSON document a query finds, or returns NotFound(what).
func getDoc[T any](t *tx, what, sql string, args ...any) (*T, error) {
	var raw []byte
	found, err := t.scan(sql, args, &raw)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound(what)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("postgres: decoding a %s: %w", what, err)
	}
	return &v, nil
}

// uid returns the canonical form of a UUID; ok is false for a malformed one.
func uid(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// ids canonicalizes a tenant id and a record id: a malformed one names no record
// (KindNotFound, what naming the record).
func ids(tenantID, id, what string) (string, string, error) {
	tn, ok := uid(tenantID)
	if !ok {
		return "", "", model.NotFound("tenant")
	}
	r, ok := uid(id)
	if !ok {
		return "", "", model.NotFound(what)
	}
	return tn, r, nil
}

// canonTenant canonicalizes a tenant id (KindNotFound when malformed).
func canonTenant(id string) (string, error) {
	tn, ok := uid(id)
	if !ok {
		return "", model.NotFound("tenant")
	}
	return tn, nil
}

// ids is the package's ids for a method of tx, and canonTenant its canonTenant: in a
// write transaction they lock the tenant first (lockTenant).
func (t *tx) ids(tenantID, id, what string) (string, string, error) {
	tn, r, err := ids(tenantID, id, what)
	if err != nil {
		return "", "", err
	}
	return tn, r, t.lockTenant(tn)
}

func (t *tx) canonTenant(id string) (string, error) {
	tn, err := canonTenant(id)
	if err != nil {
		return "", err
	}
	return tn, t.lockTenant(tn)
}

// lockTenant makes a write transaction the only one writing a tenant's records until it
// ends (docs/decisions/0236-read-committed.md): the first statement about a tenant in the
// transaction is preceded by a lock of the tenant's row, which also tells whether the
// tenant exists (the round trip that put's first statement of a tenant used to make; a
// group of Batch calls makes it once). Isolation is READ COMMITTED: each statement that follows
// sees every write committed before the lock was granted, so a read-modify-write of the
// tenant's records (an idempotency key, an outbox entry's lease, a mission's state) runs
// as if alone. The lock is FOR NO KEY UPDATE: it waits for no foreign key check (FOR KEY
// SHARE), and on Citus it is one row of the tenant's shard. A tenant that does not exist
// locks nothing: the statements that follow answer KindNotFound.
func (t *tx) lockTenant(tn string) error {
	if !t.rw || t.locked[tn] {
		return nil
	}
	if t.locked == nil {
		t.locked = map[string]bool{}
	}
	t.locked[tn] = true
	var one int
	found, err := t.scan(lockTenantSQL, []any{tn}, &one)
	if found {
		t.lockedExisting(tn)
	}
	return err
}

// lockedExisting records that this transaction locked tenant tn, which exists.
func (t *tx) lockedExisting(tn string) {
	t.exists(tn)
	if t.heads == nil {
		t.heads = map[string]int64{}
	}
	t.heads[tn] = 0 // numbered by flushChanges, under this lock
}

// lockTenantSQL locks tenant $1's row, and answers a row when the tenant exists.
const lockTenantSQL = `SELECT 1 FROM tenants WHERE tenant_id = $1 FOR NO KEY UPDATE OF tenants`

// forUpdate is the locking clause of the read of one row of a global table (login guards,
// auth tokens) in a write transaction: the row stays locked until the end, so a
// read-modify-write of it runs as if alone. A row found missing is noted (key: table and
// key), and claimRow tells its writer to insert it without ON CONFLICT: of two
// transactions that both found it missing, the unique key fails the second, which runs
// again and finds it (retryable). Meta is read without a lock (many writers of every
// tenant read the node's id or a secret) and written only as it was read (PutMeta).
func (t *tx) forUpdate() string {
	if t.rw {
		return " FOR UPDATE"
	}
	return ""
}

// readRow notes whether the row key of a global table was found by a read made with
// forUpdate.
func (t *tx) readRow(key string, found bool) {
	if !t.rw {
		return
	}
	if t.missing == nil {
		t.missing = map[string]bool{}
	}
	t.missing[key] = !found
}

// errRowChanged is the error of a write of a row read in the transaction and changed
// since by another: retryable, as a serialization failure.
var errRowChanged = &pgconn.PgError{Code: "40001", Message: "a row read by the transaction changed before its write"}

// claimRow reports whether the row key was read and found missing in this transaction:
// its insert must then fail on a row another transaction inserted meanwhile.
func (t *tx) claimRow(key string) bool { return t.missing[key] }

// requireTenant returns KindNotFound when the tenant does not exist; a tenant found is
// not looked up again in this transaction.
func (t *tx) requireTenant(tenantID string) error {
	if t.known[tenantID] {
		return nil
	}
	var one int
	found, err := t.scan("SELECT 1 FROM tenants WHERE tenant_id = $1", []any{tenantID}, &one)
	if err != nil {
		return err
	}
	if !found {
		return model.NotFound("tenant")
	}
	t.exists(tenantID)
	return nil
}

// exists records that a tenant (canonical id) exists.
func (t *tx) exists(tenantID string) {
	if t.known == nil {
		t.known = map[string]bool{}
	}
	t.known[tenantID] = true
}

// tenantOf canonicalizes a tenant id and checks that the tenant exists.
func (t *tx) tenantOf(id string) (string, error) {
	tn, err := t.canonTenant(id)
	if err != nil {
		return "", err
	}
	return tn, t.requireTenant(tn)
}

// put runs an insert or upsert whose rows come from `SELECT … WHERE EXISTS (the tenant)`:
// no row written means no tenant. Once the transaction saw the tenant ($1) exist, the row
// is always written (every such statement updates on conflict), and the statement is
// queued (write) instead of waiting for its answer, without the condition: the table's
// foreign key to tenants checks the tenant, once (docs/decisions/0227-event-stored-once.md).
func (t *tx) put(sql string, args ...any) error {
	tn, _ := args[0].(string)
	if t.known[tn] {
		return t.write(t.ofTenant(tn, sql), args...)
	}
	tag, err := t.exec(sql, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return model.NotFound("tenant")
	}
	t.exists(tn)
	return nil
}

// ifTenant is the condition of put's statements; $1 is the tenant id.
const ifTenant = ` WHERE EXISTS (SELECT 1 FROM tenants WHERE tenant_id = $1)`

// ofTenant is a statement `INSERT … SELECT <values>` + ifTenant + `…` for the tenant tn: once
// the transaction saw the tenant (in a write transaction, by its lock: lockTenant; tenants
// are never deleted), `INSERT … VALUES (<values>) …`, one row of one tenant, which Citus
// routes to the tenant's shard (an INSERT … SELECT goes through the coordinator); the
// statement as it is otherwise.
func (t *tx) ofTenant(tn, sql string) string {
	if !t.known[tn] {
		return sql
	}
	if v, ok := valuesForms.Load(sql); ok {
		return v.(string)
	}
	sel := selectValues.FindStringIndex(sql)
	if sel == nil {
		return sql
	}
	values, tail, ok := strings.Cut(sql[sel[1]:], ifTenant)
	if !ok {
		return sql
	}
	v := sql[:sel[0]] + ") VALUES (" + values + ")" + tail
	valuesForms.Store(sql, v)
	return v
}

// valuesForms holds the VALUES form of each statement ofTenant rewrote.
var valuesForms sync.Map

// selectValues is where the columns of an INSERT end and its SELECT begins.
var selectValues = regexp.MustCompile(`\)\s+SELECT\s+`)

// A list's cursor is the unpadded base64url form of the 16 bytes of the last id it
// returned; the next page starts after that id.
func encodeCursor(id string) string {
	u := uuid.MustParse(id)
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// decodeCursor returns the id a cursor names, nil for no cursor; a malformed cursor is
// a validation_error on `cursor`.
func decodeCursor(c string) (*string, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 16 {
		return nil, model.Invalid("cursor", "cursor is not valid")
	}
	s := uuid.UUID(b).String()
	return &s, nil
}

// newest lists a page of a tenant's documents in table, newest first (page); table is one
// of this package's table names, never input.
func newest[T any](t *tx, table, tenantID string, p model.Page) ([]T, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, "", err
	}
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	return page[T](t, p, `SELECT id, doc FROM `+table+`
		WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`, tn, after, limitOf(p))
}

// page lists newest first the documents of a query whose rows are (id, doc), ordered by
// id descending, applying Page.Full to the stored JSON; it returns the next cursor.
func page[T any](t *tx, p model.Page, sql string, args ...any) ([]T, string, error) {
	out := []T{}
	var last, next string
	size := 0
	err := t.each(sql, args, func(r pgx.Rows) (bool, error) {
		var id string
		var raw []byte
		if err := r.Scan(&id, &raw); err != nil {
			return false, err
		}
		if p.Full(len(out), size, len(raw)) {
			next = encodeCursor(last)
			return false, nil
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, fmt.Errorf("postgres: decoding a record: %w", err)
		}
		out = append(out, v)
		last, size = id, size+len(raw)
		return true, nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// limitOf is the LIMIT of a page's query: one row past Limit tells whether a next page
// exists; 0 means none (LIMIT NULL).
func limitOf(p model.Page) *int64 {
	if p.Limit <= 0 {
		return nil
	}
	n := int64(p.Limit) + 1
	return &n
}

// jsonOf encodes a record for a json or jsonb column. A json.RawMessage is sent as JSON
// text in every query mode of pgx, default_query_exec_mode=exec and simple_protocol
// included, where a []byte would go as bytea (docs/decisions/0220-notifications-fail-closed.md).
func jsonOf(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("postgres: encoding a record: %w", err)
	}
	return raw, nil
}

// Meta returns an installation-wide value, or nil.
func (t *tx) Meta(key string) ([]byte, error) {
	var v []byte
	found, err := t.scan("SELECT value FROM meta WHERE key = $1", []any{key}, &v)
	if err != nil {
		return nil, err
	}
	t.readRow("meta/"+key, found)
	if found && t.rw {
		if t.metaRead == nil {
			t.metaRead = map[string][]byte{}
		}
		t.metaRead[key] = v
	}
	if !found {
		return nil, nil
	}
	if isSecretMeta(key) {
		return t.db.secrets.openMeta(key, v)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// PutMeta stores an installation-wide value; a secret sealed (secrets.go).
func (t *tx) PutMeta(key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	if isSecretMeta(key) {
		value = t.db.secrets.sealMeta(key, value)
	}
	if t.claimRow("meta/" + key) {
		_, err := t.exec(`INSERT INTO meta (key, value) VALUES ($1, $2)`, key, value)
		return err
	}
	if old, ok := t.metaRead[key]; ok {
		// Written only as it was read: another transaction's write in between makes this
		// one run again, whole (a lease, a periodic claim), as serializable did.
		tag, err := t.exec(`UPDATE meta SET value = $2 WHERE key = $1 AND value = $3`, key, value, old)
		if err == nil && tag.RowsAffected() == 0 {
			err = errRowChanged
			t.note(err)
		}
		if err == nil {
			t.metaRead[key] = value
		}
		return err
	}
	_, err := t.exec(`INSERT INTO meta (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
