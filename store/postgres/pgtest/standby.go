package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Failover (docs/decisions/0225-failover.md): a cluster of the test's own (Own) with a
// streaming standby made as an operator makes one, pg_basebackup -R; the test kills the
// primary (Kill) and promotes the standby (Promote), while the processes reach both through
// one multi-host URL (FailoverURL).

// Standby starts a streaming standby of c: pg_basebackup -R from it into a directory of its
// own, on a port of its own, read-only until Promote. With synchronous, c commits only once
// the standby has flushed the commit (synchronous_standby_names): a failover loses nothing
// acknowledged. The test's cleanup stops the standby and removes it.
func (c *Cluster) Standby(tb testing.TB, synchronous bool) *Cluster {
	tb.Helper()
	p := c.c
	s := &cluster{bin: p.bin, asUser: p.asUser}
	dir, err := os.MkdirTemp("", "pgtest-standby-")
	if err != nil {
		tb.Fatal(err)
	}
	s.dir = dir
	tb.Cleanup(func() {
		_ = s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
		if err := os.RemoveAll(s.dir); err != nil {
			tb.Errorf("pgtest: removing the standby: %v", err)
		}
	})
	if s.asUser != nil {
		uid, _ := strconv.Atoi(s.asUser.Uid)
		gid, _ := strconv.Atoi(s.asUser.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres",
		"-D", s.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		tb.Fatalf("pgtest: pg_basebackup: %v", err)
	}
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		// The primary's options on the standby's port; cluster_name names it to the primary.
		s.opts = strings.Replace(p.opts, fmt.Sprintf("-p %d -k %s", p.port, p.dir), fmt.Sprintf("-p %d -k %s", s.port, s.dir), 1) +
			" -c cluster_name=standby"
		if err = s.pgctlStart(); err == nil {
			break
		}
	}
	if err != nil {
		tb.Fatalf("pgtest: starting the standby: %v", err)
	}
	s.watch()
	if synchronous {
		// Set on the primary alone, after the base backup: the promoted standby, which has
		// no standby of its own, must not wait for one.
		c.exec(tb, "ALTER SYSTEM SET synchronous_standby_names = 'standby'")
		c.exec(tb, "SELECT pg_reload_conf()")
	}
	// Ready once the primary streams to it (and, when asked, synchronously).
	want := map[bool]string{false: "async", true: "sync"}[synchronous]
	deadline := time.Now().Add(time.Minute)
	for {
		var state string
		err := c.query(tb, "SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby' AND state = 'streaming'), '')", &state)
		if err == nil && state == want {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgtest: the standby is not streaming (%s) within a minute: %q %v", want, state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Cluster{c: s}
}

// Kill kills the server's postmaster with SIGKILL, as a machine lost would: no shutdown,
// no checkpoint; its backends end when they notice. It stays down (the test does not start
// it again: after a failover the old primary would have to be rebuilt as a standby).
func (c *Cluster) Kill(tb testing.TB) {
	tb.Helper()
	pidFile, err := os.ReadFile(filepath.Join(c.c.data(), "postmaster.pid"))
	if err != nil {
		tb.Fatalf("pgtest: the postmaster's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	if err != nil {
		tb.Fatalf("pgtest: postmaster.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		tb.Fatalf("pgtest: kill -9 %d: %v", pid, err)
	}
}

// Promote makes a standby the primary (pg_ctl promote) and waits until it accepts writes.
func (c *Cluster) Promote(tb testing.TB) {
	tb.Helper()
	if err := c.c.run("pg_ctl", "-D", c.c.data(), "-w", "-t", "60", "promote"); err != nil {
		tb.Fatalf("pgtest: pg_ctl promote: %v", err)
	}
}

// FailoverURL returns url (a database of the primary's, as any role) as a multi-host URL
// naming the primary and then the standby, with target_session_attrs=read-write: a
// connection goes to whichever of the two accepts writes (docs/operations.md, "Failover").
func FailoverURL(tb testing.TB, raw string, standby *Cluster) string {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	u.Host += fmt.Sprintf(",127.0.0.1:%d", standby.c.port)
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs a statement on the server's database postgres.
func (c *Cluster) exec(tb testing.TB, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.c.url("postgres"))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// query scans the one row of a query on the server's database postgres into dst.
func (c *Cluster) query(tb testing.TB, sql string, dst ...any) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.c.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dst...)
}
