package postgres

import "testing"

// TestCommitterCount (docs/decisions/0253-committers-by-cores.md): a committer a core, at
// least two, never more than half the pool, and one for a pool of two or three.
func TestCommitterCount(t *testing.T) {
	for _, c := range []struct{ pool, procs, want int }{
		{16, 2, 2},  // the 2-core machine of docs/bench.md: 2, not 8
		{16, 1, 2},  // at least two: one tenant's long group does not stop the others
		{16, 6, 6},  // a core each
		{16, 32, 8}, // half the pool at most
		{4, 8, 2},
		{3, 8, 1},
		{2, 2, 1},
		{1, 2, 1}, // at least one
	} {
		if got := committerCount(c.pool, c.procs); got != c.want {
			t.Errorf("committerCount(pool %d, %d cores) = %d, want %d", c.pool, c.procs, got, c.want)
		}
	}
}
