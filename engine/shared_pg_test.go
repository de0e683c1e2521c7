package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestMain lets the tests of the shared store run on PostgreSQL: pgtest starts a cluster
// on first use only, and stops it at the end.
func TestMain(m *testing.M) { pgtest.Main(m) }

// pgProcesses returns an engine per sender on one new PostgreSQL database, each with its
// own pool (processes of the central tier), sharing a fake clock.
func pgProcesses(t *testing.T, senders ...model.Sender) ([]*engine.Engine, *model.FakeClock) {
	t.Helper()
	url := pgtest.URL(t)
	clock := model.NewFakeClock(epoch)
	var out []*engine.Engine
	for _, sender := range senders {
		db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 8, SecretKey: pgtest.SecretKey()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		out = append(out, engine.New(db, engine.Options{Clock: clock, Password: cheapPasswords, Sender: sender,
			Logger: slog.New(slog.DiscardHandler)}))
	}
	return out, clock
}

// race runs fn(i) for i in [0, n) at once and waits.
func race(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// The claims of periodic work and the leases hold on PostgreSQL's serializable
// transactions: of processes that claim at once, one wins.
func TestSharedPostgres_ClaimsAndLeasesOnce(t *testing.T) {
	ctx := context.Background()
	es, clock := pgProcesses(t, nil, nil)
	for round := range 3 {
		var mu sync.Mutex
		swept, leased := 0, 0
		race(8, func(i int) {
			e := es[i%2]
			ran, _, err := e.SweepOnce(ctx)
			if err != nil {
				t.Error(err)
			}
			held, err := e.HoldLease(ctx, "test", time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ran {
				swept++
			}
			if held {
				leased++
			}
		})
		// Within a round the one run that took the lease holds it 4 times (each of its
		// goroutines); the other none.
		if swept != 1 || leased != 4 {
			t.Fatalf("round %d: swept %d times, lease held by %d claims; want 1 and 4", round, swept, leased)
		}
		clock.Advance(time.Hour)
	}
}

// Two processes on PostgreSQL race for the same due messages: each is called once.
func TestSharedPostgres_EachMessageCalledOnce(t *testing.T) {
	ctx := context.Background()
	senders := []*fakeSender{newFakeSender(false), newFakeSender(false)}
	es, clock := pgProcesses(t, senders[0], senders[1])
	created := MustCreateTenant(t, es[0], "acme")
	p := model.Principal{TenantID: created.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	if _, err := es[0].CreateWebhook(ctx, p, model.WebhookInput{URL: "https://hooks.example/a",
		Events: []string{engine.HookEventCreated}}, nil); err != nil {
		t.Fatal(err)
	}
	const messages = 60
	race(messages, func(i int) {
		in := model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: model.NewID()}
		if _, err := es[i%2].IngestEvent(ctx, p, in, func(any) (model.Reply, error) {
			return model.Reply{Status: 201, Body: []byte("{}")}, nil
		}); err != nil {
			t.Error(err)
		}
	})
	clock.Advance(time.Second)
	for _, e := range es {
		if err := e.LoadSchedule(ctx); err != nil {
			t.Fatal(err)
		}
		if e.ScheduledCount() != messages {
			t.Fatalf("a process holds %d messages, want %d", e.ScheduledCount(), messages)
		}
	}
	race(2, func(i int) { es[i].RunDue(ctx) })
	seen := map[string]int{}
	for _, s := range senders {
		for _, c := range s.calls {
			seen[c.id]++
		}
	}
	if len(seen) != messages {
		t.Fatalf("%d messages called, want %d", len(seen), messages)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("message %s called %d times", id, k)
		}
	}
	_ = es[0].View(ctx, func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil || len(refs) != 0 {
			t.Fatalf("outbox after delivery: %d entries, %v", len(refs), err)
		}
		return nil
	})
}

// TestSharedPostgres_SyncBatchReplies: on PostgreSQL a sync batch reads the replies of its
// keys in one query (model.EventRepliesTx); a key met again in the same batch still finds
// the reply its first item wrote, and a key of an earlier batch is a duplicate.
func TestSharedPostgres_SyncBatchReplies(t *testing.T) {
	es, _ := pgProcesses(t, nil)
	e := es[0]
	ct := MustCreateTenant(t, e, "acme")
	key := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermSyncWrite}}
	post := func(keys ...string) model.Batch {
		t.Helper()
		in := model.SyncBatchInput{CapturedAt: "2026-06-09T10:00:00Z"}
		for _, k := range keys {
			in.Events = append(in.Events, model.SyncItemInput{Type: "FIRE", Vertical: "emergency", IdempotencyKey: k})
		}
		reply, err := e.SyncBatch(context.Background(), key, in, nil, syncRender)
		if err != nil {
			t.Fatal(err)
		}
		var b model.Batch
		if err := json.Unmarshal(reply.Body, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := post("k1", "k2", "k1")
	if b.Accepted != 3 || b.Duplicates != 1 || b.Items[2].Status != model.ItemDuplicate ||
		*b.Items[2].EventID != *b.Items[0].EventID {
		t.Fatalf("first batch: %+v", b)
	}
	b2 := post("k2", "k3")
	if b2.Duplicates != 1 || b2.Items[0].Status != model.ItemDuplicate || *b2.Items[0].EventID != *b.Items[1].EventID ||
		b2.Items[1].Status != model.ItemAccepted {
		t.Fatalf("second batch: %+v", b2)
	}
}
