package engine

// UsageTx holds the transaction methods of usage counters and tenant administration.
type UsageTx interface {
}
