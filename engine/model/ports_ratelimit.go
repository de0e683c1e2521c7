package model

import (
	"context"
	"time"
)

// RateWindows is a Store whose tenants' rate-limit windows are shared by every process
// that opens it (the PostgreSQL store of a central tier). A store of one process (bbolt)
// does not implement it, and the process counts the windows in memory alone.
//
// A process does not call it per request: it takes blocks of a window's budget and
// serves requests from its block in memory (docs/decisions/0100-rate-limit-processes.md).
type RateWindows interface {
	// TakeRate adds n to the count of the tenant's window that starts at start, at once
	// and outside any transaction, and returns the count after the addition: what every
	// process has taken from that window so far. Windows that started before start are
	// dropped by then or later. A tenant that does not exist or a store that cannot be
	// reached is an error (KindUnavailable for the latter).
	TakeRate(ctx context.Context, tenantID string, start time.Time, n int) (int, error)
}
