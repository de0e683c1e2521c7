package model

import "time"

// UpstreamOptions tune the push of upstream sync. Zero fields take the defaults.
type UpstreamOptions struct {
	// RetryMin and RetryMax bound the delay after a failed attempt (1 s and 60 s): the
	// n-th failure in a row waits RetryMin plus a uniform draw up to
	// min(RetryMax, RetryMin·2ⁿ) − RetryMin.
	RetryMin, RetryMax time.Duration
	// BatchSize is the most changes one sync carries (500).
	BatchSize int
	// Timeout limits one call to the upstream (30 s).
	Timeout time.Duration
}

// Defaults of UpstreamOptions.
const (
	DefaultUpstreamRetryMin  = time.Second
	DefaultUpstreamRetryMax  = time.Minute
	DefaultUpstreamBatchSize = 500
	DefaultUpstreamTimeout   = 30 * time.Second
)

func (o *UpstreamOptions) Fill() {
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultUpstreamRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(DefaultUpstreamRetryMax, o.RetryMin)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultUpstreamBatchSize
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultUpstreamTimeout
	}
}

// UpstreamStats describes the upstream links of the node for /metrics.
type UpstreamStats struct {
	// Links counts the tenants with an upstream by state.
	Links map[string]int
	// Backlog is the number of changes not yet acknowledged, over every tenant; Oldest
	// the age of the oldest of them.
	Backlog int64
	Oldest  time.Duration
	// Pushed counts the changes acknowledged, Failures the failed attempts, Rejected the
	// items the upstreams rejected, since the process started.
	Pushed, Failures, Rejected uint64
}
