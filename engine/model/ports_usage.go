package model

import "time"

// UsageTx holds the transaction methods of usage counters and tenant administration.
type UsageTx interface {
	// AddUsage adds n to the counter metric of a tenant's day (YYYY-MM-DD, UTC). It
	// returns KindNotFound when the tenant does not exist.
	AddUsage(tenantID, day, metric string, n uint64) error
	// UsageCounters lists the non-zero counters of a tenant's days from fromDay to toDay
	// (both YYYY-MM-DD, inclusive), in day order.
	UsageCounters(tenantID, fromDay, toDay string) ([]UsageCounter, error)
	// LedgerCount counts a tenant's billable operations of the given kind recorded in
	// [from, to).
	LedgerCount(tenantID, kind string, from, to time.Time) (int, error)
}

// UsageCounter is one stored usage counter: a metric of one day.
type UsageCounter struct {
	Day    string
	Metric string
	N      uint64
}

// StoreStats describes the store for /metrics.
type StoreStats struct {
	// SizeBytes is the size of the database file.
	SizeBytes int64
	// ReadTxTotal counts the read transactions started; OpenReadTx those open now.
	ReadTxTotal, OpenReadTx int
	// WriteTxTotal counts the write transactions committed (a group commit is one).
	WriteTxTotal uint64
	// PagesWritten counts the pages written by commits; WriteSeconds and SpillSeconds
	// the time spent writing them and spilling nodes to pages.
	PagesWritten            int64
	WriteSeconds, SpillSecs float64
	FreePages, PendingPages int
}

// StatsStore is a Store that describes itself for /metrics (the bbolt store does).
type StatsStore interface {
	Stats() StoreStats
}
