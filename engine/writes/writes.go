// Package writes holds what a write transaction records for later in the same
// transaction: the events, missions and dispatches a use case changed, and the usage
// counters it counted. A use case says so by calling Changed or Count; nothing is done
// behind a Put of the store. The Store wrapper runs, when a use case's function returns
// nil and before the commit, the pre-commit hooks given at its construction (the upstream
// change log, the usage counters), the way etcd's backend runs its Hooks' OnPreCommitUnsafe.
// No transaction is wrapped: the use case's function gets the store's own.
package writes

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Change names a record a use case wrote: Kind is model.ChangeEvent, ChangeMission or
// ChangeDispatch.
type Change struct {
	TenantID, Kind, ID string
}

// Usage is a usage counter to add before the commit.
type Usage struct {
	TenantID, Day, Metric string
	N                     uint64
}

// pending is what a transaction recorded, kept in its model.TxLocal.
type pending struct {
	changes []Change
	usage   []Usage
}

// key is the TxLocal key of the pending writes.
type key struct{}

func of(tx model.TxCommit) *pending {
	l := tx.Local()
	if p, _ := l.Value(key{}).(*pending); p != nil {
		return p
	}
	p := &pending{}
	l.SetValue(key{}, p)
	return p
}

// Changed records, within tx, that a use case wrote an event, mission or dispatch of a
// tenant: the pre-commit hooks see it (the upstream change log appends it).
func Changed(tx model.TxCommit, tenantID, kind, id string) {
	p := of(tx)
	p.changes = append(p.changes, Change{TenantID: tenantID, Kind: kind, ID: id})
}

// Count gathers n for a usage counter of tx, written once before the commit: a sync
// batch of 1,000 events writes a handful of counters, not two per event.
func Count(tx model.TxCommit, tenantID, day, metric string, n uint64) {
	p := of(tx)
	for i := range p.usage {
		if u := &p.usage[i]; u.Metric == metric && u.Day == day && u.TenantID == tenantID {
			u.N += n
			return
		}
	}
	p.usage = append(p.usage, Usage{TenantID: tenantID, Day: day, Metric: metric, N: n})
}

// Changes returns the changes recorded in tx so far, in their order (for a pre-commit
// hook).
func Changes(tx model.TxCommit) []Change { return of(tx).changes }

// Counted returns the usage gathered in tx (for a pre-commit hook).
func Counted(tx model.TxCommit) []Usage { return of(tx).usage }

// Hook is a pre-commit hook: it runs in the transaction after the use case's function
// returned nil, and its error rolls the transaction back.
type Hook func(tx model.Tx) error

// Store is a model.Store whose Update and Batch run the pre-commit hooks after the
// function they are given.
type Store struct {
	model.Store
	hooks []Hook
}

// NewStore returns s with hooks run, in their order, before each commit of a write.
func NewStore(s model.Store, hooks ...Hook) *Store {
	return &Store{Store: s, hooks: hooks}
}

// Update implements model.Store.
func (s *Store) Update(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Update(ctx, s.wrap(fn))
}

// Batch implements model.Store.
func (s *Store) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	return s.Store.Batch(ctx, tenantID, s.wrap(fn))
}

// wrap runs fn, then the hooks. What a run recorded is dropped first: a Batch function
// that runs again, or that shares its transaction with others, starts from nothing.
func (s *Store) wrap(fn func(model.Tx) error) func(model.Tx) error {
	return func(tx model.Tx) error {
		tx.Local().SetValue(key{}, nil)
		if err := fn(tx); err != nil {
			return err
		}
		for _, h := range s.hooks {
			if err := h(tx); err != nil {
				return err
			}
		}
		tx.Local().SetValue(key{}, nil)
		return nil
	}
}

// FlushUsage is the pre-commit hook that writes the usage gathered by Count.
func FlushUsage(tx model.Tx) error {
	for _, u := range Counted(tx) {
		if err := tx.AddUsage(u.TenantID, u.Day, u.Metric, u.N); err != nil {
			return err
		}
	}
	return nil
}

// Frame runs fn as one write use case of a tenant ("" for the admin's): the engine's
// idempotency frame (a reply stored under w's key is answered again and fn not run; w
// nil: fn alone), in one transaction of the engine's store. Capabilities whose use cases
// write get it at construction.
type Frame func(ctx context.Context, tenantID string, w *model.Write, fn func(model.Tx) (any, error)) (any, error)

// Do runs fn through f, typed.
func Do[T any](ctx context.Context, f Frame, tenantID string, w *model.Write, fn func(model.Tx) (T, error)) (T, error) {
	v, err := f(ctx, tenantID, w, func(tx model.Tx) (any, error) { return fn(tx) })
	out, _ := v.(T)
	return out, err
}
