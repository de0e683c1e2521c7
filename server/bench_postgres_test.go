package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// pgtest starts a PostgreSQL cluster only for a test that asks it for a database.
func TestMain(m *testing.M) { pgtest.Main(m) }

// BenchmarkScorePostgres is BenchmarkScore on the PostgreSQL store (its test cluster runs
// with fsync off): the score reads every team of the tenant in its transaction
// (docs/decisions/0108-postgres-team-cache.md).
func BenchmarkScorePostgres(b *testing.B) {
	for _, size := range []int{10, 1000} {
		b.Run(fmt.Sprintf("teams=%d", size), func(b *testing.B) {
			db, err := postgres.Open(context.Background(), pgtest.URL(b), postgres.Options{SecretKey: pgtest.SecretKey()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			n := newNodeWith(b, nodeOptions{store: db})
			f := n.addTenant("bench", "mission-critical")
			d := &dispatchBench{n: n, h: n.handler(b), key: f.key, tid: f.tenant.ID, pad: strings.Repeat("x", 260)}
			d.score(b, size)
		})
	}
}
