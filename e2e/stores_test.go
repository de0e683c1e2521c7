package e2e

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// The end-to-end suites of events, delivery, dispatch, missions and devices run on both
// stores a node may have: the bbolt file of --data, and a PostgreSQL database of
// `serve --database` (docs/decisions/0094-central-tier-database.md). Each runs
// as two subtests, bbolt and postgres, with one body: the store is a parameter.

// nodeStore is where a node under test keeps its records: its --data directory and, on
// PostgreSQL, a fresh database of the test cluster.
type nodeStore struct {
	name string // bbolt or postgres, the subtest's name
	data string // --data: the bbolt file, or on PostgreSQL the process's own directory
	url  string // --database; "" on bbolt
}

// eachStore runs test as the subtests bbolt and postgres, each on a fresh store. The
// postgres subtest is skipped without PostgreSQL, and fails under CI=true, as pgtest.URL
// decides.
func eachStore(t *testing.T, test func(t *testing.T, st nodeStore)) {
	t.Helper()
	for _, name := range []string{"bbolt", "postgres"} {
		t.Run(name, func(t *testing.T) {
			st := nodeStore{name: name, data: t.TempDir()}
			if name == "postgres" {
				st.url = pgtest.URL(t)
			}
			test(t, st)
		})
	}
}

// postgres reports whether the node runs on PostgreSQL.
func (st nodeStore) postgres() bool { return st.url != "" }

// flags are the flags of serve that name the store, before extra.
func (st nodeStore) flags(extra ...string) []string {
	if st.url == "" {
		return extra
	}
	return append([]string{"--database", st.url}, extra...)
}

// admin names the store to an admin command: --data on bbolt (through the running node's
// admin socket when it serves), --database on PostgreSQL (the database directly).
func (st nodeStore) admin() []string {
	if st.url == "" {
		return []string{"--data", st.data}
	}
	return []string{"--database", st.url}
}

// cli runs an admin command on the store: args with the store's flags after them.
func (st nodeStore) cli(t *testing.T, bin, stdin string, args ...string) []byte {
	t.Helper()
	return mustRun(t, bin, stdin, append(args, st.admin()...)...)
}

// serve starts a node on the store.
func (st nodeStore) serve(t *testing.T, bin string, tlsOn bool, extra ...string) *served {
	t.Helper()
	return serve(t, bin, st.data, tlsOn, st.flags(extra...)...)
}

// serveDemo starts a node with --demo on the store.
func (st nodeStore) serveDemo(t *testing.T, bin string, extra ...string) *demoNode {
	t.Helper()
	return serveDemo(t, bin, st.data, st.flags(extra...)...)
}
