package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Bounds of a push.
const (
	// maxPushBody bounds the body of one sync (the upstream takes 8 MiB): a batch ends
	// before the item that would pass it, but carries at least one item.
	maxPushBody = 4 << 20
	// batchesPerRound is how many batches one tenant pushes before the others get a turn.
	batchesPerRound = 20
	// upstreamSharedPoll is how often, on a store shared by several processes, the
	// process that pushes looks for changes and settings the others committed, and the
	// others try to take the push over (docs/decisions/0107-periodic-work-once.md).
	upstreamSharedPoll = time.Second
	// upstreamLease is how long a process of a shared store holds the pusher (lease).
	upstreamLease = 15 * time.Second
	// leaseUpstream names the lease of the pusher on a shared store.
	leaseUpstream = "upstream_pusher"
)

// errLeaseLost ends a push whose process no longer holds the pusher's lease.
var errLeaseLost = errors.New("another process holds the upstream pusher's lease")

// lease is how long one process of a shared store holds the pusher, renewed before each
// call once half of it is gone: 15 s, so that a process restarted after a kill -9 (a new
// run) or another process takes the push over soon. A call that outlasts it (30 s at most)
// may meet another process's push of the same changes: the upstream applies each
// (device, sequence) once and answers the second `duplicate`, so the overlap costs a call,
// never a record (docs/decisions/0107-periodic-work-once.md).
func (u *Runner) lease() time.Duration { return upstreamLease }

// holdLease reports whether this process pushes: always alone on its store; on a shared
// store, when it holds the pusher's lease.
func (u *Runner) holdLease(ctx context.Context) error {
	held, err := u.holdLeaseFn(ctx, leaseUpstream, u.lease())
	if err == nil && !held {
		err = errLeaseLost
	}
	return err
}

// Runner writes the change log (changelog.go) and pushes it: one goroutine per engine,
// started and stopped with the scheduler (Loop), which takes the tenants with an upstream
// in turn and pushes each one's log until it is empty or the link fails.
type Runner struct {
	store  model.Store
	clock  model.Clock
	log    *slog.Logger
	shared bool
	// holdLeaseFn and secret are the engine's (Parts).
	holdLeaseFn func(ctx context.Context, name string, d time.Duration) (bool, error)
	secret      func(ctx context.Context, name string) ([]byte, error)
	health      func(tx Tx, tenantID, lastError string) error
	downHealth  func(tx Tx, tenantID string, c *model.UpstreamConfig) error
	opt         model.UpstreamOptions
	wake        chan struct{}
	// tenants caches the set of tenants with an upstream (nil: read it again).
	tenants atomic.Pointer[map[string]uint8]
	// dirty says the settings changed since the pusher last read them.
	dirty atomic.Bool

	mu    sync.Mutex // guards links and rnd: the loop, RunUpstream and Stats
	links map[string]*upLink
	rnd   *rand.Rand

	pushed, failed, rejected atomic.Uint64

	// hub holds the pulls of the sites that wait for news (longpoll.go).
	hub downHub
	// longPolls says the links that are up pull with a wait, each in a goroutine of its
	// own (poller.go): set by Loop; RunUpstream pulls in its round, every PullEvery.
	longPolls bool
	pollers   sync.WaitGroup

	// writeStore runs the transactions that apply the central node's changes: the
	// engine's, whose pre-commit hooks log what a requested dispatch writes (Wire).
	writeStore        model.Store
	dispatchRequested func(tx model.Tx, tenantID string, r *model.DispatchRequest) error
	mergeMission      func(tx model.Tx, tenantID string, m *model.Mission) error
	setSettings       func(tx model.Tx, t *model.Tenant, s model.TenantSettings) error
}

// Wire gives the Runner what the engine builds after it: the store that runs its write
// hooks; the site's dispatch of a central node's request (run within the transaction
// that applies it; it decides the request and stores it); the site's merge of the moves
// its central node recorded on one of its missions; the site's change of its tenant's
// settings to its central node's (stored, and the mission timers set again).
func (u *Runner) Wire(writeStore model.Store, dispatchRequested func(tx model.Tx, tenantID string, r *model.DispatchRequest) error,
	mergeMission func(tx model.Tx, tenantID string, m *model.Mission) error,
	setSettings func(tx model.Tx, t *model.Tenant, s model.TenantSettings) error) {
	u.writeStore, u.dispatchRequested, u.mergeMission, u.setSettings = writeStore, dispatchRequested, mergeMission, setSettings
}

