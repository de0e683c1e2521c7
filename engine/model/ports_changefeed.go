package model

import "context"

// ChangeFeed is implemented by a store that several processes share: it keeps the
// committed changes of GET /v1/stream, so that every process shows the changes made
// through any of them, under ids that are the same on every process. A store without it
// (bbolt: one process) leaves the stream to the engine's ring in memory.
type ChangeFeed interface {
	// AppendChange records c, a change of the tenant, within tx (a transaction of this
	// store's Update or Batch, of which it needs no more than TxCommit): it exists once
	// tx commits and never otherwise. The store numbers it (Change.Seq); the numbers of
	// a tenant's changes grow in the order in which FollowChanges delivers them, on
	// every process.
	AppendChange(tx TxCommit, tenantID string, c Change) error
	// FollowChanges starts delivering, from a goroutine of the store until it closes,
	// the changes committed from now on (by any process) of the tenants that watching
	// lists at the time, in Seq order, to deliver. It is called once.
	FollowChanges(watching func() []string, deliver func(tenantID string, c Change))
	// FeedHead is the Seq of a tenant's changes up to which FollowChanges has delivered,
	// once a subscriber of the tenant is among those watching lists: a change of the
	// tenant it delivers later has a greater Seq. The numbers are the tenant's own.
	FeedHead(ctx context.Context, tenantID string) (uint64, error)
	// ChangesAfter returns a tenant's committed changes whose Seq is above after, in
	// Seq order; held is false when the store no longer holds all of them (it keeps the
	// last ones of each tenant only) or after is no Seq it gave.
	ChangesAfter(ctx context.Context, tenantID string, after uint64) (changes []Change, held bool, err error)
}
