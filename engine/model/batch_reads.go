package model

import "context"

// BatchReads declares what a Store.Batch call will read, so that a store that groups the
// calls of a tenant may read it for the whole group at once: on PostgreSQL, with the
// tenant's lock, in one round trip instead of one a call
// (docs/decisions/0231-group-reads.md). It is a hint: a call reads what it reads whether
// it declared it or not, and a store may ignore the declaration (bbolt reads locally).
type BatchReads struct {
	// EventReplyKey is the idempotency key whose reply the call looks up (Tx.EventReply).
	EventReplyKey string
}

type batchReadsKey struct{}

// WithBatchReads returns ctx declaring r to the Store.Batch call it is passed to.
func WithBatchReads(ctx context.Context, r BatchReads) context.Context {
	return context.WithValue(ctx, batchReadsKey{}, r)
}

// BatchReadsOf returns what ctx declares (nothing: the zero BatchReads).
func BatchReadsOf(ctx context.Context) BatchReads {
	r, _ := ctx.Value(batchReadsKey{}).(BatchReads)
	return r
}
