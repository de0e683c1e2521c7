package engine

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// periodKeyPrefix prefixes the meta keys that hold when a periodic job last ran on a
// shared store (claimPeriod).
const periodKeyPrefix = "period/"

// claimPeriod reports whether this process runs the periodic job name now. A node alone
// on its store (bbolt) always does. On a store shared by several processes, the job runs
// once per period across them: the first process whose timer fires at least 9/10 of
// every after the last run claims the period by writing its time under the job's meta key,
// in a transaction the store serializes against the others' claims (docs/decisions.md,
// "Periodic work once on a shared store"). The margin absorbs the drift between the
// processes' timers; a claim in the far future (a clock set wrong) is ignored.
func (e *Engine) claimPeriod(ctx context.Context, name string, every time.Duration) (bool, error) {
	if !e.sched.shared {
		return true, nil
	}
	key := periodKeyPrefix + name
	var claimed bool
	err := e.store.Update(ctx, func(tx model.Tx) error {
		claimed = false
		now := e.clock.Now()
		v, err := tx.Meta(key)
		if err != nil {
			return err
		}
		if last, perr := time.Parse(time.RFC3339Nano, string(v)); v != nil && perr == nil &&
			now.Sub(last) < every*9/10 && last.Before(now.Add(every)) {
			return nil
		}
		claimed = true
		return tx.PutMeta(key, []byte(now.UTC().Format(time.RFC3339Nano)))
	})
	return claimed && err == nil, err
}
