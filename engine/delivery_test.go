package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// fakeSender records every call and answers what its rules say: by default webhooks
// answer 200 and SMS are accepted.
type fakeSender struct {
	mu      sync.Mutex
	calls   []call
	sms     bool
	webhook func(n int, m model.WebhookMessage) model.SendResult // n: 1-based call count for m.URL
	smsFn   func(n int, to string) model.SendResult
	perURL  map[string]int
}

type call struct {
	kind, target, id, body string
	at                     time.Time
}

func newFakeSender(sms bool) *fakeSender { return &fakeSender{sms: sms, perURL: map[string]int{}} }

func (f *fakeSender) SendWebhook(_ context.Context, m model.WebhookMessage) model.SendResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.perURL[m.URL]++
	f.calls = append(f.calls, call{kind: "webhook", target: m.URL, id: m.ID, body: string(m.Body), at: m.Timestamp})
	if f.webhook != nil {
		return f.webhook(f.perURL[m.URL], m)
	}
	return model.SendResult{StatusCode: 200}
}

func (f *fakeSender) SendSMS(_ context.Context, m model.OutboundSMS) model.SendResult {
	to, body := m.To, m.Body
	f.mu.Lock()
	defer f.mu.Unlock()
	f.perURL[to]++
	f.calls = append(f.calls, call{kind: "sms", target: to, body: body})
	if f.smsFn != nil {
		return f.smsFn(f.perURL[to], to)
	}
	return model.SendResult{StatusCode: 200}
}

func (f *fakeSender) SMSAvailable() bool { return f.sms }

// kinds returns the kinds of the delivery calls made so far (SMS, and event.created
// webhooks), in order.
func (f *fakeSender) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if c.kind == "sms" || strings.Contains(c.body, `"event":"event.created"`) {
			out = append(out, c.kind)
		}
	}
	return out
}

// deliveryNode is an engine with a fake sender, a tenant with a webhook subscribed to
// every event, a zone `north` and a team of that zone with a phone.
type deliveryNode struct {
	e      *engine.Engine
	clock  *model.FakeClock
	sender *fakeSender
	p      model.Principal
	dir    string
	db     interface{ Close() error }
	retry  []time.Duration // the retry schedule; the default when nil
	log    *slog.Logger    // the engine's log; discarded when nil
	up     model.UpstreamOptions
}

func newDeliveryNode(t *testing.T, sms bool, withWebhook bool) *deliveryNode {
	t.Helper()
	dir := t.TempDir()
	n := &deliveryNode{clock: model.NewFakeClock(epoch), sender: newFakeSender(sms), dir: dir}
	n.open(t)
	created := MustCreateTenant(t, n.e, "acme")
	n.p = model.Principal{TenantID: created.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	mustDo(t, func() error {
		if _, err := n.e.CreateZone(context.Background(), tenantAdmin(n.p.TenantID), model.ZoneInput{Code: "north", Name: "North",
			Boundary: polygon(square(4, 45, 1))}, nil); err != nil {
			return err
		}
		_, err := n.e.CreateTeam(context.Background(), tenantAdmin(n.p.TenantID), model.TeamInput{Name: "Alpha", ZoneCode: "north",
			Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "Ana", Phone: "+33600000001"}}}, nil)
		return err
	})
	if withWebhook {
		n.webhook(t, "https://hooks.example/a")
	}
	return n
}

// open (re)opens the store of the node's directory with a fresh engine.
func (n *deliveryNode) open(t *testing.T) {
	t.Helper()
	n.db, n.e = reopen(t, n.dir, n.db, engine.Options{Clock: n.clock, Logger: n.log, Sender: n.sender,
		RetrySchedule: n.retry, Upstream: n.up})
}

func (n *deliveryNode) webhook(t *testing.T, url string, events ...string) *model.Webhook {
	t.Helper()
	var w *model.Webhook
	mustDo(t, func() (err error) {
		w, err = n.e.CreateWebhook(context.Background(), n.p, model.WebhookInput{URL: url, Events: events}, nil)
		return err
	})
	return w
}