// upLink is what the pusher keeps in memory of one tenant's link.
type upLink struct {
	tenantID string
	paused   bool
	gen      int64
	failures int
	// next is when the next attempt may be made, on the clock's monotonic reading: a
	// backoff is elapsed time, whatever the wall clock
	// does (docs/decisions/0128-timers-clock-steps.md).
	next time.Duration
	// synced says the upstream's applied_through has been read since the last failure.
	synced bool
	// walking says the link's history is still being put in its log (a backfill).
	walking bool
	key     string // the decrypted API key of generation gen
	client  model.UpstreamClient
	ca      string // the CA the client trusts
	// poller is the link's long poll while it runs; noDown says the upstream has no
	// downstream (an older version), asked every PullEvery as before.
	poller *poller
	noDown bool
}

// Parts are what a Runner is built from.
type Parts struct {
	// Store is the node's store; Shared says other processes share it (one of them
	// pushes at a time, holding a lease).
	Store  model.Store
	Shared bool
	Clock  model.Clock
	Log    *slog.Logger
	// Options tune the push.
	Options model.UpstreamOptions
	// HoldLease reports whether this run holds the lease name of a shared store for at
	// least d/2 more, taking or renewing it (the engine's periodic work).
	HoldLease func(ctx context.Context, name string, d time.Duration) (bool, error)
	// Secret returns an installation secret, made on first use (the node's id).
	Secret func(ctx context.Context, name string) ([]byte, error)
	// Health follows the link's state within the transaction that records it: lastError
	// set, the link is down; empty, it is up (the upstream_down alert).
	Health func(tx Tx, tenantID, lastError string) error
	// DownHealth follows the downstream lag of a link c within the transaction that
	// applies a pull (the downstream_lagging alert).
	DownHealth func(tx Tx, tenantID string, c *model.UpstreamConfig) error
}

// New returns the Runner of an engine. Its pre-commit hook, LogChanges, is given to the
// store wrapper (writes.NewStore) that runs the engine's transactions.
func New(p Parts) *Runner {
	opt := p.Options
	opt.Fill()
	u := &Runner{store: p.Store, shared: p.Shared, clock: p.Clock, log: p.Log, holdLeaseFn: p.HoldLease,
		secret: p.Secret, health: p.Health, downHealth: p.DownHealth, opt: opt, wake: make(chan struct{}, 1),
		rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	u.dirty.Store(true)
	u.writeStore = p.Store
	u.dispatchRequested = func(model.Tx, string, *model.DispatchRequest) error {
		return model.Errorf(model.KindInternal, "this node runs no dispatch")
	}
	u.mergeMission = func(model.Tx, string, *model.Mission) error {
		return model.Errorf(model.KindInternal, "this node merges no mission")
	}
	u.setSettings = func(tx model.Tx, t *model.Tenant, s model.TenantSettings) error {
		t.SetSettings(s)
		return tx.PutTenant(t)
	}
	if u.downHealth == nil {
		u.downHealth = func(Tx, string, *model.UpstreamConfig) error { return nil }
	}
	return u
}

// Loop pushes until ctx ends: whenever a change commits, the settings change or the
// soonest retry is due.
func (u *Runner) Loop(ctx context.Context) {
	u.mu.Lock()
	u.longPolls = true
	u.mu.Unlock()
	defer u.pollers.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		more, wait := u.runDue(ctx)
		if ctx.Err() != nil {
			return
		}
		if more {
			continue
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-u.wake:
		case <-timer.C:
		}
	}
}

// Run pushes, in the caller's goroutine, the change logs of the tenants whose link is
// due at the clock's time, each until it is empty or fails, and returns how long until
// the soonest retry (an hour when none is planned). Tests drive the pusher with it and a
// FakeClock instead of Loop.
func (u *Runner) Run(ctx context.Context) time.Duration {
	for {
		more, wait := u.runDue(ctx)
		if !more || ctx.Err() != nil {
			return wait
		}
	}
}

