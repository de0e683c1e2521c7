package engine_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// heldStore is a store whose Batch calls wait while it is held: the outcomes of calls
// made wait for a commit that does not come until release.
type heldStore struct {
	*store.DB
	gate chan struct{} // closed by release
	once sync.Once
}

func (h *heldStore) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	<-h.gate
	return h.DB.Batch(ctx, tenantID, fn)
}

func (h *heldStore) release() { h.once.Do(func() { close(h.gate) }) }

// eventually polls cond (a goroutine's effect, not a schedule: the clock is fake) until
// it holds, for at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: not %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A worker of the running scheduler makes its next call while the outcome of its last
// one waits for its commit (docs/decisions/0250-outcomes-written-behind.md): one worker
// makes both calls while no outcome can be committed, and both outcomes are written once
// the store commits again.
func TestDelivery_WorkerCallsWhileOutcomeWaits(t *testing.T) {
	n := newDeliveryNode(t, false, true)
	a, b := n.post(t, "high", "north"), n.post(t, "high", "north")
	held := &heldStore{DB: n.db.(*store.DB), gate: make(chan struct{})}
	e := engine.New(held, engine.Options{Clock: n.clock, Sender: n.sender, Workers: 1, Password: cheapPasswords,
		Logger: slog.New(slog.DiscardHandler)})
	if err := e.StartScheduler(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer e.StopScheduler()
	defer held.release() // before the stop, which waits for the outcomes
	eventually(t, "two event.created calls made by one worker", func() bool { return len(n.sender.kinds()) == 2 })
	for _, id := range []string{a.EventID, b.EventID} {
		if ev := n.event(t, id); ev.Status != model.EventPending {
			t.Fatalf("status = %s before the outcome's commit, want pending", ev.Status)
		}
	}
	held.release()
	eventually(t, "both events delivered", func() bool {
		return n.event(t, a.EventID).Status == model.EventDelivered && n.event(t, b.EventID).Status == model.EventDelivered
	})
	if k := len(n.sender.kinds()); k != 2 {
		t.Fatalf("%d event.created calls, want 2: a message was sent again while its outcome waited", k)
	}
}

// The outcomes waiting for their commit are bounded, 4 per worker: one worker makes 5
// calls while none can be committed (4 outcomes wait, the worker holds the fifth) and no
// sixth. Stopping the scheduler waits for the outcomes being written: once it returns,
// every event whose message was sent is delivered.
func TestDelivery_OutcomesWaitingAreBounded(t *testing.T) {
	n := newDeliveryNode(t, false, true)
	var accs []model.EventAccepted
	for range 6 {
		accs = append(accs, n.post(t, "high", "north"))
	}
	held := &heldStore{DB: n.db.(*store.DB), gate: make(chan struct{})}
	e := engine.New(held, engine.Options{Clock: n.clock, Sender: n.sender, Workers: 1, Password: cheapPasswords,
		Logger: slog.New(slog.DiscardHandler)})
	if err := e.StartScheduler(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	defer func() { held.release(); <-stopped }()
	eventually(t, "five event.created calls", func() bool { return len(n.sender.kinds()) >= 5 })
	time.Sleep(50 * time.Millisecond) // room for a sixth call, were there no bound
	if k := len(n.sender.kinds()); k != 5 {
		t.Fatalf("%d calls while no outcome could be committed, want 5 (4 waiting, 1 held by the worker)", k)
	}
	go func() { e.StopScheduler(); close(stopped) }()
	held.release()
	<-stopped
	sent := map[string]bool{}
	for _, c := range n.sender.calls {
		if strings.Contains(c.body, `"event":"event.created"`) {
			sent[c.body] = true
		}
	}
	delivered := 0
	for _, acc := range accs {
		if n.event(t, acc.EventID).Status == model.EventDelivered {
			delivered++
		}
	}
	if delivered != len(sent) || delivered < 5 {
		t.Fatalf("%d events delivered after the stop, %d sent: every outcome of a call made must be written", delivered, len(sent))
	}
}

// A node that dies after a call and before its outcome's commit left the message due: the
// next run sends it again at once, with the same webhook-id, and the event is delivered
// (docs/decisions/0250-outcomes-written-behind.md). The crash is the store's file as it
// was during the call, when nothing else was being written.
func TestDelivery_CrashBeforeOutcomeCommitRedelivers(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, true)
	snapshot := filepath.Join(t.TempDir(), "at-the-call")
	n.sender.webhook = func(k int, m model.WebhookMessage) model.SendResult {
		if k == 1 {
			if err := copyDir(n.dir, snapshot); err != nil {
				t.Error(err)
			}
		}
		return model.SendResult{StatusCode: 200}
	}
	acc := n.post(t, "high", "north")
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s, want delivered", ev.Status)
	}
	// The crash: the outcome's commit never reached the disk.
	if err := n.db.Close(); err != nil {
		t.Fatal(err)
	}
	n.dir, n.db = snapshot, nil
	n.open(t)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventPending {
		t.Fatalf("status = %s after the crash, want pending", ev.Status)
	}
	n.e.RunDue(ctx)
	if ev := n.event(t, acc.EventID); ev.Status != model.EventDelivered {
		t.Fatalf("status = %s after the restart, want delivered", ev.Status)
	}
	var ids []string
	for _, c := range n.sender.calls {
		if strings.Contains(c.body, `"event":"event.created"`) {
			ids = append(ids, c.id)
		}
	}
	if len(ids) != 2 || ids[0] != ids[1] {
		t.Fatalf("event.created sent with webhook-ids %v: want it sent again with its webhook-id", ids)
	}
}

// copyDir copies the regular files of dir into a new directory to.
func copyDir(dir, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range entries {
		if !de.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(dir, de.Name()), filepath.Join(to, de.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