func (n *deliveryNode) setZone(t *testing.T, state string) {
	t.Helper()
	MustUpdate(t, n.e, func(tx model.Tx) error {
		z, err := tx.Zone(n.p.TenantID, "north")
		if err != nil {
			return err
		}
		now := model.At(n.clock.Now())
		z.Connectivity = model.Connectivity{State: state, LastReportAt: &now, Since: &now}
		return tx.PutZone(n.p.TenantID, z)
	})
}

func (n *deliveryNode) post(t *testing.T, priority, zone string) model.EventAccepted {
	t.Helper()
	in := model.EventInput{Type: "FIRE", Priority: priority, Vertical: "emergency",
		IdempotencyKey: model.NewID(), ZoneCode: zone}
	return mustIngest(t, n.e, n.p, in)
}

func (n *deliveryNode) event(t *testing.T, id string) *model.Event {
	t.Helper()
	ev, err := n.e.Event(context.Background(), n.p, id)
	if err != nil {
		t.Fatal(err)
	}
	return &ev.Event
}

// failing answers 500 to every webhook call.
func failing(int, model.WebhookMessage) model.SendResult { return model.SendResult{StatusCode: 500} }

func TestDelivery_PriorityTable(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		priority string
		restOK   bool
		// first is what the first round sends; after is what the first failure adds.
		first, after []string
		final        string
	}{
		{priority: "critical", restOK: true, first: []string{"webhook", "sms"}, final: model.EventDelivered},
		{priority: "high", restOK: true, first: []string{"webhook"}, final: model.EventDelivered},
		{priority: "high", restOK: false, first: []string{"webhook"}, after: []string{"sms"}, final: model.EventDelivered},
		{priority: "normal", restOK: false, first: []string{"webhook"}, after: []string{"sms"}, final: model.EventDelivered},
		{priority: "low", restOK: false, first: []string{"webhook"}, final: model.EventPending},
	} {
		t.Run(fmt.Sprintf("%s/rest_ok=%v", tc.priority, tc.restOK), func(t *testing.T) {
			n := newDeliveryNode(t, true, true)
			if !tc.restOK {
				n.sender.webhook = failing
			}
			acc := n.post(t, tc.priority, "north")
			if acc.ChannelSelected != model.ChannelREST || acc.Status != model.EventPending {
				t.Fatalf("accepted = %+v, want rest_full pending", acc)
			}
			n.e.RunDue(ctx)
			got := n.sender.kinds()
			want := append(slices.Clone(tc.first), tc.after...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("calls = %v, want %v", got, want)
			}
			ev := n.event(t, acc.EventID)
			if ev.Status != tc.final {
				t.Fatalf("status = %s, want %s", ev.Status, tc.final)
			}
			if tc.final == model.EventDelivered && ev.DeliveredAt == nil {
				t.Fatal("delivered_at not set")
			}
		})
	}
}

func TestDelivery_LowFailsAfterSchedule(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, true, true)
	n.sender.webhook = failing
	acc := n.post(t, "low", "north")
	n.e.RunDue(ctx)
	var at []time.Duration
	for _, d := range engine.DefaultRetrySchedule {
		// Just before the retry is due nothing happens; at the due time it runs.
		n.clock.Advance(d - time.Millisecond)
		if k := n.e.RunDue(ctx); k != 0 {
			t.Fatalf("a retry ran %v early", time.Millisecond)
		}
		n.clock.Advance(time.Millisecond)
		if k := n.e.RunDue(ctx); k < 1 {
			t.Fatalf("retry after %v: %d attempts, want it to run", d, k)
		}
		at = append(at, d)
	}
	ev := n.event(t, acc.EventID)
	if ev.Status != model.EventFailed {
		t.Fatalf("status = %s, want failed after %d retries", ev.Status, len(at))
	}
	// Every attempt of the message carried the same webhook-id; the sms channel never
	// ran for a low event; event.failed went out after.
	ids := map[string]bool{}
	for _, c := range n.sender.calls {
		if c.kind == "sms" {
			t.Fatal("a low event used its fallback")
		}
		if json.Valid([]byte(c.body)) && strings.Contains(c.body, `"event.created"`) {
			ids[c.id] = true
		}
	}
	if len(ids) != 1 {
		t.Fatalf("webhook ids of the event.created message: %v, want one", ids)
	}
	if !slices.ContainsFunc(n.sender.calls, func(c call) bool { return strings.Contains(c.body, `"event.failed"`) }) {
		t.Fatal("no event.failed webhook")
	}
	// Only the event.failed notification, failing too, is left to retry.
	if n.e.ScheduledCount() != 1 {
		t.Fatalf("%d entries still scheduled, want 1", n.e.ScheduledCount())
	}
}

