// Package engine is the domain of fieldrelay: its types, rules and use cases, and the ports
// (Store, Tx, Clock) it needs. It knows nothing of bbolt, HTTP servers or the command line.
package engine

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/auth"
	"github.com/fieldrelay/fieldrelay/engine/delivery"
	"github.com/fieldrelay/fieldrelay/engine/devices"
	"github.com/fieldrelay/fieldrelay/engine/dircache"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/engine/password"
	"github.com/fieldrelay/fieldrelay/engine/retention"
	"github.com/fieldrelay/fieldrelay/engine/sms"
	"github.com/fieldrelay/fieldrelay/engine/stream"
	"github.com/fieldrelay/fieldrelay/engine/teams"
	"github.com/fieldrelay/fieldrelay/engine/tenants"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
	"github.com/fieldrelay/fieldrelay/engine/usage"
	"github.com/fieldrelay/fieldrelay/engine/writes"
	"github.com/fieldrelay/fieldrelay/engine/zones"
)

// Options configure an Engine.
type Options struct {
	// Clock tells the time; SystemClock when nil.
	Clock model.Clock
	// Logger receives the engine's log; slog.Default when nil.
	Logger *slog.Logger
	// Password sets the cost of password hashing; DefaultPasswordParams when zero.
	Password password.Params
	// Mailer delivers account tokens; a LogMailer that logs no token when nil.
	Mailer model.Mailer
	// Sender makes the webhook and SMS calls of the delivery engine; NoSender when nil.
	Sender model.Sender
	// RetrySchedule is the delay before each retry of a message after its first try;
	// DefaultRetrySchedule when empty.
	RetrySchedule []time.Duration
	// WebhookPolicy says which addresses webhook URLs may name.
	WebhookPolicy netguard.AddressPolicy
	// Workers bounds the calls the scheduler makes at once (DefaultWorkers when zero).
	Workers int
	// Plans is the price list of GET /v1/tenant/billing; DefaultPlans when nil.
	Plans model.PlanTable
	// StreamRing is how many changes per tenant the stream keeps for resume
	// (StreamRingSize when zero).
	StreamRing int
	// Upstream tunes the push of upstream sync.
	Upstream model.UpstreamOptions
	// AttemptLease is how long an attempt in flight holds its message; longer than the
	// Sender's and the Mailer's own time limits. DefaultAttemptLease when zero.
	AttemptLease time.Duration
	// Retention is the node's default retention (zero: everything kept for ever);
	// RetentionBatch the most records a transaction of the sweep deletes
	// (DefaultRetentionBatch when zero).
	Retention      model.Retention
	RetentionBatch int
}

// Engine runs the use cases of one node over a Store.
type Engine struct {
	// Service holds the use cases of API keys, accounts and logins (engine/auth): the
	// Engine's own, through the embedding.
	*auth.Service
	// Subscriptions holds the use cases of webhook subscriptions (engine/delivery), the
	// Engine's own through the embedding.
	*delivery.Subscriptions
	// Registry holds the use cases of zones and their connectivity (engine/zones), the
	// Engine's own through the embedding.
	*zones.Registry
	// Roster holds the use cases of teams (engine/teams), the Engine's own through the
	// embedding.
	*teams.Roster
	// Book holds the use cases of the shared alerts (engine/alerts), the Engine's own
	// through the embedding.
	*alerts.Book
	// Gateway holds the use cases of the SMS gateway (engine/sms), the Engine's own
	// through the embedding.
	*sms.Gateway
	// Links holds the use cases of upstream sync (engine/upstream), the Engine's own
	// through the embedding.
	*upstream.Links
	// Settings holds the use cases of retention (engine/retention), the Engine's own
	// through the embedding.
	*retention.Settings
	// Counter counts the tenants' usage and the node's statistics (engine/usage); its
	// use cases are the Engine's own through the embedding.
	*usage.Counter
	// Credentials holds the use cases of device credentials and device lists
	// (engine/devices), the Engine's own through the embedding.
	*devices.Credentials
	// Directory holds the use cases of the node's tenants (engine/tenants), the Engine's
	// own through the embedding.
	*tenants.Directory
	// store is the Store given to New with the pre-commit hooks of its writes: the
	// upstream change log (engine/upstream) and the usage counters (engine/usage);
	// base is the Store as given.
	store  model.Store
	base   model.Store
	up     *upstream.Runner
	clock  model.Clock
	log    *slog.Logger
	sender model.Sender
	retry  []time.Duration
	policy netguard.AddressPolicy
	sched  *delivery.Scheduler
	// bg holds the loops started with the scheduler (scheduler.go); shared says other
	// processes share the store, leases are the leases this run holds there (periodic.go).
	bg     background
	shared bool
	leases runLeases
	// pub hands committed changes to GET /v1/stream (engine/stream).
	pub *stream.Publisher
	// runID names this run of the engine in the leases of its delivery attempts, which
	// last lease.
	runID string
	lease time.Duration
	// lagAlert is how long a site may stay behind its central node with the link up
	// before downstream_lagging (docs/decisions/0210-downstream-lag-alert.md).
	lagAlert time.Duration
	// ids makes the time-ordered ids of records (ids.go).
	ids idSource
	// ret is the retention sweep, with the node's default retention.
	ret *retention.Sweeper
	// configs caches the tenants' configuration, checked against the store's directory
	// versions.
	configs dircache.Cache[*tenantConfig]
	// noCoalesce turns off the coalescing of mission_update items (a measure's baseline
	// only: docs/decisions/0148-mission-updates.md).
	noCoalesce bool
}

