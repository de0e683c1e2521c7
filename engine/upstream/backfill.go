package upstream

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The backfill of upstream sync: when a tenant's upstream is set (or changed to another
// URL), the records it already holds are put in its change log, so that they reach the
// upstream through the same exactly-once stream as the changes that follow. The walk
// goes kind by kind, events, then dispatches, then missions (each with its history of
// moves), each oldest first (by id, UUIDv7), at most BatchSize records per transaction:
// a million events make two thousand short transactions, never one that holds bbolt's
// single writer for long. Where it stands (the kind and the last id) is stored with the
// link's settings in the transaction that appends, so a restart, even a kill -9, goes on
// from the last commit and nothing is logged twice or skipped.
//
// While the walk runs, a change of a record it has already passed is logged as usual; a
// change of a record it has not reached gets no entry (logChange): the walk logs that
// record when it gets there, as it stands then. So every entry of a dispatch or mission
// comes after an entry of its event, and changes that happen during the walk are not
// lost. The walk keeps at most backfillAhead entries ahead of what the upstream has
// acknowledged, so a link that is down does not grow the log by the whole history.

// startBackfill starts the walk of a link's history within tx: the kinds of which the
// tenant holds no record are passed at once, so a tenant without a history is walked in
// the transaction that sets its upstream (three look-ups, no more).
func startBackfill(tx Tx, tenantID string, now model.Time) (*model.UpstreamBackfill, error) {
	b := model.NewUpstreamBackfill(now)
	for b.Walking() {
		ids, err := tx.RecordIDs(tenantID, b.Kind, "", 1)
		if err != nil || len(ids) > 0 {
			return b, err
		}
		b.NextKind()
	}
	b.WalkedAt = &now
	return b, nil
}

// backfillAhead is how many unacknowledged entries the walk lets the log hold.
func (u *Runner) backfillAhead() int64 {
	return int64(batchesPerRound * u.opt.BatchSize)
}

// backfill puts up to batchesPerRound transactions of a tenant's history in its log.
// progressed says entries were appended; walking that records remain.
func (u *Runner) backfill(ctx context.Context, l *upLink) (progressed, walking bool, err error) {
	for range batchesPerRound {
		n, more, full, err := u.backfillStep(ctx, l.tenantID)
		if err != nil {
			return progressed, true, err
		}
		progressed = progressed || n > 0
		if !more || full {
			return progressed, more, nil // full: the log holds backfillAhead entries, wait for acks
		}
	}
	return progressed, true, nil
}

// backfillStep is one transaction of the walk: up to BatchSize ids of the kind being
// walked, after the last one logged, are appended to the log, and the walk's place is
// stored with them. n is how many were appended; more that records remain; full that the
// log already holds backfillAhead unacknowledged entries.
func (u *Runner) backfillStep(ctx context.Context, tenantID string) (n int, more, full bool, err error) {
	err = u.store.Update(ctx, func(tx model.Tx) error {
		n, more, full = 0, false, false
		c, err := tx.Upstream(tenantID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil || !c.Backfill.Walking() {
			return err
		}
		more = true
		end, err := tx.ChangeLogEnd(tenantID)
		if err != nil {
			return err
		}
		room := u.backfillAhead() - (end - c.AckedThrough)
		if room <= 0 {
			full = true
			return nil
		}
		b := c.Backfill
		limit := int(min(room, int64(u.opt.BatchSize)))
		ids, err := tx.RecordIDs(tenantID, b.Kind, b.After, limit)
		if err != nil {
			return err
		}
		at := model.At(u.clock.Now())
		for _, id := range ids {
			seq, err := tx.AppendChange(tenantID, model.LogChange{Kind: b.Kind, ID: id, At: at})
			if err != nil {
				return err
			}
			b.After, b.Through = id, seq
			b.Queued++
		}
		n = len(ids)
		if len(ids) < limit {
			b.NextKind()
		}
		if !b.Walking() {
			b.WalkedAt, more = &at, false
			// Every change is logged from now on: the cached state of the link goes.
			u.settingsChanged(tx)
		}
		if n > 0 {
			tx.OnCommit(u.signal)
		}
		return tx.PutUpstream(c)
	})
	return n, more, full, err
}

// WalkHistory runs at most steps transactions of the backfill of a tenant's link,
// stopping early when its history is all in the log or the log is full; it returns how
// many transactions appended entries (for tests, which drive the walk by hand).
func (u *Runner) WalkHistory(ctx context.Context, tenantID string, steps int) (int, error) {
	done := 0
	for range steps {
		n, more, full, err := u.backfillStep(ctx, tenantID)
		if n > 0 {
			done++
		}
		if err != nil || !more || full {
			return done, err
		}
	}
	return done, nil
}
