package engine_test

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// sharedStore marks a store as shared by several processes (model.SharedStore), so that
// two engines over one bbolt store stand for two processes over one PostgreSQL database:
// the store serializes their transactions, which is what the engine's rules need.
type sharedStore struct{ model.Store }

func (sharedStore) Shared() bool { return true }

// process is one engine of a shared store, with its own sender and run.
type process struct {
	e      *engine.Engine
	sender *fakeSender
}

// share reopens the node's store as shared by two processes: the node's engine (n.e,
// with n.sender) becomes the first; the second has its own sender.
func (n *deliveryNode) share(t *testing.T) (a, b process) { return n.shareLease(t, 0) }

// shareLease is share with the processes' attempt lease (0: the default).
func (n *deliveryNode) shareLease(t *testing.T, lease time.Duration) (a, b process) {
	t.Helper()
	if err := n.db.Close(); err != nil {
		t.Fatal(err)
	}
	db := mustOpenDir(t, n.dir)
	n.db = db
	opt := engine.Options{Clock: n.clock, Logger: cmp.Or(n.log, slog.New(slog.DiscardHandler)), Password: cheapPasswords,
		RetrySchedule: n.retry, AttemptLease: lease, Upstream: n.up}
	newProcess := func(s *fakeSender) process {
		o := opt
		o.Sender = s
		return process{e: engine.New(sharedStore{db}, o), sender: s}
	}
	a, b = newProcess(n.sender), newProcess(newFakeSender(true))
	n.e = a.e
	return a, b
}

// poll is one tick of a process's poll of the shared store.
func (p process) poll(t *testing.T) {
	t.Helper()
	if err := p.e.LoadSchedule(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (p process) calls() []call {
	p.sender.mu.Lock()
	defer p.sender.mu.Unlock()
	return append([]call(nil), p.sender.calls...)
}

// A message committed by a process that dies before attempting it is found by another
// process's poll once it is overdue by the grace, and delivered.
func TestSharedStore_OrphanFoundByPoll(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	a, b := n.share(t)
	acc := n.post(t, "high", "north") // through a, which dies now
	b.poll(t)
	if got := b.e.ScheduledCount(); got != 0 {
		t.Fatalf("b holds %d entries of a's at once; want none before the grace", got)
	}
	n.clock.Advance(time.Second)
	b.poll(t)
	if got := b.e.RunDue(ctx); got != 1 {
		t.Fatalf("b made %d attempts; want 1", got)
	}
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s, want delivered", ev.Status)
	}
	if len(a.calls()) != 0 || len(b.calls()) != 1 {
		t.Fatalf("calls: a %d, b %d", len(a.calls()), len(b.calls()))
	}
}

// An attempt in flight in one process is left alone by the others until its lease ends
// (a process that found the entry earlier drops it), then taken over with the same
// webhook-id: the process that leased it died mid-call.
func TestSharedStore_LeaseOfAnotherProcessIsRespected(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	a, b := n.share(t)
	acc := n.post(t, "high", "north")
	n.clock.Advance(time.Second)
	b.poll(t) // b holds the entry too: both may try it
	actx, die := context.WithCancel(ctx)
	defer die()
	a.sender.webhook = func(int, model.WebhookMessage) model.SendResult {
		die() // a is killed during its call: its outcome is never written
		return model.SendResult{Err: context.Canceled}
	}
	if got := a.e.RunDue(actx); got != 1 {
		t.Fatalf("a made %d attempts", got)
	}
	if got := b.e.RunDue(ctx); got != 1 || len(b.calls()) != 0 {
		t.Fatalf("b attempted %d entries with %d calls; want the leased entry read and dropped", got, len(b.calls()))
	}
	if got := b.e.ScheduledCount(); got != 0 {
		t.Fatalf("b still holds %d entries", got)
	}
	// The lease (45 s) and the grace go by: found again, taken over.
	n.clock.Advance(45 * time.Second)
	b.poll(t)
	if b.e.RunDue(ctx); len(b.calls()) != 0 {
		t.Fatal("b took the entry over before the grace after the lease")
	}
	n.clock.Advance(time.Second)
	b.poll(t)
	b.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s after the lease, want delivered", ev.Status)
	}
	ac, bc := a.calls(), b.calls()
	if len(ac) != 1 || len(bc) != 1 || ac[0].id != bc[0].id {
		t.Fatalf("calls a %+v b %+v; want one each with the same webhook-id", ac, bc)
	}
}