func TestDelivery_ConnectivityStates(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		state, channel, status string
		calls                  []string
	}{
		{state: "", channel: model.ChannelREST, status: model.EventDelivered, calls: []string{"webhook"}}, // unknown
		{state: model.ConnOnline, channel: model.ChannelREST, status: model.EventDelivered, calls: []string{"webhook"}},
		{state: model.ConnDegraded, channel: model.ChannelSMS, status: model.EventDelivered, calls: []string{"sms"}},
		{state: model.ConnOffline, channel: model.ChannelQueued, status: model.EventQueuedOffline},
	} {
		t.Run("state="+tc.state, func(t *testing.T) {
			n := newDeliveryNode(t, true, true)
			if tc.state != "" {
				n.setZone(t, tc.state)
			}
			acc := n.post(t, "high", "north")
			if acc.ChannelSelected != tc.channel {
				t.Fatalf("channel = %s, want %s", acc.ChannelSelected, tc.channel)
			}
			n.e.RunDue(ctx)
			if got := n.sender.kinds(); !slices.Equal(got, tc.calls) {
				t.Fatalf("calls = %v, want %v", got, tc.calls)
			}
			if ev := n.event(t, acc.EventID); ev.Status != tc.status {
				t.Fatalf("status = %s, want %s", ev.Status, tc.status)
			}
		})
	}
}

func TestDelivery_StaleReportIsUnknown(t *testing.T) {
	n := newDeliveryNode(t, true, true)
	n.setZone(t, model.ConnOffline)
	n.clock.Advance(model.ConnectivityStaleAfter)
	if acc := n.post(t, "high", "north"); acc.ChannelSelected != model.ChannelREST {
		t.Fatalf("channel = %s after a stale offline report, want rest_full", acc.ChannelSelected)
	}
}

func TestDelivery_NoTargetWaitsForOne(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	acc := n.post(t, "normal", "")
	if acc.ChannelSelected != model.ChannelREST || acc.Status != model.EventPending {
		t.Fatalf("accepted = %+v, want rest_full pending", acc)
	}
	if n.e.RunDue(ctx) != 0 {
		t.Fatal("an event with no target made a call")
	}
	n.webhook(t, "https://hooks.example/late", "event.*")
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s once a webhook exists, want delivered", ev.Status)
	}
}

