package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/google/uuid"
)

// change is a stream change named name.
func change(name string) model.Change {
	return model.Change{Name: name, Perm: model.PermEventsRead, Data: json.RawMessage(`{"n": "` + name + `"}`),
		At: model.At(time.Now())}
}

// appendChanges commits the changes of names through db, in one transaction.
func appendChanges(t *testing.T, db *postgres.DB, tenantID string, names ...string) {
	t.Helper()
	err := db.Update(context.Background(), func(tx model.Tx) error {
		for _, n := range names {
			if err := db.AppendChange(tx, tenantID, change(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// newTenant stores a tenant and returns its id: the stream's changes are a tenant's.
func newTenant(t *testing.T, db *postgres.DB) string {
	t.Helper()
	id := uuid.NewString()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: id, Name: "T", Slug: "t-" + id, Status: "active"})
	})
	return id
}

// follower collects what FollowChanges delivers.
type follower struct {
	mu  sync.Mutex
	got []model.Change
}

func (f *follower) deliver(_ string, c model.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, c)
}

// wait returns the names delivered once there are n, failing after a second.
func (f *follower) wait(t *testing.T, n int) []model.Change {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		f.mu.Lock()
		got := append([]model.Change(nil), f.got...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d changes delivered within 1 s, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func names(cs []model.Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestFeedAcrossHandles: changes committed through one handle are delivered by the other's
// FollowChanges within a second, in commit order, numbered by the tenant's sequence as
// ChangesAfter numbers them on either handle; a rolled back change never is; and a
// transaction holding the tenant holds back the one that changes it meanwhile, which
// comes after it, each once, in the order of their numbers.
func TestFeedAcrossHandles(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	tn, other := newTenant(t, a), newTenant(t, a)
	appendChanges(t, a, tn, "before")
	f := &follower{}
	b.FollowChanges(func() []string { return []string{tn} }, f.deliver)
	if h, err := b.FeedHead(context.Background(), tn); err != nil || h != 1 {
		t.Fatalf("FeedHead of a tenant with one change = %d, %v; want 1", h, err)
	}

	appendChanges(t, a, tn, "one", "two")
	appendChanges(t, a, other, "unwatched")
	_ = a.Update(context.Background(), func(tx model.Tx) error {
		if err := a.AppendChange(tx, tn, change("rolled back")); err != nil {
			return err
		}
		return model.Errorf(model.KindConflict, "roll back")
	})
	appendChanges(t, b, tn, "three")
	got := f.wait(t, 3)
	if n := names(got); len(n) != 3 || n[0] != "one" || n[1] != "two" || n[2] != "three" {
		t.Fatalf("delivered %v", n)
	}
	if got[0].Seq != 2 || got[1].Seq != 3 || got[2].Seq != 4 || string(got[0].Data) != `{"n": "one"}` {
		t.Fatalf("delivered %+v", got)
	}
	for _, db := range []*postgres.DB{a, b} {
		after, held, err := db.ChangesAfter(context.Background(), tn, got[0].Seq)
		if err != nil || !held || len(after) != 2 || after[0].Seq != got[1].Seq || after[1].Seq != got[2].Seq {
			t.Fatalf("ChangesAfter: %+v held %v err %v", after, held, err)
		}
	}
	if h, err := b.FeedHead(context.Background(), tn); err != nil || h < got[2].Seq {
		t.Fatalf("head %d (%v) below the last delivered %d", h, err, got[2].Seq)
	}

	// A transaction that holds the tenant: one that changes the tenant meanwhile waits for
	// it (the tenant's lock), so nothing passes it, and both come once, in commit order,
	// numbered one after the other.
	ctx := context.Background()
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- a.Update(ctx, func(tx model.Tx) error {
			if err := a.AppendChange(tx, tn, change("long")); err != nil {
				return err
			}
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	short := make(chan error)
	go func() {
		short <- a.Update(ctx, func(tx model.Tx) error { return a.AppendChange(tx, tn, change("short")) })
	}()
	time.Sleep(300 * time.Millisecond) // a few polls: nothing may pass the running transaction
	if n := len(f.wait(t, 3)); n != 3 {
		t.Fatalf("%d changes delivered while a transaction held the tenant", n)
	}
	close(release)
	for _, c := range []chan error{done, short} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	got = f.wait(t, 5)
	time.Sleep(300 * time.Millisecond) // a few polls: nothing is delivered twice
	if n := names(f.wait(t, 5)); len(n) != 5 || n[3] != "long" || n[4] != "short" || got[3].Seq+1 != got[4].Seq {
		t.Fatalf("delivered %v", n)
	}

	// A number the database never gave is not held.
	if _, held, err := b.ChangesAfter(ctx, tn, 1<<62); err != nil || held {
		t.Fatalf("ChangesAfter(a future seq): held %v err %v", held, err)
	}
}

// TestFeedPrune: pruning keeps the last 1000 changes of a tenant; a resume from before
// them is not held, from their start it is.
func TestFeedPrune(t *testing.T) {
	db := open(t, pgtest.URL(t))
	tn := newTenant(t, db)
	ctx := context.Background()
	var batch []string
	for i := range 1005 {
		batch = append(batch, "c"+strconv.Itoa(i))
	}
	appendChanges(t, db, tn, batch...)
	all, held, err := db.ChangesAfter(ctx, tn, 0)
	if err != nil || held || len(all) != 1000 {
		// 1005 changes after 0: more than are kept, so not held.
		t.Fatalf("ChangesAfter(0): %d held %v err %v", len(all), held, err)
	}
	// The first prune only notes each tenant's last seq: nothing is pruned that was not
	// committed then.
	if err := db.PruneFeed(ctx); err != nil {
		t.Fatal(err)
	}
	if again, held, err := db.ChangesAfter(ctx, tn, all[3].Seq); err != nil || len(again) != 1000 || held {
		// 1001 changes after c3: more than are kept.
		t.Fatalf("after the first prune: %d held %v err %v", len(again), held, err)
	}
	var pruned int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM stream_changes").Scan(&pruned); err != nil || pruned != 1005 {
		t.Fatalf("after the first prune: %d changes kept (err %v), want all 1005", pruned, err)
	}
	if err := db.PruneFeed(ctx); err != nil {
		t.Fatal(err)
	}
	kept, held, err := db.ChangesAfter(ctx, tn, all[4].Seq)
	if err != nil || !held || len(kept) != 1000 || kept[0].Name != "c5" || kept[999].Name != "c1004" {
		t.Fatalf("ChangesAfter(the last pruned): %d held %v err %v", len(kept), held, err)
	}
	if _, held, err := db.ChangesAfter(ctx, tn, all[3].Seq); err != nil || held {
		t.Fatalf("ChangesAfter(a pruned one): held %v err %v", held, err)
	}
}
