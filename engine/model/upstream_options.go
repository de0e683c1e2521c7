package model

import (
	"context"
	"time"
)

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
	// DownKeep is how many entries a central node's downstream log keeps per tenant
	// (100,000): a site whose cursor is older gets a snapshot.
	DownKeep int
	// PullEvery is how often a site pulls its central node's downstream log while the
	// link is up and nothing else wakes it (2 s).
	PullEvery time.Duration
	// LagAlert is how long a site's link may stay up without a pull that catches up with
	// its central node's downstream log before downstream_lagging (2 minutes;
	// docs/decisions/0210-downstream-lag-alert.md).
	LagAlert time.Duration
	// Transport carries the calls to the upstream; NoUpstream when nil.
	Transport UpstreamTransport
}

// Defaults of UpstreamOptions.
const (
	DefaultUpstreamRetryMin  = time.Second
	DefaultUpstreamRetryMax  = time.Minute
	DefaultUpstreamBatchSize = 500
	DefaultUpstreamTimeout   = 30 * time.Second
	DefaultDownKeep          = 100_000
	DefaultPullEvery         = 2 * time.Second
	DefaultLagAlert          = 2 * time.Minute
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
	if o.DownKeep <= 0 {
		o.DownKeep = DefaultDownKeep
	}
	if o.PullEvery <= 0 {
		o.PullEvery = DefaultPullEvery
	}
	if o.LagAlert <= 0 {
		o.LagAlert = DefaultLagAlert
	}
	if o.Transport == nil {
		o.Transport = NoUpstream{}
	}
}

// UpstreamTransport makes the clients the upstream pusher calls its upstreams with: one
// per link, made again when the link's CA changes. The engine builds the bodies and reads
// the answers; the transport only carries them (server/outbound does it over HTTPS).
type UpstreamTransport interface {
	// Client returns a client that trusts the system's roots and caPEM (when not empty),
	// follows no redirect, and limits each call to timeout.
	Client(caPEM string, timeout time.Duration) UpstreamClient
}

// UpstreamClient calls one upstream.
type UpstreamClient interface {
	// Post sends a JSON body to url with the API key and returns the answer, whatever its
	// status. An error means no complete answer came: the answer is then nil, or holds the
	// status of an answer whose body could not be read.
	Post(ctx context.Context, url, apiKey string, body []byte) (*UpstreamAnswer, error)
	// Close releases the client's idle connections.
	Close()
}

// UpstreamAnswer is an upstream's answer to one call.
type UpstreamAnswer struct {
	// Status is the HTTP status.
	Status int
	// Body is the answer's body, read up to a bound.
	Body []byte
	// RetryAfter is the delay the upstream asked for (Retry-After on a 429 or 503).
	RetryAfter time.Duration
}

// NoUpstream is the transport of a node that pushes nothing: every call fails. It keeps
// admin commands and tests that do not push free of network access.
type NoUpstream struct{}

// Client returns a client whose calls fail.
func (NoUpstream) Client(string, time.Duration) UpstreamClient { return NoUpstream{} }

// Post fails.
func (NoUpstream) Post(context.Context, string, string, []byte) (*UpstreamAnswer, error) {
	return nil, errNoUpstream
}

// Close does nothing.
func (NoUpstream) Close() {}

var errNoUpstream = Errorf(KindUnavailable, "this node has no upstream transport")

// UpstreamStats describes the upstream links of the node for /metrics.
type UpstreamStats struct {
	// Links counts the tenants with an upstream by state.
	Links map[string]int
	// Backlog is the number of changes not yet acknowledged, over every tenant; Oldest
	// the age of the oldest of them.
	Backlog int64
	Oldest  time.Duration
	// DownBehind is how many central changes the sites were behind after their last
	// pull; DownAge the age of the newest central change applied (the largest over the
	// links); DownLagging the links behind while up.
	DownBehind  int64
	DownAge     time.Duration
	DownLagging int
	// Pushed counts the changes acknowledged, Failures the failed attempts, Rejected the
	// items the upstreams rejected, since the process started.
	Pushed, Failures, Rejected uint64
}
