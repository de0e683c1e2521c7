package postgres

import (
	"context"
	"time"
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