// Options.AttemptLease sets the lease: the other process takes over after it.
func TestSharedStore_AttemptLeaseOption(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	a, b := n.shareLease(t, 5*time.Second)
	n.post(t, "high", "north")
	actx, die := context.WithCancel(ctx)
	a.sender.webhook = func(int, model.WebhookMessage) model.SendResult {
		die()
		return model.SendResult{Err: context.Canceled}
	}
	a.e.RunDue(actx)
	n.clock.Advance(5*time.Second + time.Second - time.Millisecond)
	b.poll(t)
	if b.e.RunDue(ctx); len(b.calls()) != 0 {
		t.Fatal("taken over before the lease and the grace")
	}
	n.clock.Advance(time.Millisecond)
	b.poll(t)
	if b.e.RunDue(ctx); len(b.calls()) != 1 {
		t.Fatalf("%d calls after the lease of 5 s and the grace, want 1", len(b.calls()))
	}
}

// A call that outlives its lease loses the message to the process that took it over: its
// late outcome is not written over the other's.
func TestSharedStore_LateOutcomeAfterTakeOverIsDropped(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	a, b := n.share(t)
	acc := n.post(t, "high", "north")
	b.sender.webhook = failing // b's attempt fails: the message waits for its retry
	a.sender.webhook = func(int, model.WebhookMessage) model.SendResult {
		// a's call hangs past its lease; b takes the message over meanwhile.
		n.clock.Advance(47 * time.Second)
		b.poll(t)
		if got := b.e.RunDue(ctx); got != 1 {
			t.Errorf("b made %d attempts during a's call; want 1", got)
		}
		return model.SendResult{StatusCode: 200}
	}
	a.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status == model.EventDelivered {
		t.Fatal("a's late success was written over b's attempt")
	}
	var o *model.OutboxEntry
	_ = n.e.View(ctx, func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil || len(refs) != 1 {
			t.Fatalf("outbox %+v, %v", refs, err)
		}
		o, err = tx.OutboxEntry(refs[0].TenantID, refs[0].ID)
		return err
	})
	if o.Attempts != 2 || o.LeasedBy != "" || o.LastStatus != 500 {
		t.Fatalf("entry = %+v; want b's failed second attempt, waiting for its retry", o)
	}
	// The retry (5 min after a second attempt) delivers it, with the same webhook-id.
	b.sender.webhook = nil
	n.clock.Advance(5 * time.Minute)
	b.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s after the retry", ev.Status)
	}
	if ac, bc := a.calls(), b.calls(); len(bc) != 2 || ac[0].id != bc[0].id || bc[0].id != bc[1].id {
		t.Fatalf("calls a %+v b %+v", ac, bc)
	}
}

// Two processes race for the same due messages: each message is called once.
func TestSharedStore_RaceCallsEachMessageOnce(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	a, b := n.share(t)
	for range 40 {
		n.post(t, "high", "north")
	}
	n.clock.Advance(time.Second)
	b.poll(t)
	if b.e.ScheduledCount() != 40 {
		t.Fatalf("b holds %d entries, want 40", b.e.ScheduledCount())
	}
	runDueTogether(ctx, a, b)
	seen := map[string]int{}
	for _, c := range append(a.calls(), b.calls()...) {
		seen[c.id]++
	}
	if len(seen) != 40 {
		t.Fatalf("%d messages called, want 40", len(seen))
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("message %s called %d times", id, k)
		}
	}
}

// A mission's reinforcement check runs once whichever process holds it: both hold it at
// its time and run it at once.
func TestSharedStore_ReinforcementOnce(t *testing.T) {
	ctx := context.Background()
	fn := newFieldNode(t)
	fn.settings(t, false, 0.0, 5)
	noAck := func(_ int, m model.WebhookMessage) model.SendResult {
		if strings.Contains(string(m.Body), `"event":"team.dispatched"`) {
			return model.SendResult{StatusCode: 500} // the team never hears of it: no ACK
		}
		return model.SendResult{StatusCode: 200}
	}
	fn.sender.webhook = noAck
	acc := fn.post(t, "high", "north")
	d, err := fn.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: fn.alpha.ID})
	if err != nil {
		t.Fatal(err)
	}
	a, b := fn.share(t)
	b.sender.webhook = noAck
	fn.clock.Advance(5*time.Minute + time.Second)
	a.poll(t)
	b.poll(t)
	runDueTogether(ctx, a, b)
	for range 3 {
		fn.clock.Advance(10 * time.Minute)
		for _, p := range []process{a, b} {
			p.poll(t)
			p.e.RunDue(ctx)
		}
	}
	if !fn.mission(t, d.MissionID).Reinforced {
		t.Fatal("not reinforced")
	}
	var missions []model.Mission
	_ = fn.e.View(ctx, func(tx model.Tx) (err error) {
		missions, err = tx.MissionsOfEvent(fn.p.TenantID, acc.EventID)
		return err
	})
	if len(missions) != 2 {
		t.Fatalf("the event has %d missions, want the original and one backup", len(missions))
	}
	if k := len(a.sender.hooks(t, engine.HookMissionReinforced)) + len(b.sender.hooks(t, engine.HookMissionReinforced)); k != 1 {
		t.Fatalf("%d mission.reinforced messages, want 1", k)
	}
}

