package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Citus (`make citus-test`, docs/decisions/0241-citus-test.md): with PGTEST_CITUS=1, URL's
// cluster is a Citus coordinator with two workers, each a cluster on a loopback port, and
// each database URL gives has the citus extension on the three, the workers added: the
// migration then distributes the schema (store/postgres/citus.go). Without the extension
// installed (.ci/build-citus builds it), the tests that ask for a database are skipped with
// the reason, or fail under CI=true.

// citusWorkers is how many workers the coordinator has.
const citusWorkers = 2

// citusOpts are the server options of the coordinator and of the workers: Citus is
// preloaded, and a distributed table has 4 shards instead of 32, which a test's fresh
// database creates faster on a loaded 2-core machine. The coordinator reaches the workers
// without TLS (citus.node_conninfo: the nodes share the loopback; Citus's default,
// sslmode=require, encrypted every statement and handshook every new connection), and a
// statement across shards takes one connection per worker (its shards one after the
// other) instead of one per shard: the extra ones, opened by every due-outbox poll and
// closed at its end, made the workers start a backend twice a second
// (docs/decisions/0242-citus-node-connections.md).
const citusOpts = " -c shared_preload_libraries=citus -c citus.shard_count=4 -c citus.node_conninfo=sslmode=disable -c citus.max_adaptive_executor_pool_size=1"

// citusWanted reports whether the tests asked for Citus.
func citusWanted() bool { return os.Getenv("PGTEST_CITUS") == "1" }

// Citus reports whether URL's databases are on a Citus coordinator.
func Citus() bool { return citusWanted() }

// startCitus starts the workers, then the coordinator.
func startCitus() (*cluster, error) {
	bin := findBin()
	if bin == "" {
		return start(false) // says that PostgreSQL is not installed
	}
	share, err := exec.Command(filepath.Join(bin, "pg_config"), "--sharedir").Output()
	if err != nil {
		return nil, fmt.Errorf("pg_config --sharedir: %w", err)
	}
	control := filepath.Join(strings.TrimSpace(string(share)), "extension", "citus.control")
	if _, err := os.Stat(control); err != nil {
		skipWhy = "PGTEST_CITUS=1 but the citus extension is not installed (no " + control + "): build it with .ci/build-citus"
		return nil, nil
	}
	var workers []*cluster
	for range citusWorkers {
		w, err := startWith(false, citusOpts)
		if w == nil || err != nil {
			for _, w := range workers {
				_ = w.stop()
			}
			return nil, err
		}
		// The serving role exists on every node: the coordinator connects to the
		// workers as the session's role, and a role made in a DO block is not propagated.
		if err := w.exec(context.Background(), "postgres", "CREATE ROLE "+AppRole+" LOGIN"); err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}
	c, err := startWith(false, citusOpts)
	if c == nil || err != nil {
		for _, w := range workers {
			_ = w.stop()
		}
		return nil, err
	}
	c.workers = workers
	return c, nil
}

// citusDB makes the database name of the coordinator a Citus one: the database and the
// extension on every worker, the extension on the coordinator, the workers added.
func (c *cluster) citusDB(ctx context.Context, name string) error {
	for _, w := range c.workers {
		if err := w.exec(ctx, "postgres", "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY file_copy"); err != nil {
			return err
		}
		if err := w.exec(ctx, name, "CREATE EXTENSION citus"); err != nil {
			return err
		}
	}
	if err := c.exec(ctx, name, "CREATE EXTENSION citus"); err != nil {
		return err
	}
	if err := c.exec(ctx, name, fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %d)", c.port)); err != nil {
		return err
	}
	for _, w := range c.workers {
		if err := c.exec(ctx, name, fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %d)", w.port)); err != nil {
			return err
		}
	}
	return nil
}

// exec runs one statement in the database db of the cluster, as postgres.
func (c *cluster) exec(ctx context.Context, db, sql string) error {
	conn, err := pgx.Connect(ctx, c.url(db))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s (port %d, %s): %w", sql, c.port, db, err)
	}
	return nil
}