// runDue makes one round: every due link pushes up to batchesPerRound batches. more says
// a log was left non-empty; wait is the time until the soonest retry.
func (u *Runner) runDue(ctx context.Context) (more bool, wait time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	wait = time.Hour
	if u.shared {
		// One process pushes at a time; it reads the settings every round, since
		// another process may have changed them, and looks again within a second for
		// the changes the others commit, which do not wake it.
		if err := u.holdLease(ctx); err != nil {
			if !errors.Is(err, errLeaseLost) && ctx.Err() == nil {
				u.log.Error("upstream: taking the pusher's lease", "err", err)
			}
			return false, upstreamSharedPoll
		}
		u.dirty.Store(true)
		wait = upstreamSharedPoll
	}
	if u.dirty.Swap(false) || u.links == nil {
		if err := u.reload(ctx); err != nil {
			if ctx.Err() == nil {
				u.log.Error("upstream: reading the settings", "err", err)
			}
			u.dirty.Store(true)
			return false, u.opt.RetryMin
		}
	}
	ids := make([]string, 0, len(u.links))
	for id := range u.links {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := u.links[id]
		walked := false
		if l.walking {
			// The history is put in the log whatever the state of the link, as far as
			// backfillAhead unacknowledged entries.
			var err error
			walked, l.walking, err = u.backfill(ctx, l)
			if ctx.Err() != nil {
				return false, wait
			}
			if err != nil {
				u.log.Error("upstream: putting the history in the change log", "tenant", l.tenantID, "err", err)
			}
		}
		now := u.clock.Mono()
		if l.paused {
			u.stopPoller(l)
			more = more || (walked && l.walking)
			continue
		}
		if l.next > now {
			wait = min(wait, l.next-now)
			more = more || (walked && l.walking)
			continue
		}
		polling, err := u.polled(l)
		if errors.Is(err, errNoDownstream) {
			l.noDown, err = true, nil
		}
		if err != nil {
			u.fail(ctx, l, err)
			wait = min(wait, max(l.next-u.clock.Mono(), 0))
			continue
		}
		left, err := u.push(ctx, l)
		if err == nil && !left && !polling {
			// Once the log is sent, what the central node changed comes down; then,
			// while the link is up, the long poll brings the rest as it happens.
			err = u.pull(ctx, l)
			if err == nil && u.longPolls && !l.noDown {
				u.startPoller(ctx, l)
			} else {
				wait = min(wait, u.opt.PullEvery)
			}
		}
		if ctx.Err() != nil {
			return false, wait
		}
		if err != nil {
			u.fail(ctx, l, err)
			wait = min(wait, max(l.next-u.clock.Mono(), 0))
			continue
		}
		more = more || left || l.walking
	}
	return more, wait
}