func TestDelivery_RetryAfterAndGone(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	n.sender.webhook = func(k int, m model.WebhookMessage) model.SendResult {
		if k == 1 {
			return model.SendResult{StatusCode: 429, RetryAfter: time.Minute}
		}
		return model.SendResult{StatusCode: 410}
	}
	acc := n.post(t, "low", "north")
	n.e.RunDue(ctx)
	n.clock.Advance(5 * time.Second) // the schedule's first delay: Retry-After wins
	if n.e.RunDue(ctx) != 0 {
		t.Fatal("retried before Retry-After")
	}
	n.clock.Advance(time.Minute)
	n.e.RunDue(ctx)
	hooks, _, err := n.e.Webhooks(ctx, n.p, model.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if hooks[0].Status != engine.WebhookDisabled {
		t.Fatalf("webhook status = %s after a 410, want disabled", hooks[0].Status)
	}
	if ev := n.event(t, acc.EventID); ev.Status != model.EventFailed {
		t.Fatalf("status = %s, want failed", ev.Status)
	}
	attempts, _, err := n.e.WebhookDeliveries(ctx, n.p, hooks[0].ID, model.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].StatusCode != 410 || attempts[1].StatusCode != 429 || attempts[1].NextAttemptAt == nil {
		t.Fatalf("attempt log = %+v", attempts)
	}
}

func TestDelivery_RestartLosesNothing(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	n.sender.webhook = func(k int, m model.WebhookMessage) model.SendResult {
		if k == 1 {
			return model.SendResult{StatusCode: 503}
		}
		return model.SendResult{StatusCode: 200}
	}
	acc := n.post(t, "high", "north")
	n.e.RunDue(ctx) // fails once, retry due in 5 s
	// The node stops mid-schedule and starts again.
	n.open(t)
	if n.e.ScheduledCount() != 1 {
		t.Fatalf("%d entries scheduled after restart, want 1", n.e.ScheduledCount())
	}
	n.clock.Advance(5 * time.Second)
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s, want delivered", ev.Status)
	}
	sent := len(n.sender.calls)
	// A second restart after the success sends nothing again.
	n.open(t)
	n.clock.Advance(24 * time.Hour)
	n.e.RunDue(ctx)
	if len(n.sender.calls) != sent {
		t.Fatalf("%d calls after a restart that followed success", len(n.sender.calls)-sent)
	}
}

// An attempt in flight holds a lease: its own run does not start it again before the
// lease ends, but a new run (the node restarted after dying mid-call) retries it at once,
// with the same webhook-id.
func TestDelivery_KilledMidCallRetriedAtRestart(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.sender.webhook = func(k int, m model.WebhookMessage) model.SendResult {
		if k == 1 {
			cancel() // the node dies during the call: its outcome is never written
			return model.SendResult{Err: context.Canceled}
		}
		return model.SendResult{StatusCode: 200}
	}
	acc := n.post(t, "high", "north")
	n.e.RunDue(cctx)
	if k := n.e.RunDue(ctx); k != 0 || len(n.sender.calls) != 1 {
		t.Fatalf("the run that holds the lease attempted again (%d, %d calls)", k, len(n.sender.calls))
	}
	n.open(t)
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s right after the restart, want delivered", ev.Status)
	}
	if n.sender.calls[0].id != n.sender.calls[1].id {
		t.Fatal("the retry after a crash used another webhook-id")
	}
}