// On a shared store the idempotency sweep runs once per period across the processes,
// whichever timer fires first; alone on its store a node sweeps each time.
func TestSharedStore_SweepOncePerPeriod(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	if ran, _, err := n.e.SweepOnce(ctx); !ran || err != nil {
		t.Fatalf("alone: sweep ran %v, %v", ran, err)
	}
	if ran, _, err := n.e.SweepOnce(ctx); !ran || err != nil {
		t.Fatalf("alone, again: sweep ran %v, %v", ran, err)
	}
	a, b := n.share(t)
	sweep := func(p process) bool {
		t.Helper()
		ran, _, err := p.e.SweepOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ran
	}
	if !sweep(a) || sweep(b) || sweep(a) {
		t.Fatal("the first period: want a to sweep, then neither")
	}
	n.clock.Advance(30 * time.Minute)
	if sweep(b) || sweep(a) {
		t.Fatal("half a period later: want no sweep")
	}
	n.clock.Advance(25 * time.Minute) // 55 min: past 9/10 of the hour
	if !sweep(b) || sweep(a) {
		t.Fatal("the next period: want b to sweep, then not a")
	}
}

// Each process counts the API requests it serves and flushes them as increments: the
// usage of the day is their sum, whatever the order of the flushes.
func TestSharedStore_RequestCountsAdd(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	a, b := n.share(t)
	for range 3 {
		a.e.CountRequest(n.p.TenantID)
	}
	for range 4 {
		b.e.CountRequest(n.p.TenantID)
	}
	for _, p := range []process{a, b, a} {
		if err := p.e.FlushUsage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a.e.CountRequest(n.p.TenantID)
	if err := a.e.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	var got uint64
	_ = n.e.View(ctx, func(tx model.Tx) error {
		cs, err := tx.UsageCounters(n.p.TenantID, "2000-01-01", "2100-01-01")
		for _, c := range cs {
			if c.Metric == model.UsageAPIRequests {
				got += c.N
			}
		}
		return err
	})
	if got != 8 {
		t.Fatalf("api_requests = %d, want 8", got)
	}
}

// failingBatches is a store whose Batch calls numbered in fail (from 1) fail without
// running.
type failingBatches struct {
	model.Store
	mu   sync.Mutex
	n    int
	fail map[int]bool
}

func (s *failingBatches) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	s.mu.Lock()
	s.n++
	failed := s.fail[s.n]
	s.mu.Unlock()
	if failed {
		return model.Errorf(model.KindUnavailable, "could not serialize access")
	}
	return s.Store.Batch(ctx, tenantID, fn)
}

// An outcome whose transaction fails (contention on a shared store) is written on a later
// try: the call is not made again.
func TestOutcomeWriteTriedAgain(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	acc := n.post(t, "high", "north")
	// Batch 1 leases the message; 2 and 3, the outcome's first tries, fail.
	s := &failingBatches{Store: n.db.(model.Store), fail: map[int]bool{2: true, 3: true}}
	e := engine.New(s, engine.Options{Clock: n.clock, Sender: n.sender, Logger: slog.New(slog.DiscardHandler),
		Password: cheapPasswords})
	if err := e.LoadSchedule(ctx); err != nil {
		t.Fatal(err)
	}
	e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s, want delivered", ev.Status)
	}
	n.clock.Advance(time.Hour)
	e.RunDue(ctx)
	if len(n.sender.calls) != 1 {
		t.Fatalf("%d calls, want 1", len(n.sender.calls))
	}
}

// On a shared store one process pushes upstream at a time, the changes every process
// commits; another takes the push over when the lease of the first ends (it died) or
// at once when the first releases it (it stopped).
func TestSharedStore_UpstreamPushedByOneProcess(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	a, b := n.share(t)
	check := func(what string, applied int64) {
		t.Helper()
		rec, _, got := up.snapshot()
		if got != applied || up.registrations() != 1 {
			t.Fatalf("%s: %d applied, %d registrations; want %d, 1", what, got, up.registrations(), applied)
		}
		for seq, k := range rec {
			if k != 1 {
				t.Fatalf("%s: sequence %d came %d times", what, seq, k)
			}
		}
	}
	n.events(t, 3) // through a
	b.e.RunUpstream(ctx)
	if wait := a.e.RunUpstream(ctx); wait > time.Second {
		t.Fatalf("a, without the lease, waits %s; want to try again within a second", wait)
	}
	check("b pushes", 3)
	n.events(t, 2)
	a.e.RunUpstream(ctx)
	check("a does not push", 3)
	b.e.RunUpstream(ctx)
	check("b pushes a's changes", 5)
	// b dies: a takes over once b's lease (15 s) ends.
	n.events(t, 1)
	n.clock.Advance(10 * time.Second)
	a.e.RunUpstream(ctx)
	check("within b's lease", 5)
	n.clock.Advance(6 * time.Second)
	a.e.RunUpstream(ctx)
	check("after b's lease", 6)
	// a stops and releases the lease: b takes over at once.
	a.e.ReleaseLeases(ctx)
	n.events(t, 1)
	b.e.RunUpstream(ctx)
	check("after a released it", 7)
}

