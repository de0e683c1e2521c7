// Package pgtest runs a PostgreSQL cluster for the tests of one test binary: Main starts
// nothing by itself and stops the cluster at the end; the first URL starts it (initdb
// into a temp dir, pg_ctl on a free loopback port), and every URL is a fresh, empty
// database of it. A test binary that uses URL calls Main (or Run) from its TestMain.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is the test binary's PostgreSQL.
type cluster struct {
	dir    string // the temp dir: data/, the socket and the log
	bin    string // the directory of initdb and pg_ctl
	port   int
	opts   string     // the server's options (pg_ctl -o)
	asUser *user.User // nil when the tests do not run as root
	// bouncer is the PgBouncer in front of it, once a test asked for one (Bouncer).
	bouncer *bouncer
	// workers are the Citus workers of a coordinator (citus.go), nil otherwise.
	workers []*cluster
}

var (
	inMain   atomic.Bool
	once     sync.Once
	running  *cluster
	startErr error
	skipWhy  string
	dbs      atomic.Int64
)

// Main runs the tests of m and then stops the cluster, if URL started one. Use it as
// `func TestMain(m *testing.M) { pgtest.Main(m) }`.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with work of its own after the tests: it answers the exit
// code instead of exiting.
func Run(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	if running != nil {
		if err := running.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
			code = max(code, 1)
		}
	}
	return code
}

// URL returns the URL of a new, empty database. Without PostgreSQL installed the test is
// skipped with the reason, except under CI=true, where it fails.
func URL(tb testing.TB) string {
	tb.Helper()
	if !inMain.Load() {
		tb.Fatal("pgtest: call pgtest.Main(m) from the package's TestMain, which stops the cluster at the end")
	}
	once.Do(func() {
		if citusWanted() {
			running, startErr = startCitus()
		} else {
			running, startErr = start(false)
		}
	})
	if skipWhy != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("pgtest: %s (CI=true: PostgreSQL is required)", skipWhy)
		}
		tb.Skipf("pgtest: %s", skipWhy)
	}
	if startErr != nil {
		tb.Fatalf("pgtest: starting PostgreSQL: %v", startErr)
	}
	return running.newDB(tb)
}

// newDB creates a fresh database and returns its URL.
func (c *cluster) newDB(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d", dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY file_copy"); err != nil {
		tb.Fatalf("pgtest: creating a database: %v", err)
	}
	if c.workers != nil {
		if err := c.citusDB(ctx, name); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	return c.url(name)
}

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// findBin returns the bin directory of the newest PostgreSQL of Debian's layout, or of
// the one on PATH.
func findBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// start initdbs and starts a cluster. A durable one commits with synchronous_commit on,
// so that a stop loses no acknowledged commit; fsync stays off either way, as the tests
// stop the server, never the machine.
func start(durable bool) (*cluster, error) { return startWith(durable, "") }

// startWith is start with more server options (-c name=value …).
func startWith(durable bool, extra string) (*cluster, error) {
	bin := findBin()
	if bin == "" {
		skipWhy = "PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH)"
		return nil, nil
	}
	c := &cluster{bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: initdb and the server run as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			skipWhy = "running as root and there is no postgres user to run PostgreSQL as"
			return nil, nil
		}
		c.asUser = u
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	if c.asUser != nil {
		uid, _ := strconv.Atoi(c.asUser.Uid)
		gid, _ := strconv.Atoi(c.asUser.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.run("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// A port found free may be taken before the server binds it: try a few.
	for range 5 {
		if c.port, err = freePort(); err != nil {
			break
		}
		c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=%s -c full_page_writes=off -c max_connections=200%s",
			c.port, c.dir, map[bool]string{false: "off", true: "on"}[durable], extra)
		if err = c.pgctlStart(); err == nil {
			c.watch()
			return c, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// watch starts a watchdog process that stops the server and removes its directory when
// the test binary exits without Main's cleanup (a panic, a timeout, a kill).
func (c *cluster) watch() {
	pgctl := filepath.Join(c.bin, "pg_ctl")
	if c.asUser != nil {
		pgctl = "runuser -u postgres -- " + pgctl
	}
	watch(fmt.Sprintf(`%s -D '%s' -m immediate stop; rm -rf '%s'`, pgctl, c.data(), c.dir))
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// pgctlStart starts the server of an initialized cluster and waits until it accepts
// connections.
func (c *cluster) pgctlStart() error {
	return c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "-o", c.opts, "start")
}

// run runs a PostgreSQL program, as the postgres user when the tests run as root.
func (c *cluster) run(prog string, args ...string) error {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.asUser != nil {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("%s: %w\n%s\n%s", prog, err, out, log)
	}
	return nil
}

// stop stops the server (and its workers) at once and removes its directory.
func (c *cluster) stop() error {
	c.bouncer.stop()
	err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	for _, w := range c.workers {
		err = errors.Join(err, w.stop())
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Cluster is a PostgreSQL cluster of one test's own, which the test may stop and start
// again on the same port: a database outage. Its commits are durable against a stop
// (synchronous_commit on). Own starts it; the test's cleanup stops it and removes it.
type Cluster struct {
	c *cluster
}

// Own starts a cluster for the test alone (a few seconds: initdb). Like URL, it skips
// the test without PostgreSQL (and fails it under CI=true), and needs Main.
func Own(tb testing.TB) *Cluster {
	tb.Helper()
	if !inMain.Load() {
		tb.Fatal("pgtest: call pgtest.Main(m) from the package's TestMain, which stops the cluster at the end")
	}
	c, err := start(true)
	if skipWhy != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("pgtest: %s (CI=true: PostgreSQL is required)", skipWhy)
		}
		tb.Skipf("pgtest: %s", skipWhy)
	}
	if err != nil {
		tb.Fatalf("pgtest: starting PostgreSQL: %v", err)
	}
	tb.Cleanup(func() {
		// The test may have left it stopped: only the removal must succeed.
		c.bouncer.stop()
		_ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
		if err := os.RemoveAll(c.dir); err != nil {
			tb.Errorf("pgtest: removing the cluster: %v", err)
		}
	})
	return &Cluster{c: c}
}

// URL returns the URL of a new, empty database of the cluster.
func (c *Cluster) URL(tb testing.TB) string {
	tb.Helper()
	return c.c.newDB(tb)
}

// Stop stops the server at once, as a crash would (pg_ctl -m immediate): connections
// are cut, and new ones refused until Start.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	if err := c.c.run("pg_ctl", "-D", c.c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		tb.Fatalf("pgtest: stopping PostgreSQL: %v", err)
	}
}

// Start starts the stopped server again, on the same port, and waits until it accepts
// connections (after its crash recovery).
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	if err := c.c.pgctlStart(); err != nil {
		tb.Fatalf("pgtest: starting PostgreSQL again: %v", err)
	}
}

// Bin is the path of a PostgreSQL program (pg_dump, psql) of the installation the tests'
// clusters run.
func Bin(prog string) string { return filepath.Join(findBin(), prog) }
