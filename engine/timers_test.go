package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The node's wall clock is stepped (FakeClock.Step: the monotonic reading stays) while
// timers run: back an hour, then forward a day. No timer fires early, none is held back
// or lost (docs/decisions/0128-timers-clock-steps.md).

// TestTimers_DeliveryRetryWhenClockSteps: a webhook message that fails twice is retried
// after the schedule's 5 s and 5 min of elapsed time, whatever the wall clock says;
// the attempt log lists the three attempts newest first, with distinct ids.
func TestTimers_DeliveryRetryWhenClockSteps(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false)
	wh := n.webhook(t, "https://hooks.example/a")
	n.sender.webhook = func(k int, _ model.WebhookMessage) model.SendResult {
		if k <= 2 {
			return model.SendResult{StatusCode: 500}
		}
		return model.SendResult{StatusCode: 200}
	}
	calls := func() int { // the calls of the event.created message
		n.sender.mu.Lock()
		defer n.sender.mu.Unlock()
		k := 0
		for _, c := range n.sender.calls {
			if strings.Contains(c.body, `"event":"event.created"`) {
				k++
			}
		}
		return k
	}
	expect := func(step string, want int) {
		t.Helper()
		n.e.RunDue(ctx)
		if got := calls(); got != want {
			t.Fatalf("%s: %d calls, want %d", step, got, want)
		}
	}
	acc := n.post(t, "high", "north")
	expect("first try", 1)

	n.clock.Step(-time.Hour)
	n.clock.Advance(engine.DefaultRetrySchedule[0] - time.Second)
	expect("a second before the first retry, the clock set back an hour", 1)
	n.clock.Advance(time.Second)
	expect("at the first retry", 2) // not an hour late

	n.clock.Step(24 * time.Hour)
	expect("right after the clock was set forward a day", 2) // not at once
	n.clock.Advance(engine.DefaultRetrySchedule[1] - time.Second)
	expect("a second before the second retry", 2)
	n.clock.Advance(time.Second)
	expect("at the second retry", 3)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("event %s, want delivered", ev.Status)
	}
	if n.e.ScheduledCount() != 0 {
		t.Fatalf("%d entries still scheduled", n.e.ScheduledCount())
	}

	log, _, err := n.e.WebhookDeliveries(ctx, n.p, wh.ID, model.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var attempts []int
	var ids []string
	for _, a := range log {
		if a.Event == engine.HookEventCreated {
			attempts = append(attempts, a.Attempt)
		}
		ids = append(ids, a.ID)
	}
	if !slices.Equal(attempts, []int{3, 2, 1}) {
		t.Fatalf("attempt log of event.created newest first: %v, want [3 2 1]", attempts)
	}
	if !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) ||
		len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		t.Fatalf("attempt ids not distinct and descending: %v", ids)
	}
}

// TestTimers_ReinforcementWhenClockSteps: a mission nobody acknowledges is reinforced
// after the tenant's 5 minutes of elapsed time, with the clock set back an hour (not an
// hour late) and with it set forward a day (not at once).
func TestTimers_ReinforcementWhenClockSteps(t *testing.T) {
	for _, c := range []struct {
		name string
		step time.Duration
	}{{"SetBackAnHour", -time.Hour}, {"SetForwardADay", 24 * time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := newFieldNode(t)
			n.settings(t, false, 0.0, 5)
			n.sender.webhook = failing // the team's notification does not arrive: no ACK
			acc := n.post(t, "high", "north")
			d, err := n.dispatch(t, model.DispatchInput{EventID: acc.EventID, TeamID: n.alpha.ID})
			if err != nil {
				t.Fatal(err)
			}
			n.e.RunDue(ctx)
			n.clock.Step(c.step)
			n.e.RunDue(ctx)
			n.clock.Advance(5*time.Minute - time.Second)
			n.e.RunDue(ctx)
			if n.mission(t, d.MissionID).Reinforced {
				t.Fatal("reinforced before 5 minutes elapsed")
			}
			n.clock.Advance(time.Second)
			n.e.RunDue(ctx)
			if !n.mission(t, d.MissionID).Reinforced {
				t.Fatal("not reinforced once 5 minutes elapsed")
			}
			if got := n.sender.hooks(t, engine.HookMissionReinforced); len(got) != 1 {
				t.Fatalf("mission.reinforced webhooks: %d, want one", len(got))
			}
		})
	}
}

