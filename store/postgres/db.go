// Package postgres is the PostgreSQL implementation of model.Store, for the central tier
// (docs/architecture.md): one database that many fieldrelay processes share. Its schema is
// a table per kind of record (migrations/), every tenant-owned table keyed by tenant_id
// first so that Citus can distribute it (docs/decisions/0091-postgres-schema.md).
package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is a fieldrelay database on PostgreSQL.
type DB struct {
	pool      *pgxpool.Pool
	log       *slog.Logger
	versions  versions
	txTimeout time.Duration
	listener  *listener
	feed      feed
	// self names this handle in its notifications: the listener ignores its own, counted
	// when their commits returned.
	self string
	// teams holds the teams decoded by this handle's transactions (team_cache.go).
	teams teamCache
	// batch commits the Batch calls in groups (batch.go).
	batch committer
	// secrets seals and opens the stored secrets (secrets.go).
	secrets *dataKey
}

var (
	_ model.Store       = (*DB)(nil)
	_ model.SharedStore = (*DB)(nil)
)

// Shared reports true: the central tier runs several processes on one database
// (model.SharedStore).
func (db *DB) Shared() bool { return true }

// Options configure Open; zero values are fine.
type Options struct {
	// MaxConns caps the pool (0: pgxpool's default, or the URL's pool_max_conns).
	MaxConns int32
	// Log receives the migrations applied and the transactions retried (nil: discarded).
	Log *slog.Logger
	// TxTimeout bounds a transaction whose context has no deadline (0: 30 s).
	TxTimeout time.Duration
	// ListenURL is the database URL of the listener of notifications ("": the URL of
	// Open). Behind a pooler in transaction mode, which delivers no notification, it names
	// the database server itself (docs/decisions/0220-notifications-fail-closed.md).
	ListenURL string
	// SecretKey is the key of the key file that wraps the data key of the database's
	// secrets (secrets.go); Open refuses to go without it (ErrNoSecretKey).
	SecretKey *SecretKey
	// Tracer, when set, sees every statement of the pool's connections (pgx's tracing
	// hook; TestCitusRouting explains the statements it records).
	Tracer pgx.QueryTracer
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_lock key under which Open migrates: processes starting
// together migrate one after the other.
const migrationLock = 0x6669656c6472656c // "fieldrel"

// ErrBackup is returned by Backup: a PostgreSQL database is backed up with its own tools.
var ErrBackup = errors.New("backup of a PostgreSQL database is not done by fieldrelay: use pg_dump (a logical export) or pg_basebackup and WAL archiving (a physical one), and their restore")

// Open connects to the database at url, creates or migrates its schema under an advisory
// lock, refuses a database whose schema is newer than this binary, and opens the data key
// of its secrets with opt.SecretKey.
func Open(ctx context.Context, url string, opt Options) (*DB, error) {
	if opt.SecretKey == nil {
		return nil, ErrNoSecretKey
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if opt.Tracer != nil {
		cfg.ConnConfig.Tracer = opt.Tracer
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	lcfg := cfg.ConnConfig
	if opt.ListenURL != "" {
		if lcfg, err = pgx.ParseConfig(opt.ListenURL); err != nil {
			pool.Close()
			return nil, fmt.Errorf("database listen url: %w", err)
		}
		if lcfg.ConnectTimeout == 0 {
			lcfg.ConnectTimeout = defaultConnectTimeout
		}
	}
	db := &DB{pool: pool, log: log, txTimeout: cmp.Or(opt.TxTimeout, defaultTxTimeout), self: model.NewID()}
	db.feed.wake = make(chan struct{}, 1)
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.unlockSecrets(ctx, opt.SecretKey); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.startListener(ctx, lcfg); err != nil {
		pool.Close()
		return nil, fmt.Errorf("listening for the changes of other processes: %w", err)
	}
	db.startCommitter()
	return db, nil
}

// migrations returns the embedded migrations in order; the version of a file is its
// number (0001_init.sql is version 1), and versions run from 1 without gaps.
func migrations() ([]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	for i, name := range names {
		n, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, "migrations/"), "_", 2)[0])
		if err != nil || n != i+1 {
			return nil, fmt.Errorf("migration %s is out of sequence", name)
		}
	}
	return names, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	names, _ := migrations()
	return len(names)
}

