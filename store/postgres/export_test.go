package postgres

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// PruneFeed runs the pruning of old stream changes now.
func (db *DB) PruneFeed(ctx context.Context) error { return db.pruneFeed(ctx) }

// RenameCachedTeams renames the teams db's cache holds, their row versions kept: a
// listing served from the cache shows the new name.
func (db *DB) RenameCachedTeams(name string) {
	db.teams.mu.Lock()
	defer db.teams.mu.Unlock()
	for k, v := range db.teams.m {
		c := *v
		c.team.Name = name
		db.teams.m[k] = &c
	}
}

// SetTeamMaxAge sets how long a cached team is trusted, until the test ends.
func SetTeamMaxAge(t interface{ Cleanup(func()) }, d time.Duration) {
	old := teamMaxAge
	teamMaxAge = d
	t.Cleanup(func() { teamMaxAge = old })
}

// TxID returns the id of mt's PostgreSQL transaction, assigning one if it has none yet.
func TxID(mt model.Tx) (int64, error) {
	var id int64
	_, err := mt.(*tx).scan("SELECT pg_current_xact_id()::text::bigint", nil, &id)
	return id, err
}

// QueuedBatches is the number of Batch calls waiting for a committer.
func (db *DB) QueuedBatches() int {
	db.batch.mu.Lock()
	defer db.batch.mu.Unlock()
	n := 0
	for _, q := range db.batch.queued {
		n += len(q)
	}
	return n
}