func TestDelivery_TenantIsolation(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	other := MustCreateTenant(t, n.e, "other")
	p2 := model.Principal{TenantID: other.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	acc := n.post(t, "high", "north")
	n.e.RunDue(ctx)
	if _, err := n.e.Event(ctx, p2, acc.EventID); !model.IsKind(err, model.KindNotFound) {
		t.Fatalf("other tenant reads the event: %v", err)
	}
	list, _, err := n.e.Events(ctx, p2, model.EventFilter{}, model.Page{Limit: 50})
	if err != nil || len(list) != 0 {
		t.Fatalf("other tenant lists %d events (%v)", len(list), err)
	}
}

func TestDelivery_OfflineZoneFlushesWhenReachable(t *testing.T) {
	ctx := context.Background()
	for _, back := range []string{model.ConnOnline, model.ConnDegraded} {
		t.Run(back, func(t *testing.T) {
			n := newDeliveryNode(t, true, true)
			report := func(state string) {
				mustDo(t, func() error {
					_, err := n.e.ReportConnectivity(context.Background(), n.p, model.ConnectivityReport{ZoneCode: "north", State: state}, nil)
					return err
				})
			}
			report(model.ConnOffline)
			var ids []string
			for range 3 {
				acc := n.post(t, "normal", "north")
				if acc.Status != model.EventQueuedOffline || acc.ChannelSelected != model.ChannelQueued {
					t.Fatalf("accepted = %+v in an offline zone", acc)
				}
				ids = append(ids, acc.EventID)
			}
			if n.e.RunDue(ctx) != 0 {
				t.Fatal("a queued event was sent while its zone is offline")
			}
			n.clock.Advance(time.Minute)
			report(back)
			n.e.RunDue(ctx)
			for _, id := range ids {
				if ev := n.event(t, id); ev.Status != model.EventDelivered {
					t.Fatalf("event %s is %s after the zone came back %s", id, ev.Status, back)
				}
			}
			want := "webhook"
			if back == model.ConnDegraded {
				want = "sms"
			}
			for _, k := range n.sender.kinds() {
				if k != want {
					t.Fatalf("calls = %v, want only %s", n.sender.kinds(), want)
				}
			}
		})
	}
}

func TestDelivery_WebhookDisabledAfterFiveDaysOfFailure(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.retry = []time.Duration{time.Second}
	n.open(t)
	w := n.webhook(t, "https://hooks.example/dead", "event.created")
	n.sender.webhook = failing
	status := func() *model.Webhook {
		t.Helper()
		got, err := n.e.Webhook(ctx, n.p, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	fail := func(k int) {
		t.Helper()
		for range k {
			n.post(t, "low", "north")
		}
		n.e.RunDue(ctx)
		n.clock.Advance(time.Second)
		n.e.RunDue(ctx)
	}
	// Ten failed messages within five days: still active.
	fail(10)
	if got := status(); got.Status != engine.WebhookActive || got.FailedMessages != 10 {
		t.Fatalf("after 10 failures in a day: %+v", got)
	}
	// Five days without a success: the next failed message disables it.
	n.clock.Advance(5 * 24 * time.Hour)
	fail(1)
	got := status()
	if got.Status != engine.WebhookDisabled || got.DisabledReason == "" {
		t.Fatalf("after 5 days of failure: %+v", got)
	}
	// A disabled subscription gets nothing more.
	calls := len(n.sender.calls)
	fail(1)
	if len(n.sender.calls) != calls {
		t.Fatal("a disabled subscription was called")
	}
}

func TestDelivery_SuccessResetsFailures(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	n.retry = []time.Duration{time.Second}
	n.open(t)
	w := n.webhook(t, "https://hooks.example/flaky", "event.created")
	n.sender.webhook = failing
	for range 12 {
		n.post(t, "low", "north")
	}
	n.e.RunDue(ctx)
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	n.sender.webhook = nil // answers 200 from now on
	n.post(t, "low", "north")
	n.e.RunDue(ctx)
	n.clock.Advance(6 * 24 * time.Hour)
	got, err := n.e.Webhook(ctx, n.p, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != engine.WebhookActive || got.FailedMessages != 0 || got.LastSuccessAt == nil {
		t.Fatalf("after a success: %+v", got)
	}
}

func TestDelivery_AttemptDurationIsTimed(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	w := n.webhook(t, "https://hooks.example/slow", "event.created")
	// The receiver takes its time: the fake sender moves the engine's clock while the
	// call is in progress, as real time moves under a real call.
	takes := []time.Duration{1500 * time.Millisecond, 300 * time.Microsecond, 0}
	n.sender.webhook = func(k int, m model.WebhookMessage) model.SendResult {
		n.clock.Advance(takes[k-1])
		if k == 1 {
			return model.SendResult{StatusCode: 503}
		}
		return model.SendResult{StatusCode: 200}
	}
	n.post(t, "low", "north")
	n.e.RunDue(ctx)
	n.clock.Advance(engine.DefaultRetrySchedule[0])
	n.e.RunDue(ctx)
	n.post(t, "low", "north")
	n.e.RunDue(ctx)
	attempts, _, err := n.e.WebhookDeliveries(ctx, n.p, w.ID, model.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: a call that took no time reads 0, a sub-millisecond one 1 (rounded
	// up), the slow one its 1,500 ms.
	var got []int64
	for _, a := range attempts {
		got = append(got, a.DurationMs)
	}
	if want := []int64{0, 1, 1500}; !slices.Equal(got, want) {
		t.Fatalf("duration_ms of the attempts, newest first = %v, want %v", got, want)
	}
}