// migrate applies the migrations the database lacks, one transaction each, each under a
// transaction-level advisory lock: processes starting together migrate one after the
// other, and a pooler in transaction mode (PgBouncer) keeps no session's lock behind.
func (db *DB) migrate(ctx context.Context) error {
	names, err := migrations()
	if err != nil {
		return err
	}
	for {
		done := false
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
				return fmt.Errorf("taking the migration lock: %w", err)
			}
			// Created only when missing: a serving role, which may not create tables,
			// reads it.
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT to_regclass('schema_version') IS NOT NULL").Scan(&exists); err != nil {
				return fmt.Errorf("reading schema_version: %w", err)
			}
			if !exists {
				if _, err := tx.Exec(ctx, `CREATE TABLE schema_version (
					version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
					return notOwner(fmt.Errorf("creating schema_version: %w", err), 0, len(names))
				}
			}
			var current int
			if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&current); err != nil {
				return fmt.Errorf("reading schema_version: %w", err)
			}
			if current > len(names) {
				return fmt.Errorf("the database's schema version %d is newer than this binary's %d: upgrade fieldrelay", current, len(names))
			}
			if current == len(names) {
				done = true
				return distribute(ctx, tx)
			}
			sql, err := migrationFiles.ReadFile(names[current])
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return notOwner(fmt.Errorf("migrating the schema to version %d (%s): %w", current+1, names[current], err), current, len(names))
			}
			// A migration that changes nothing a role may see (a DROP … IF EXISTS of what is
			// gone) passes as any role: the version's row is then what the serving role may
			// not write.
			if _, err := tx.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", current+1); err != nil {
				return notOwner(fmt.Errorf("migrating the schema to version %d (%s): %w", current+1, names[current], err), current, len(names))
			}
			db.log.Info("database schema migrated", "version", current+1, "migration", names[current])
			return nil
		})
		if err != nil {
			return pooler(err)
		}
		if done {
			return nil
		}
	}
}

// pooler explains the error of a pooler in transaction mode between the pool and
// PostgreSQL when the URL lets pgx keep prepared statements on the server's sessions.
func pooler(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P05" || pe.Code == "26000") {
		return fmt.Errorf("%w (a pooler in transaction mode, such as PgBouncer, is between this process and PostgreSQL: "+
			"add default_query_exec_mode=cache_describe to the database URL; see docs/operations.md)", err)
	}
	return err
}

// maxAttempts bounds the runs of one transaction that collisions undo (retryable), and
// maxPause the wait between two (pause): at most about 4 s of waiting in all.
const (
	maxAttempts = 60
	maxPause    = 64 * time.Millisecond
)

// View runs fn in a read-only transaction (READ COMMITTED, as every transaction:
// docs/decisions/0236-read-committed.md).
func (db *DB) View(ctx context.Context, fn func(model.Tx) error) error {
	return db.run(ctx, pgx.ReadOnly, fn)
}

// Update runs fn in a READ COMMITTED transaction that locks each tenant it touches
// (lockTenant), committed when fn returns nil. A run undone by a deadlock or by a unique
// key that another transaction took first is run again, whole: the hooks that fn
// registered with OnCommit run once, for the run that committed.
func (db *DB) Update(ctx context.Context, fn func(model.Tx) error) error {
	return db.run(ctx, pgx.ReadWrite, fn)
}

func (db *DB) run(ctx context.Context, mode pgx.TxAccessMode, fn func(model.Tx) error) error {
	hooks, err := db.runTx(ctx, mode, fn)
	for _, f := range hooks {
		f()
	}
	return err
}

// runTx runs fn in a transaction until it commits or fails for good, and returns the
// hooks fn registered in the run that committed.
func (db *DB) runTx(ctx context.Context, mode pgx.TxAccessMode, fn func(model.Tx) error) ([]func(), error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, db.txTimeout)
		defer cancel()
	}
	reset := false
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, unavailable(err)
		}
		t, err := db.attempt(ctx, mode, func(t *tx) error { return fn(t) })
		if err == nil {
			return t.onCommit, nil
		}
		if unreachable(err) {
			// A connection lost (the server restarted, a failover) leaves the pool's
			// other idle connections dead too: drop them all, and run fn again once on
			// a new one, unless the commit was under way (it may have committed) or no
			// connection could be opened (the database is down: answer at once).
			if reset || dialFailed(err) || (t != nil && t.committing) {
				return nil, unavailable(err)
			}
			reset = true
			db.pool.Reset()
			db.log.Warn("database connection lost; the pool was reset", "err", err)
			continue
		}
		if t == nil || !t.retry || attempt == maxAttempts {
			return nil, err
		}
		db.log.Debug("transaction retried", "attempt", attempt, "cause", t.cause)
		if err := pause(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// pause waits before the next run of a transaction that collided: a random time up to a
// bound that doubles with every attempt, from 1 ms to maxPause (exponential backoff with
// full jitter), so that transactions that keep colliding under load spread out instead of
// colliding again. It returns early with ctx's error.
func pause(ctx context.Context, attempt int) error {
	bound := min(time.Millisecond<<min(attempt-1, 16), maxPause)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(bound))) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attempt runs body in one transaction, committed when it returns nil; the returned tx
// tells whether a failure may be retried.
func (db *DB) attempt(ctx context.Context, mode pgx.TxAccessMode, body func(*tx) error) (t *tx, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: beginning a transaction: %w", err)
	}
	t = &tx{ctx: ctx, conn: conn, db: db, seed: rand.Uint64(), rw: mode == pgx.ReadWrite, pending: &pgx.Batch{}}
	// Sent with the first statement (tx.send).
	if mode == pgx.ReadWrite {
		t.pending.Queue("begin isolation level read committed read write")
	} else {
		t.pending.Queue("begin isolation level read committed read only")
	}
	defer func() {
		// Not committed: body failed, or never returned (a panic, a test's t.Fatal): the
		// connection goes back to the pool rolled back either way (a connection left in
		// a transaction is closed by the pool).
		if t.begun {
			// Bounded: on a connection gone silent, a rollback would wait forever.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultConnectTimeout)
			_, _ = conn.Exec(rctx, "rollback")
			cancel()
		}
		conn.Release()
	}()
	if err := body(t); err != nil {
		return t, err
	}
	if err := t.flushUsage(); err != nil {
		return t, err
	}
	if err := t.flushChanges(); err != nil {
		return t, err
	}
	if t.failed != nil {
		// fn went on after a failed statement: the transaction is aborted.
		return t, t.failed
	}
	t.committing = true
	if err := t.commit(); err != nil {
		return t, err
	}
	return t, nil
}

// retryable reports the errors after which a transaction is run again: deadlocks (two
// transactions locking two tenants or global rows in opposite orders), unique violations,
// which a transaction meets when another one inserted the key it had found free (the next
// run finds it taken: claimRow, the slug and email lookups), and serialization failures,
// which READ COMMITTED does not raise but a server may (docs/decisions/0236-read-committed.md).
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "23505":
			return true
		}
	}
	return false
}

// Version returns the directory version of a tenant ("" for all tenants). The counters
// live in this process: they change when a commit of this process that changed the
// directory returns, and when the listener hears of one made through another process;
// while the listener is disconnected, every call returns a
// new number (docs/decisions/0104-directory-versions.md).
func (db *DB) Version(tenantID string) uint64 { return db.versions.get(tenantID) }

// Backup refuses: see ErrBackup.
func (db *DB) Backup(ctx context.Context, _ io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, ErrBackup
}

// Close stops the listener and closes the pool, waiting for the connections in use to be
// released.
func (db *DB) Close() error {
	db.stopCommitter()
	db.closeFeed()
	db.listener.close()
	db.pool.Close()
	return nil
}

// Pool returns the connection pool (for health checks and tests).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// versions count the commits that changed a tenant's directory.
type versions struct {
	all       atomic.Uint64
	perTenant sync.Map // tenant id → *atomic.Uint64
	// down is set while the listener has no connection: get then answers numbers that
	// no counter reaches (the top bit set), a new one each call, from miss.
	down atomic.Bool
	miss atomic.Uint64
}

func (v *versions) counter(tenantID string) *atomic.Uint64 {
	if c, ok := v.perTenant.Load(tenantID); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := v.perTenant.LoadOrStore(tenantID, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (v *versions) get(tenantID string) uint64 {
	if v.down.Load() {
		return 1<<63 | v.miss.Add(1)
	}
	if tenantID == "" {
		return v.all.Load()
	}
	return v.counter(tenantID).Load()
}

func (v *versions) bump(tenantID string) {
	v.counter(tenantID).Add(1)
	v.all.Add(1)
}

// bumpAll bumps every counter.
func (v *versions) bumpAll() {
	v.perTenant.Range(func(_, c any) bool {
		c.(*atomic.Uint64).Add(1)
		return true
	})
	v.all.Add(1)
}
