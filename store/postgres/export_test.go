package postgres

import "context"

// PruneFeed runs the pruning of old stream changes now.
func (db *DB) PruneFeed(ctx context.Context) error { return db.pruneFeed(ctx) }
