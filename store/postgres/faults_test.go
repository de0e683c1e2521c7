package postgres_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestDatabaseOutage: while PostgreSQL is stopped, transactions and rate-window takes
// fail at once as unavailable (with a Retry-After); once it is back, the same store
// works again without being reopened, and every write it committed before is there.
func TestDatabaseOutage(t *testing.T) {
	pg := pgtest.Own(t)
	db := open(t, pg.URL(t))
	ctx := context.Background()
	tn := model.NewID()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme", Status: "active"})
	})
	update(t, db, func(tx model.Tx) error { return tx.PutMeta("before", []byte("outage")) })

	pg.Stop(t)
	for i, op := range []func() error{
		func() error { return db.View(ctx, func(tx model.Tx) error { _, err := tx.Meta("before"); return err }) },
		func() error {
			return db.Update(ctx, func(tx model.Tx) error { return tx.PutMeta("during", []byte("x")) })
		},
		func() error { _, err := db.TakeRate(ctx, tn, time.Now().Truncate(time.Minute), 1); return err },
	} {
		began := time.Now()
		err := op()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("op %d took %v with the database down", i, took)
		}
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.KindUnavailable || me.RetryAfter <= 0 {
			t.Fatalf("op %d with the database down: %v, want unavailable with a Retry-After", i, err)
		}
	}

	pg.Start(t)
	// The pool's connections died with the server: the first transaction after it
	// gets a new one.
	var got []byte
	if err := db.View(ctx, func(tx model.Tx) (err error) { got, err = tx.Meta("before"); return err }); err != nil || string(got) != "outage" {
		t.Fatalf("after the restart: %q, %v", got, err)
	}
	update(t, db, func(tx model.Tx) error { return tx.PutMeta("after", []byte("y")) })
	if _, err := db.TakeRate(ctx, tn, time.Now().Truncate(time.Minute), 1); err != nil {
		t.Fatal(err)
	}
}

// TestConnectionLost: connections of the pool that the server closed (a restart, a
// failover, an administrator) fail the transaction that finds them, which runs again
// once on a new connection: the caller sees no error.
func TestConnectionLost(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	update(t, a, func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
	for range 3 {
		var n int
		if err := b.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil || n == 0 {
			t.Fatalf("terminating a's connections: %d, %v", n, err)
		}
		// At once: the pool pings a connection only after a second idle.
		var got []byte
		if err := a.View(ctx, func(tx model.Tx) (err error) { got, err = tx.Meta("k"); return err }); err != nil || string(got) != "v" {
			t.Fatalf("after the connections were cut: %q, %v", got, err)
		}
	}
}

// silentProxy forwards loopback TCP connections to a database until it goes silent:
// then it keeps every connection open and forwards nothing, as a database host whose
// packets are dropped would.
type silentProxy struct {
	ln     net.Listener
	to     string
	silent atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newSilentProxy(t *testing.T, to string) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, to: to}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			if p.silent.Load() {
				continue // accepted, and never answered
			}
			d, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, d)
			p.mu.Unlock()
			go p.pipe(d, c)
			go p.pipe(c, d)
		}
	}()
	return p
}

// close closes the listener and every connection.
func (p *silentProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// pipe copies src to dst until the proxy goes silent; then it stops reading.
func (p *silentProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		if p.silent.Load() {
			return // the bytes in flight are dropped, the connection stays open
		}
	}
}

// TestDatabaseSilent: a database that stops answering without closing anything (a host
// gone, packets dropped) is answered unavailable within the transaction timeout and the
// URL's connect timeout, not after the kernel's TCP timeouts.
func TestDatabaseSilent(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newSilentProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("connect_timeout", "1")
	u.RawQuery = q.Encode()
	db, err := postgres.Open(context.Background(), u.String(), postgres.Options{TxTimeout: time.Second, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	t.Cleanup(p.close) // before the pool's close, which would wait for silent connections
	update(t, db, func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
	p.silent.Store(true)
	for i := range 2 { // on a connection of the pool, then on a new one
		began := time.Now()
		err := db.View(context.Background(), func(tx model.Tx) error { _, err := tx.Meta("k"); return err })
		if took := time.Since(began); took > 4*time.Second {
			t.Fatalf("view %d took %v with the database silent", i, took)
		} else {
			t.Logf("view %d: unavailable after %v", i, took)
		}
		wantKind(t, err, model.KindUnavailable)
	}
}
