package pgtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PgBouncerMode is the query mode of pgx that the URLs of Bouncer name: with PgBouncer in
// transaction mode no prepared statement outlives a transaction
// (docs/decisions/0220-notifications-fail-closed.md).
const PgBouncerMode = "cache_describe"

// bouncer is a PgBouncer in transaction mode in front of a cluster.
type bouncer struct {
	port int
	cmd  *exec.Cmd
	dir  string
}

var (
	bouncerOnce sync.Once
	shared      *bouncer
	bouncerErr  error
)

// findBouncer returns the path of Debian's pgbouncer, or of the one on PATH ("": none).
func findBouncer() string {
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("pgbouncer")
	return p
}

// Bouncer returns url (one of URL's) as reached through a PgBouncer in transaction mode
// (pool_mode = transaction) in front of the test binary's cluster, with
// default_query_exec_mode=PgBouncerMode. The PgBouncer starts on the first call and stops
// with the cluster. Without PgBouncer installed the test is skipped with the reason, except
// under CI=true, where it fails.
func Bouncer(tb testing.TB, url string) string {
	tb.Helper()
	if running == nil {
		tb.Fatal("pgtest: Bouncer takes a URL of pgtest.URL")
	}
	bouncerOnce.Do(func() {
		shared, bouncerErr = running.startBouncer()
		if shared != nil {
			running.bouncer = shared
		}
	})
	return through(tb, shared, bouncerErr, url)
}

// Bouncer returns url (one of c.URL's) through a PgBouncer of the cluster's own, as the
// package-level Bouncer does; it stops with the cluster.
func (c *Cluster) Bouncer(tb testing.TB, url string) string {
	tb.Helper()
	if c.c.bouncer == nil {
		b, err := c.c.startBouncer()
		if err == nil && b != nil {
			c.c.bouncer = b
		}
		return through(tb, b, err, url)
	}
	return through(tb, c.c.bouncer, nil, url)
}

func through(tb testing.TB, b *bouncer, err error, raw string) string {
	tb.Helper()
	if b == nil && err == nil {
		why := "PgBouncer is not installed (apt-get install -y pgbouncer)"
		if os.Getenv("CI") == "true" {
			tb.Fatalf("pgtest: %s (CI=true: PgBouncer is required)", why)
		}
		tb.Skipf("pgtest: %s", why)
	}
	if err != nil {
		tb.Fatalf("pgtest: starting PgBouncer: %v", err)
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		tb.Fatalf("pgtest: %v", perr)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port))
	q := u.Query()
	q.Set("default_query_exec_mode", PgBouncerMode)
	u.RawQuery = q.Encode()
	return u.String()
}

// startBouncer starts a PgBouncer in transaction mode for every database of the cluster
// (nil, nil when PgBouncer is not installed). It runs as the cluster's user. Its idle
// server connections close after 2 s: each test has a database (a pool) of its own, and
// the pools of the tests before must not hold the server's max_connections.
func (c *cluster) startBouncer() (*bouncer, error) {
	bin := findBouncer()
	if bin == "" {
		return nil, nil
	}
	dir := filepath.Join(c.dir, fmt.Sprintf("pgbouncer-%d", time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if c.asUser != nil {
		uid, _ := strconv.Atoi(c.asUser.Uid)
		gid, _ := strconv.Atoi(c.asUser.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	users := ""
	for _, u := range c.users() {
		users += fmt.Sprintf("%q \"\"\n", u)
	}
	if err := c.writeOwned(filepath.Join(dir, "users.txt"), users); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		ini := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
server_reset_query =
server_lifetime = 3600
server_idle_timeout = 2
server_login_retry = 1
logfile = %s
`, c.port, port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "log"))
		if err := c.writeOwned(filepath.Join(dir, "pgbouncer.ini"), ini); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		b := &bouncer{port: port, cmd: cmd, dir: dir}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if lastErr = b.waitUp(exited); lastErr == nil {
			watch(fmt.Sprintf("kill -9 %d", cmd.Process.Pid))
			return b, nil
		}
		_ = cmd.Process.Kill()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	return nil, fmt.Errorf("%w\n%s", lastErr, log)
}

// waitUp waits until the PgBouncer accepts connections, or exits.
func (b *bouncer) waitUp(exited chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("pgbouncer exited")
		default:
		}
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)), time.Second); err == nil {
			_ = conn.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgbouncer did not listen on port %d within 10 s", b.port)
}

// stop stops the PgBouncer.
func (b *bouncer) stop() {
	if b != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
	}
}

// writeOwned writes a file that the cluster's user reads.
func (c *cluster) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if c.asUser != nil {
		uid, _ := strconv.Atoi(c.asUser.Uid)
		gid, _ := strconv.Atoi(c.asUser.Gid)
		return os.Chown(path, uid, gid)
	}
	return nil
}

// users are the roles that a PgBouncer of the cluster lets in (auth_type trust still
// wants them listed).
func (c *cluster) users() []string {
	return []string{"postgres", AppRole}
}

// watch starts a watchdog process that runs cleanup (a shell command) when the test
// binary exits without Main's cleanup (a panic, a timeout, a kill).
func watch(cleanup string) {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done; %s >/dev/null 2>&1`, os.Getpid(), cleanup)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err == nil {
		go func() { _ = cmd.Wait() }()
	}
}
