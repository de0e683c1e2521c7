package model

// EventRepliesTx reads the event replies of many keys in one call (a sync batch looks up
// every item's key; on PostgreSQL one query instead of one round trip per item).
type EventRepliesTx interface {
	// EventReplies returns the replies stored under keys, by key; a key without a reply is
	// absent. KindNotFound when the tenant does not exist.
	EventReplies(tenantID string, keys []string) (map[string]*IdempotencyRecord, error)
}