// On a shared store a process logs its changes for upstream once another process has
// set the tenant's upstream, whatever it read before.
func TestSharedStore_UpstreamSetByAnotherProcess(t *testing.T) {
	n := newUpNode(t, model.UpstreamOptions{})
	a, b := n.share(t)
	post := func(p process) {
		t.Helper()
		in := model.EventInput{Type: "FIRE", Priority: "low", Vertical: "emergency", IdempotencyKey: model.NewID()}
		if _, err := p.e.IngestEvent(context.Background(), n.p, in, func(v any) (model.Reply, error) {
			return model.Reply{Status: 201, Body: []byte("{}")}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	post(b)                                                                         // b learns the tenant has no upstream
	n.setUpstream(t, model.UpstreamInput{URL: "http://127.0.0.1:9", APIKey: upKey}) // through a
	// The history (b's first event) goes into the log first; then every change is logged.
	if _, err := a.e.WalkUpstreamHistory(context.Background(), n.p.TenantID, 10); err != nil {
		t.Fatal(err)
	}
	post(b)
	post(a)
	if end := n.logEnd(t); end != 3 {
		t.Fatalf("the change log ends at %d, want 3: the history, b's change after the upstream was set, and a's", end)
	}
}

// A success rewrites the subscription only when its last success is a second old or more
// (or its health changes), on a shared store and alone on its store alike; a last success
// ahead of the clock (set back) is rewritten.
func TestSharedStore_WebhookHealthWrittenOncePerSecond(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		n := newDeliveryNode(t, false, false)
		w := n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
		if shared {
			n.share(t)
		}
		lastSuccess := func() time.Time {
			t.Helper()
			var wh *model.Webhook
			_ = n.e.View(ctx, func(tx model.Tx) (err error) {
				wh, err = tx.Webhook(n.p.TenantID, w.ID)
				return err
			})
			if wh == nil || wh.LastSuccessAt == nil {
				t.Fatalf("webhook %+v", wh)
			}
			return wh.LastSuccessAt.Time
		}
		deliver := func() {
			t.Helper()
			n.post(t, "high", "north")
			if k := n.e.RunDue(ctx); k != 1 {
				t.Fatalf("%d attempts", k)
			}
		}
		t0 := n.clock.Now()
		deliver()
		n.clock.Advance(500 * time.Millisecond)
		deliver()
		if got := lastSuccess(); !got.Equal(t0) {
			t.Fatalf("shared %v: last success %v, want %v", shared, got, t0)
		}
		n.clock.Advance(500 * time.Millisecond)
		deliver()
		if got := lastSuccess(); !got.Equal(t0.Add(time.Second)) {
			t.Fatalf("shared %v: last success %v a second later", shared, got)
		}
		n.clock.Step(-time.Hour)
		deliver()
		if got := lastSuccess(); !got.Equal(t0.Add(time.Second - time.Hour)) {
			t.Fatalf("shared %v: last success %v after the clock was set back an hour", shared, got)
		}
	}
}

// On a shared store the failure that ends a message counts it on its subscription at
// once, however recent the subscription's last write.
func TestSharedStore_FailedMessageCountedAtOnce(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	w := n.webhook(t, "https://hooks.example/a", engine.HookEventCreated)
	n.retry = []time.Duration{100 * time.Millisecond}
	n.share(t)
	n.sender.webhook = failing
	n.post(t, "high", "north")
	n.e.RunDue(ctx) // fails; retried in 100 ms
	n.clock.Advance(100 * time.Millisecond)
	n.e.RunDue(ctx) // fails again: the message ends
	var wh *model.Webhook
	_ = n.e.View(ctx, func(tx model.Tx) (err error) {
		wh, err = tx.Webhook(n.p.TenantID, w.ID)
		return err
	})
	if wh.FailedMessages != 1 || len(n.sender.calls) != 2 {
		t.Fatalf("failed messages %d after %d calls, want 1 after 2", wh.FailedMessages, len(n.sender.calls))
	}
}

// runDueTogether makes the attempts due in each process at once, as their schedulers would.
func runDueTogether(ctx context.Context, ps ...process) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.e.RunDue(ctx) })
	}
	wg.Wait()
}