// New returns an Engine over store.
func New(store model.Store, opt Options) *Engine {
	e := &Engine{base: store, clock: opt.Clock, log: opt.Logger,
		sender: opt.Sender, retry: opt.RetrySchedule, policy: opt.WebhookPolicy,
	}
	if e.sender == nil {
		e.sender = model.NoSender{}
	}
	if len(e.retry) == 0 {
		e.retry = DefaultRetrySchedule
	}
	if e.clock == nil {
		e.clock = model.SystemClock{}
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.up = upstream.New(upstream.Parts{Store: store, Shared: model.IsShared(store), Clock: e.clock, Log: e.log,
		Options: opt.Upstream, HoldLease: e.holdLease, Secret: e.Secret, Health: e.upstreamHealth, DownHealth: e.downstreamHealth})
	e.lagAlert = cmp.Or(opt.Upstream.LagAlert, model.DefaultLagAlert)
	e.store = writes.NewStore(store, e.up.LogChanges, e.up.LogDown, e.up.WakeDown, writes.FlushUsage)
	e.Counter = usage.New(e.store, e.clock, e.log, opt.Plans)
	feed, _ := store.(model.ChangeFeed) // a store shared by several processes keeps the changes
	e.pub = stream.NewPublisher(feed, opt.StreamRing, e.clock)
	e.runID = model.NewID()
	e.lease = cmp.Or(opt.AttemptLease, DefaultAttemptLease)
	e.shared, e.leases.m = model.IsShared(store), map[string]time.Time{}
	frame := func(ctx context.Context, tenantID string, w *model.Write, fn func(model.Tx) (any, error)) (any, error) {
		return write(ctx, e, tenantID, w, fn)
	}
	e.Service = auth.New(auth.Parts{Store: e.store, Clock: e.clock, Log: e.log, Password: opt.Password, Mailer: opt.Mailer,
		Frame: frame, Enqueue: e.enqueue})
	e.sched = delivery.New(delivery.Parts{Store: e.store, Shared: e.shared, Clock: e.clock, Log: e.log,
		Sender: e.sender, Retry: e.retry, Lease: e.lease, RunID: e.runID, Workers: opt.Workers,
		NewID: e.ids.at, Full: func() bool { sp, _ := e.Space(); return sp.Full }, Held: usage.Held(e.Counter),
		Mail: auth.MailOf(e.Service), Reinforce: e.reinforce, Overdue: e.overdue, Settled: e.settleDelivery, Count: e.count,
		MissionSent: func(tx model.Tx, o *model.OutboxEntry) error {
			return e.markMissionSent(tx, o.TenantID, o.MissionID, missionChannel(o), "")
		}})
	e.Subscriptions = delivery.NewSubscriptions(e.store, e.clock, e.policy, WebhookNames, frame, e.sched, e.releaseWaiting)
	e.Registry = zones.New(zones.Parts{Store: e.store, Clock: e.clock, Frame: frame, Publish: e.publish,
		ReleaseQueued: e.releaseQueuedEvents})
	e.Roster = teams.New(e.store, e.clock, frame, e.publish)
	e.Book = alerts.New(e.store, e.clock, frame, e.publish)
	e.Gateway = sms.New(sms.Parts{Store: e.store, Clock: e.clock, Sender: e.sender, Frame: frame, NewID: e.ids.at,
		Secret: e.Secret, MoveMission: func(tx model.Tx, p model.Principal, id string, in model.MissionStatusInput, source string) (*model.Mission, error) {
			return e.updateMissionStatus(tx, p, id, in, source, nil, "")
		},
		PostMessage: func(tx model.Tx, p model.Principal, missionID, text string, author model.ChangeActor) error {
			_, err := e.postMessage(tx, p, missionID, text, MoveSourceSMS, nil, "", &author)
			return err
		}})
	e.Links = upstream.NewLinks(e.up, frame)
	e.up.Wire(e.store, e.dispatchRequested, e.mergeRemoteMission, e.settingsFromCentral)
	e.Credentials = devices.New(e.store, e.clock, frame, visibleDevice, e.AuthenticateUser)
	e.Directory = tenants.New(e.store, e.clock, frame)
	e.ret = retention.New(e.store, e.clock, opt.Retention, opt.RetentionBatch, releaseMissionCode)
	e.Settings = retention.NewSettings(e.ret, e.store, e.clock, frame)
	return e
}

// Clock returns the engine's clock.
func (e *Engine) Clock() model.Clock { return e.clock }

// View runs fn in a read-only transaction.
func (e *Engine) View(ctx context.Context, fn func(model.Tx) error) error {
	return e.store.View(ctx, fn)
}

// Update runs fn in one read-write transaction: the boundary of a use case.
func (e *Engine) Update(ctx context.Context, fn func(model.Tx) error) error {
	return e.store.Update(ctx, fn)
}

// Secret names of the installation, kept in the store's meta (model/secrets.go).
const (
	SecretJWT      = model.SecretJWT
	SecretInternal = model.SecretInternal
	SecretNodeID   = model.SecretNodeID
	// SecretSMSWebhook is the root of the tenants' signing keys for the webhooks of SMS
	// Gateway for Android (SMSWebhookKey).
	SecretSMSWebhook = model.SecretSMSWebhook
	// SecretUpstream names the installation secret the upstream API keys are encrypted
	// with.
	SecretUpstream = model.SecretUpstream
)

// Secret returns an installation secret, generating and storing it on first use.
func (e *Engine) Secret(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		v, err = tx.Meta(name)
		return err
	})
	if err != nil || v != nil {
		return v, err
	}
	err = e.store.Update(ctx, func(tx model.Tx) (err error) {
		if v, err = tx.Meta(name); err != nil || v != nil {
			return err
		}
		v = model.NewSecret(name)
		return tx.PutMeta(name, v)
	})
	return v, err
}

// SetSecret replaces an installation secret.
func (e *Engine) SetSecret(ctx context.Context, name string, v []byte) error {
	return e.store.Update(ctx, func(tx model.Tx) error { return tx.PutMeta(name, v) })
}

// Notifications says whether the notifications of the other processes reach this one,
// and why not ("" while they flow), when the store has them (model.NotifyingStore).
func (e *Engine) Notifications() (down string, ok bool) {
	if ns, ok := e.base.(model.NotifyingStore); ok {
		return ns.NotificationsDown(), true
	}
	return "", false
}

// Space returns the free space of the store's disk and whether writes are refused, when
// the store watches it (the bbolt store; a database server watches its own).
func (e *Engine) Space() (model.Space, bool) {
	if ss, ok := e.base.(model.SpaceStore); ok {
		return ss.Space(), true
	}
	return model.Space{}, false
}
