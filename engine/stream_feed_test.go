package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// fakeFeed is a model.ChangeFeed in memory: changes, numbered by the test, of one tenant.
type fakeFeed struct {
	mu       sync.Mutex
	changes  []model.Change
	pruned   uint64 // the greatest seq no longer held
	head     uint64
	follows  int
	watching func() []string
	deliver  func(string, model.Change)
	fail     error
}

func (f *fakeFeed) AppendChange(model.TxCommit, string, model.Change) error { return nil }

func (f *fakeFeed) FollowChanges(watching func() []string, deliver func(string, model.Change)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.follows++
	f.watching, f.deliver = watching, deliver
}

func (f *fakeFeed) FeedHead(context.Context, string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head, f.fail
}

func (f *fakeFeed) ChangesAfter(_ context.Context, _ string, after uint64) ([]model.Change, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, false, f.fail
	}
	var out []model.Change
	for _, c := range f.changes {
		if c.Seq > after {
			out = append(out, c)
		}
	}
	last := uint64(0)
	if n := len(f.changes); n > 0 {
		last = f.changes[n-1].Seq
	}
	return out, after >= f.pruned && after <= last, nil
}

func seqs(cs []model.Change) []uint64 {
	var out []uint64
	for _, c := range cs {
		out = append(out, c.Seq)
	}
	return out
}

// TestFeedBroker: over a store's change feed, the broker takes its ids and backlog from
// the feed, follows it from the first subscription on, fans out what it delivers, and
// tells a caller whose id the feed no longer holds to reload.
func TestFeedBroker(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{changes: []model.Change{{Seq: 10, Name: "a"}, {Seq: 20, Name: "b"}, {Seq: 30, Name: "c"}},
		pruned: 10, head: 30}
	b := engine.NewFeedBroker(f)
	if id := b.EventID(30); id != "db-30" {
		t.Fatalf("EventID: %s", id)
	}
	if seq, ok := b.ParseEventID("db-30"); !ok || seq != 30 {
		t.Fatalf("ParseEventID: %d %v", seq, ok)
	}

	s, backlog, head, resumed, err := b.SubscribeContext(ctx, "t1", 0)
	if err != nil || head != 30 || len(backlog) != 0 || !resumed || f.follows != 1 {
		t.Fatalf("fresh: head %d backlog %v resumed %v err %v follows %d", head, seqs(backlog), resumed, err, f.follows)
	}
	defer s.Close()
	if w := f.watching(); !slices.Equal(w, []string{"t1"}) {
		t.Fatalf("watching %v", w)
	}
	f.deliver("t2", model.Change{Seq: 35}) // nobody watches t2 here
	f.deliver("t1", model.Change{Seq: 40, Name: "d"})
	if c := <-s.C; c.Seq != 40 || c.Name != "d" {
		t.Fatalf("delivered %+v", c)
	}

	f.changes = append(f.changes, model.Change{Seq: 40, Name: "d"})
	s2, backlog, _, resumed, err := b.SubscribeContext(ctx, "t1", 20)
	if err != nil || !resumed || !slices.Equal(seqs(backlog), []uint64{30, 40}) || f.follows != 1 {
		t.Fatalf("resume: backlog %v resumed %v err %v follows %d", seqs(backlog), resumed, err, f.follows)
	}
	s2.Close()

	// An id older than the feed holds: not resumed, the backlog is what follows the head.
	s3, backlog, head, resumed, err := b.SubscribeContext(ctx, "t1", 5)
	if err != nil || resumed || head != 30 || !slices.Equal(seqs(backlog), []uint64{40}) {
		t.Fatalf("pruned id: head %d backlog %v resumed %v err %v", head, seqs(backlog), resumed, err)
	}
	s3.Close()

	f.fail = errors.New("database down")
	if _, _, _, _, err := b.SubscribeContext(ctx, "t1", 20); err == nil {
		t.Fatal("a failing feed did not fail the subscription")
	}
	if n := b.Subscribers("t1"); n != 1 {
		t.Fatalf("%d subscribers after a failed subscription, want 1", n)
	}
}
