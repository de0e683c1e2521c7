package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5/pgconn"
)

var _ model.RateWindows = (*DB)(nil)

// rateTimeout bounds TakeRate when ctx has no deadline: a request waits no longer for
// its tenant's window before the server counts it alone.
const rateTimeout = 2 * time.Second

// TakeRate adds n to the tenant's window that starts at start and returns what every
// process has taken from it, in one statement outside any transaction (an upsert that
// row-locks the window: concurrent takes add up, none is lost). The call that opens a
// window drops the tenant's older ones, so a tenant keeps a row or two. The table is
// unlogged: a take costs no WAL flush.
func (db *DB) TakeRate(ctx context.Context, tenantID string, start time.Time, n int) (int, error) {
	id, ok := uid(tenantID)
	if !ok {
		return 0, model.NotFound("tenant")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rateTimeout)
		defer cancel()
	}
	var taken int64
	err := db.pool.QueryRow(ctx, `INSERT INTO rate_windows (tenant_id, window_start, taken) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, window_start) DO UPDATE SET taken = rate_windows.taken + excluded.taken
		RETURNING taken`, id, start.UTC(), n).Scan(&taken)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" {
			return 0, model.NotFound("tenant")
		}
		return 0, unavailable(fmt.Errorf("postgres: taking from a rate window: %w", err))
	}
	if taken == int64(n) {
		// This call opened the window (no other process has one yet to add to).
		if _, err := db.pool.Exec(ctx, "DELETE FROM rate_windows WHERE tenant_id = $1 AND window_start < $2", id, start.UTC()); err != nil {
			db.log.Warn("dropping old rate windows", "tenant", tenantID, "err", err)
		}
	}
	return int(taken), nil
}