// TestTimers_LockoutWhenClockSteps: a login lock-out lasts its 15 minutes of elapsed
// time: a day's step forward does not end it, an hour's step back does not lengthen it.
func TestTimers_LockoutWhenClockSteps(t *testing.T) {
	const email = "alice@acme.example"
	e, clock := MustOpenEngine(t)
	MustCreateTenant(t, e, "acme")
	MustCreateUser(t, e, "acme", email, model.RoleFieldOperator)

	failLogins(t, e, email, engine.MaxLoginFailures)
	clock.Step(24 * time.Hour)
	_, err := login(e, email, testPassword)
	if locked := AssertKind(t, err, model.KindAccountLocked); locked.RetryAfter != engine.LoginLockFor {
		t.Fatalf("RetryAfter after a step forward = %v, want %v", locked.RetryAfter, engine.LoginLockFor)
	}
	clock.Advance(engine.LoginLockFor - time.Second)
	_, err = login(e, email, testPassword)
	AssertKind(t, err, model.KindAccountLocked)
	clock.Advance(time.Second)
	if _, err := login(e, email, testPassword); err != nil {
		t.Fatalf("login once the lock elapsed: %v", err)
	}

	failLogins(t, e, email, engine.MaxLoginFailures)
	clock.Step(-time.Hour)
	clock.Advance(engine.LoginLockFor - time.Second)
	_, err = login(e, email, testPassword)
	if locked := AssertKind(t, err, model.KindAccountLocked); locked.RetryAfter != time.Second {
		t.Fatalf("RetryAfter after a step back = %v, want 1s", locked.RetryAfter)
	}
	clock.Advance(time.Second)
	if _, err := login(e, email, testPassword); err != nil {
		t.Fatalf("login once the lock elapsed, the clock set back an hour: %v", err)
	}
	// Ended, the lock stays ended: 4 failures do not lock again.
	failLogins(t, e, email, engine.MaxLoginFailures-1)
	if _, err := login(e, email, testPassword); err != nil {
		t.Fatalf("login after the lock and 4 failures: %v", err)
	}
}

// TestTimers_KeyGraceWhenClockSteps: the old key of a rotation stays valid for its grace
// of elapsed time: a day's step forward does not end a 60-minute grace, an hour's step
// back does not lengthen it. The key list agrees with authentication.
func TestTimers_KeyGraceWhenClockSteps(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		step time.Duration
	}{{"SetForwardADay", 24 * time.Hour}, {"SetBackAnHour", -time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			e, clock := MustOpenEngine(t)
			ct := MustCreateTenant(t, e, "acme")
			var nk *model.NewKey
			MustUpdate(t, e, func(tx model.Tx) (err error) {
				nk, err = e.RotateTenantKey(tx, ct.Tenant.ID, "", model.RotateAPIKeyInput{GracePeriodMinutes: ptr[model.Int](60)})
				return err
			})
			clock.Step(c.step)
			clock.Advance(time.Hour - time.Second)
			if _, err := e.AuthenticateKey(ctx, ct.APIKey); err != nil {
				t.Fatalf("old key a second before its grace elapsed: %v", err)
			}
			if keys, err := e.APIKeysOf(ctx, ct.Tenant.ID); err != nil || len(keys) != 2 {
				t.Fatalf("keys listed within the grace: %d, %v", len(keys), err)
			}
			clock.Advance(time.Second)
			_, err := e.AuthenticateKey(ctx, ct.APIKey)
			AssertKind(t, err, model.KindUnauthorized)
			if keys, err := e.APIKeysOf(ctx, ct.Tenant.ID); err != nil || len(keys) != 1 {
				t.Fatalf("keys listed after the grace: %d, %v", len(keys), err)
			}
			if _, err := e.AuthenticateKey(ctx, nk.APIKey); err != nil {
				t.Fatalf("new key: %v", err)
			}
		})
	}
}

// TestTimers_RestartReadsStoredTimes: a node that restarts has only the stored due times,
// which are wall-clock times: a retry stored before the clock was set back an hour is
// due an hour later by elapsed time after the restart, and is made then, not lost.
func TestTimers_RestartReadsStoredTimes(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	n.sender.webhook = func(k int, _ model.WebhookMessage) model.SendResult {
		if k == 1 {
			return model.SendResult{StatusCode: 500}
		}
		return model.SendResult{StatusCode: 200}
	}
	acc := n.post(t, "high", "north")
	n.e.RunDue(ctx) // fails: the retry is stored due in 5 s
	n.clock.Step(-time.Hour)
	n.open(t)
	n.clock.Advance(time.Hour + engine.DefaultRetrySchedule[0] - time.Second)
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status == model.EventDelivered {
		t.Fatal("delivered before the stored due time")
	}
	n.clock.Advance(time.Second)
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("event %s at the stored due time, want delivered", ev.Status)
	}
}

// TestTimers_UpstreamBackoffWhenClockSteps: a failed push to the upstream waits its
// backoff of elapsed time: a day's step forward does not end it, an hour's step back does
// not lengthen it.
func TestTimers_UpstreamBackoffWhenClockSteps(t *testing.T) {
	ctx := context.Background()
	n := newUpNode(t, model.UpstreamOptions{})
	up := newFakeUpstream(t, upKey)
	up.set("down")
	n.setUpstream(t, model.UpstreamInput{URL: up.srv.URL, APIKey: upKey})
	n.events(t, 1)
	for i, step := range []time.Duration{24 * time.Hour, -time.Hour} {
		n.e.RunUpstream(ctx)
		st := n.status(t)
		if st.Failures != i+1 {
			t.Fatalf("failure %d: %+v", i+1, st)
		}
		delay := st.NextAttemptAt.Sub(st.LastAttemptAt.Time)
		n.clock.Step(step)
		n.e.RunUpstream(ctx)
		n.clock.Advance(delay - 2*time.Millisecond)
		n.e.RunUpstream(ctx)
		if st := n.status(t); st.Failures != i+1 {
			t.Fatalf("clock stepped %s: tried before the backoff elapsed: %+v", step, st)
		}
		n.clock.Advance(3 * time.Millisecond)
		if i == 1 {
			up.set("")
		}
	}
	n.e.RunUpstream(ctx)
	if st := n.status(t); st.State != engine.UpstreamIdle || st.Failures != 0 {
		t.Fatalf("the clock set back an hour: not pushed once the backoff elapsed: %+v", st)
	}
}
