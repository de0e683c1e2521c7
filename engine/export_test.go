package engine

import (
	"context"
	"io"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/auth"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/stream"
)

// AllocateMissionCode exposes the mission-code allocator with a chosen random source, so
// that tests can force collisions.
func AllocateMissionCode(tx model.Tx, tenantID, missionID string, rnd io.Reader) (string, error) {
	return allocateMissionCode(tx, tenantID, missionID, rnd)
}

// APIKeysOf lists the active keys of a tenant by id.
func (e *Engine) APIKeysOf(ctx context.Context, tenantID string) ([]model.APIKey, error) {
	return auth.KeysOf(ctx, e.Service, tenantID)
}

// RotateTenantKey rotates a key of a tenant by id within tx, callerKeyID the calling key.
func (e *Engine) RotateTenantKey(tx model.Tx, tenantID, callerKeyID string, in model.RotateAPIKeyInput) (*model.NewKey, error) {
	return auth.RotateKeyIn(e.Service, tx, tenantID, callerKeyID, in)
}

// MarkMissionSent records within tx that a mission's notification went out on channel.
func (e *Engine) MarkMissionSent(tx model.Tx, tenantID, missionID, channel string) error {
	return e.markMissionSent(tx, tenantID, missionID, channel, "")
}

// Write runs fn through the frame of every write use case (write), guarded by k: fn's
// result is the reply stored under k.
func (e *Engine) Write(ctx context.Context, tenantID string, k *model.IdempotencyKey, fn func(model.Tx) (model.Reply, error)) (model.Reply, error) {
	w := &model.Write{Key: k, Render: func(v any) (model.Reply, error) { return v.(model.Reply), nil }}
	_, err := write(ctx, e, tenantID, w, fn)
	return w.Reply, err
}

// WalkUpstreamHistory runs at most steps transactions of the backfill of a tenant's
// link, stopping early when its history is all in the log or the log is full; it
// returns how many transactions appended entries.
func (e *Engine) WalkUpstreamHistory(ctx context.Context, tenantID string, steps int) (int, error) {
	return e.up.WalkHistory(ctx, tenantID, steps)
}

// NewFeedBroker returns a broker over a change feed.
func NewFeedBroker(f model.ChangeFeed) *Broker { return stream.NewFeedBroker(f) }

// SweepOnce runs the scheduler's idempotency sweep as its timer does: when this process
// claims the period. It returns whether it ran and how many keys it deleted.
func (e *Engine) SweepOnce(ctx context.Context) (bool, int, error) { return e.sweep(ctx) }

// ReleaseLeases ends the leases this run holds in a shared store, as StopScheduler does.
func (e *Engine) ReleaseLeases(ctx context.Context) { e.releaseLeases(ctx) }

// HoldLease reports whether this run holds the lease name of a shared store (holdLease).
func (e *Engine) HoldLease(ctx context.Context, name string, d time.Duration) (bool, error) {
	return e.holdLease(ctx, name, d)
}

// SetCoalesce turns the coalescing of mission_update items on or off (a measure's
// baseline).
func (e *Engine) SetCoalesce(on bool) { e.noCoalesce = !on }