// reload reads which tenants have an upstream and whether each is paused.
func (u *Runner) reload(ctx context.Context) error {
	var cfgs []*model.UpstreamConfig
	err := u.store.View(ctx, func(tx model.Tx) error {
		ids, err := tx.UpstreamTenants()
		if err != nil {
			return err
		}
		for _, id := range ids {
			c, err := tx.Upstream(id)
			if err != nil {
				return err
			}
			cfgs = append(cfgs, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	links := make(map[string]*upLink, len(cfgs))
	for _, c := range cfgs {
		l := u.links[c.TenantID]
		if l == nil {
			l = &upLink{tenantID: c.TenantID, gen: c.Generation}
		}
		if l.gen != c.Generation || (l.paused && !c.Paused) {
			// A new link, or a link resumed: tried at once, from what the upstream says.
			u.stopPoller(l)
			l.gen, l.failures, l.next, l.synced, l.key, l.noDown = c.Generation, 0, 0, false, "", false
		}
		l.paused, l.walking = c.Paused, c.Backfill.Walking()
		links[c.TenantID] = l
	}
	for id, l := range u.links {
		if links[id] == nil {
			u.stopPoller(l) // a link removed
		}
	}
	u.links = links
	return nil
}

// upstreamError is a failed call: the status and code the upstream answered, or the
// transport's error.
type upstreamError struct {
	status     int
	code, msg  string
	retryAfter time.Duration
	err        error
}

func (e *upstreamError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	s := "the upstream answered HTTP " + strconv.Itoa(e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.msg != "" {
		s += ": " + e.msg
	}
	return s
}

func (e *upstreamError) Unwrap() error { return e.err }

// deviceGone reports whether the upstream no longer knows the node's device.
func deviceGone(err error) bool {
	var ue *upstreamError
	return errors.As(err, &ue) && ue.status == statusNotFound && ue.code == string(model.KindNotFound)
}

// statusNotFound is the HTTP status of an answer that names a record the upstream does
// not know.
const statusNotFound = 404

// errStale ends a push whose settings changed under it.
var errStale = errors.New("upstream settings changed during the push")

// push pushes a tenant's log: it registers the node when it has no device upstream,
// learns the upstream's applied_through when it does not know it, then sends batches
// until the log is empty (left false) or batchesPerRound were sent (left true).
func (u *Runner) push(ctx context.Context, l *upLink) (left bool, err error) {
	cfg, err := u.load(ctx, l)
	if err != nil || cfg == nil {
		return false, err
	}
	client := u.clientFor(l, cfg.CAPEM)
	for range 2 { // a device the upstream forgot is registered again, once
		if cfg.DeviceID == "" {
			id, err := u.register(ctx, client, cfg, l.key)
			if err != nil {
				return false, err
			}
			if cfg, err = u.setDevice(ctx, cfg, id); err != nil {
				return false, err
			}
			l.synced = false
		}
		if l.synced {
			break
		}
		ans, err := u.sync(ctx, client, cfg, l.key, nil)
		if deviceGone(err) {
			if cfg, err = u.setDevice(ctx, cfg, ""); err != nil {
				return false, err
			}
			continue
		}
		if err != nil {
			return false, err
		}
		if cfg, err = u.ack(ctx, l, cfg, ans, 0); err != nil {
			return false, err
		}
		l.synced = true
	}
	if !l.synced {
		return false, errors.New("the upstream does not know the device it has just registered")
	}
	for range batchesPerRound {
		if err := u.holdLease(ctx); err != nil {
			return false, err
		}
		body, n, last, err := u.batch(ctx, cfg)
		if err != nil || n == 0 {
			return false, err
		}
		ans, err := u.sync(ctx, client, cfg, l.key, body)
		if deviceGone(err) {
			// Registered again on the next attempt, which starts from what it says.
			if _, serr := u.setDevice(ctx, cfg, ""); serr != nil {
				return false, serr
			}
		}
		if err != nil {
			return false, err
		}
		before := cfg.AckedThrough
		if cfg, err = u.ack(ctx, l, cfg, ans, n); err != nil {
			return false, err
		}
		if cfg.AckedThrough <= before {
			return false, fmt.Errorf("the upstream applied none of changes %d–%d (applied_through %d)",
				before+1, last, ans.AppliedThrough)
		}
	}
	return true, nil
}

// load reads a tenant's settings and decrypts its key when the generation is new; nil
// when the link is gone or paused.
func (u *Runner) load(ctx context.Context, l *upLink) (*model.UpstreamConfig, error) {
	var cfg *model.UpstreamConfig
	var secret []byte
	err := u.store.View(ctx, func(tx model.Tx) (err error) {
		cfg, err = tx.Upstream(l.tenantID)
		if model.IsKind(err, model.KindNotFound) {
			cfg, err = nil, nil
		}
		if err != nil || cfg == nil || (l.key != "" && cfg.Generation == l.gen) {
			return err
		}
		secret, err = tx.Meta(model.SecretUpstream)
		return err
	})
	if err != nil || cfg == nil {
		return nil, err
	}
	if cfg.Paused {
		l.paused = true
		return nil, nil
	}
	if cfg.Generation != l.gen || l.key == "" {
		if secret == nil {
			return nil, model.Errorf(model.KindInternal, "the node has no upstream secret: set the upstream again")
		}
		aead, err := upstreamAEAD(secret)
		if err != nil {
			return nil, err
		}
		key, err := openKey(aead, cfg.TenantID, cfg.KeyCipher)
		if err != nil {
			return nil, err
		}
		l.gen, l.key, l.synced = cfg.Generation, key, false
	}
	return cfg, nil
}

// clientFor returns the link's client, made again when its CA changed. It trusts the
// system's roots and the link's CA; it does not follow redirects.
func (u *Runner) clientFor(l *upLink, ca string) model.UpstreamClient {
	if l.client != nil && l.ca == ca {
		return l.client
	}
	if l.client != nil {
		l.client.Close()
	}
	l.client = u.opt.Transport.Client(ca, u.opt.Timeout)
	l.ca = ca
	return l.client
}

// call POSTs a JSON body to the upstream and decodes a 2xx answer into out.
func (u *Runner) call(ctx context.Context, client model.UpstreamClient, url, key string, body []byte, out any) (int, error) {
	res, err := client.Post(ctx, url, key, body)
	if err != nil {
		status := 0
		if res != nil {
			status = res.Status
		}
		return status, &upstreamError{err: err}
	}
	if res.Status < 200 || res.Status > 299 {
		ue := &upstreamError{status: res.Status, retryAfter: res.RetryAfter}
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(res.Body, &e) == nil {
			ue.code, ue.msg = e.Error, e.Message
		}
		return res.Status, ue
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return res.Status, &upstreamError{err: fmt.Errorf("the upstream's answer (HTTP %d) is not the expected JSON: %v", res.Status, err)}
	}
	return res.Status, nil
}

// register registers the node as a device of the upstream tenant and returns its id.
func (u *Runner) register(ctx context.Context, client model.UpstreamClient, cfg *model.UpstreamConfig, key string) (string, error) {
	nodeID, err := u.secret(ctx, model.SecretNodeID)
	if err != nil {
		return "", err
	}
	body, _ := json.Marshal(model.DeviceInput{Name: "fieldrelay node " + string(nodeID), Platform: PlatformNode,
		HardwareID: string(nodeID)})
	var ans struct {
		DeviceID string `json:"device_id"`
	}
	if _, err := u.call(ctx, client, cfg.URL+"/v1/devices/register", key, body, &ans); err != nil {
		return "", err
	}
	if !model.ValidID(ans.DeviceID) {
		return "", fmt.Errorf("the upstream's registration answer has no device_id")
	}
	return ans.DeviceID, nil
}

// syncAnswer is what the pusher reads of a device sync's answer.
type syncAnswer struct {
	AppliedThrough int64                    `json:"applied_through"`
	Results        []model.DeviceItemResult `json:"results"`
	Released       []model.DeviceItemResult `json:"released"`
}

// sync sends one device sync: body, or an ack-only sync when body is nil.
func (u *Runner) sync(ctx context.Context, client model.UpstreamClient, cfg *model.UpstreamConfig, key string, body []byte) (*syncAnswer, error) {
	if body == nil {
		body = []byte(`{"device_id":` + strconv.Quote(cfg.DeviceID) + `,"items":[]}`)
	}
	// The node's clock at send time, so that the upstream corrects the changes' times by
	// the difference with its own (docs/decisions/0115-clock-drift.md).
	sent := make([]byte, 0, len(body)+48)
	sent = append(sent, `{"sent_at":`...)
	sent = model.AppendTime(sent, model.At(u.clock.Now()))
	sent = append(sent, ',')
	body = append(sent, body[1:]...)
	var ans syncAnswer
	if _, err := u.call(ctx, client, cfg.URL+"/v1/devices/sync", key, body, &ans); err != nil {
		return nil, err
	}
	return &ans, nil
}

// batch reads the changes after the acknowledged one, each record as it stands now, into
// the body of a sync; n is how many it holds, last the log sequence of the last.
func (u *Runner) batch(ctx context.Context, cfg *model.UpstreamConfig) (body []byte, n int, last int64, err error) {
	err = u.store.View(ctx, func(tx model.Tx) error {
		changes, err := tx.Changes(cfg.TenantID, cfg.AckedThrough, u.opt.BatchSize)
		if err != nil || len(changes) == 0 {
			return err
		}
		b := make([]byte, 0, 64<<10)
		b = append(b, `{"device_id":`...)
		b = strconv.AppendQuote(b, cfg.DeviceID)
		b = append(b, `,"items":[`...)
		for _, ch := range changes {
			mark := len(b)
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"sequence_number":`...)
			b = strconv.AppendInt(b, ch.Seq-cfg.Base, 10)
			b = append(b, `,"kind":`...)
			b = strconv.AppendQuote(b, ch.Kind)
			b = append(b, `,"captured_at":`...)
			b = model.AppendTime(b, ch.At)
			b = append(b, `,"payload":`...)
			if b, err = appendRecord(b, tx, cfg.TenantID, ch); err != nil {
				return err
			}
			b = append(b, '}')
			if n > 0 && len(b) > maxPushBody {
				b = b[:mark]
				break
			}
			n, last = n+1, ch.Seq
		}
		body = append(b, "]}"...)
		return nil
	})
	return body, n, last, err
}

// appendRecord appends the current state of a change's record; a record that is gone
// is sent as {} (the upstream rejects it, which settles its sequence number).
func appendRecord(b []byte, tx Tx, tenantID string, ch model.LogChange) ([]byte, error) {
	var v any
	var err error
	switch ch.Kind {
	case model.ChangeEvent:
		var ev *model.Event
		if ev, err = tx.Event(tenantID, ch.ID); err == nil {
			return ev.AppendJSON(b), nil
		}
	case model.ChangeMission:
		v, err = tx.Mission(tenantID, ch.ID)
	case model.ChangeDispatch:
		v, err = tx.Dispatch(tenantID, ch.ID)
	case model.ChangeDispatchRequest:
		v, err = tx.DispatchRequest(tenantID, ch.ID)
	case model.ChangeTeamStatus:
		v, err = teamStatusOf(tx, tenantID, ch.ID)
	case model.ChangeSiteZone:
		v, err = siteZoneOf(tx, tenantID, ch.ID)
	default:
		err = model.NotFound("record")
	}
	if model.IsKind(err, model.KindNotFound) {
		return append(b, "{}"...), nil
	}
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	return append(b, raw...), err
}

// setDevice records the node's device upstream ("" to register again).
func (u *Runner) setDevice(ctx context.Context, cfg *model.UpstreamConfig, deviceID string) (*model.UpstreamConfig, error) {
	var out *model.UpstreamConfig
	err := u.store.Update(ctx, func(tx model.Tx) error {
		c, err := u.current(tx, cfg)
		if err != nil {
			return err
		}
		c.DeviceID = deviceID
		out = c
		return tx.PutUpstream(c)
	})
	return out, err
}

// current reads a tenant's settings within tx; errStale when they changed since cfg.
func (u *Runner) current(tx Tx, cfg *model.UpstreamConfig) (*model.UpstreamConfig, error) {
	c, err := tx.Upstream(cfg.TenantID)
	if model.IsKind(err, model.KindNotFound) || (err == nil && c.Generation != cfg.Generation) {
		return nil, errStale
	}
	return c, err
}

// ack records an answer of the upstream in one transaction: the log is trimmed up to
// its applied_through, the rejected items are counted, the link is healthy. sent is how
// many items the sync carried.
//
// When applied_through does not fall between what the upstream acknowledged before and
// the end of the log (a new device upstream, an upstream restored from a backup, a node
// restored from one), the numbering moves so that the next change is the upstream's
// applied_through + 1: what the log holds is sent, nothing is trimmed.
func (u *Runner) ack(ctx context.Context, l *upLink, cfg *model.UpstreamConfig, ans *syncAnswer, sent int) (*model.UpstreamConfig, error) {
	var out *model.UpstreamConfig
	var rejected []model.DeviceItemResult
	for _, r := range slices.Concat(ans.Results, ans.Released) {
		if r.Status == model.ItemRejected {
			rejected = append(rejected, r)
		}
	}
	err := u.store.Update(ctx, func(tx model.Tx) error {
		c, err := u.current(tx, cfg)
		if err != nil {
			return err
		}
		end, err := tx.ChangeLogEnd(c.TenantID)
		if err != nil {
			return err
		}
		if local := ans.AppliedThrough + c.Base; local < c.AckedThrough || local > end {
			u.log.Warn("upstream: the upstream's applied_through does not match the change log; numbering from it",
				"tenant", c.TenantID, "applied_through", ans.AppliedThrough, "acked_through", c.AckedThrough-c.Base,
				"log_end", end-c.Base)
			c.Base = c.AckedThrough - ans.AppliedThrough
		} else {
			c.AckedThrough = local
		}
		if err := tx.TrimChanges(c.TenantID, c.AckedThrough); err != nil {
			return err
		}
		now := model.At(u.clock.Now())
		c.LastSuccessAt, c.LastAttemptAt, c.LastError, c.Failures, c.NextAttemptAt = &now, &now, "", 0, nil
		if len(rejected) > 0 {
			last := rejected[len(rejected)-1]
			c.Rejected += int64(len(rejected))
			c.LastRejection = fmt.Sprintf("item %d: %s: %s", ptrValue(last.SequenceNumber), last.Error, last.Message)
		}
		out = c
		if err := tx.PutUpstream(c); err != nil {
			return err
		}
		return u.health(tx, c.TenantID, "")
	})
	if err != nil {
		return nil, err
	}
	l.failures, l.next = 0, 0
	u.pushed.Add(uint64(sent))
	if len(rejected) > 0 {
		u.rejected.Add(uint64(len(rejected)))
		u.log.Warn("upstream: items rejected by the upstream", "tenant", cfg.TenantID, "count", len(rejected),
			"last", out.LastRejection)
	}
	return out, nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// fail records a failed attempt and plans the next one: exponential backoff with
// jitter (see UpstreamOptions), at least what a 429 or 503 asked for (up to RetryMax).
func (u *Runner) fail(ctx context.Context, l *upLink, cause error) {
	u.stopPoller(l)
	if errors.Is(cause, errStale) || errors.Is(cause, errLeaseLost) {
		u.dirty.Store(true)
		return
	}
	u.failed.Add(1)
	l.failures++
	l.synced = false
	delay := u.backoff(l.failures)
	var ue *upstreamError
	if errors.As(cause, &ue) && ue.retryAfter > delay {
		delay = min(ue.retryAfter, u.opt.RetryMax)
	}
	now := u.clock.Now()
	l.next = u.clock.Mono() + delay
	u.log.Warn("upstream: push failed", "tenant", l.tenantID, "failures", l.failures, "retry_in", delay.String(),
		"err", cause.Error())
	err := u.store.Update(context.WithoutCancel(ctx), func(tx model.Tx) error {
		c, err := tx.Upstream(l.tenantID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil || c.Generation != l.gen {
			return err
		}
		at, next := model.At(now), model.At(now.Add(delay))
		c.LastAttemptAt, c.LastError, c.Failures, c.NextAttemptAt = &at, cause.Error(), l.failures, &next
		if err := tx.PutUpstream(c); err != nil {
			return err
		}
		return u.health(tx, c.TenantID, c.LastError)
	})
	if err != nil {
		u.log.Error("upstream: recording a failed push", "tenant", l.tenantID, "err", err)
	}
}

// backoff is the delay after the n-th failure in a row.
func (u *Runner) backoff(n int) time.Duration {
	ceil := u.opt.RetryMax
	if n < 30 {
		ceil = min(ceil, u.opt.RetryMin<<n)
	}
	span := ceil - u.opt.RetryMin
	if span <= 0 {
		return u.opt.RetryMin
	}
	return u.opt.RetryMin + time.Duration(u.rnd.Int64N(int64(span)+1))
}

// Stats reads the links' state from the store, for /metrics.
func (u *Runner) Stats() *model.UpstreamStats {
	st := &model.UpstreamStats{Links: map[string]int{}, Pushed: u.pushed.Load(), Failures: u.failed.Load(),
		Rejected: u.rejected.Load()}
	now := u.clock.Now()
	err := u.store.View(context.Background(), func(tx model.Tx) error {
		ids, err := tx.UpstreamTenants()
		if err != nil {
			return err
		}
		for _, id := range ids {
			s, err := statusIn(tx, id)
			if err != nil {
				return err
			}
			st.Links[s.State]++
			st.Backlog += s.Backlog
			if s.BacklogOldestAt != nil {
				st.Oldest = max(st.Oldest, now.Sub(s.BacklogOldestAt.Time))
			}
			if d := s.Downstream; d != nil {
				st.DownBehind += d.Behind
				if d.NewestAt != nil {
					st.DownAge = max(st.DownAge, now.Sub(d.NewestAt.Time))
				}
				if d.Lagging && s.State != StateDown && s.State != StatePaused {
					st.DownLagging++
				}
			}
		}
		return nil
	})
	if err != nil {
		u.log.Error("upstream: reading the links for metrics", "err", err)
	}
	return st
}
