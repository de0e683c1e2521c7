package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// recorder is a pgx tracer that keeps the statements sent while it records, and counts
// the round trips they took (a statement of its own, or a pipeline of them).
type recorder struct {
	mu    sync.Mutex
	on    bool
	stmts []recorded
	trips int
}

type recorded struct {
	sql  string
	args []any
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.stmts = append(r.stmts, recorded{d.SQL, d.Args})
		r.trips++
	}
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart, TraceBatchQuery and TraceBatchEnd see the statements sent together
// (tx.write's pipeline).
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.trips++
	}
	return ctx
}

func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.stmts = append(r.stmts, recorded{d.SQL, d.Args})
	}
}

func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// record runs fn and returns the statements it sent.
func (r *recorder) record(fn func()) []recorded {
	r.mu.Lock()
	r.on, r.stmts, r.trips = true, nil, 0
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.stmts
}

// TestCitusRouting (make citus-test) reports, from Citus's EXPLAIN, which statements of an
// ingest, a dispatch and a mission move go to one shard, and fails when a statement of a
// tenant's record goes to several (docs/decisions/0240-citus-distribution.md). Skipped
// off Citus.
func TestCitusRouting(t *testing.T) {
	if !pgtest.Citus() {
		t.Skip("not on Citus: make citus-test runs it (PGTEST_CITUS=1)")
	}
	url := pgtest.URL(t)
	rec := &recorder{}
	db, err := postgres.Open(context.Background(), url, postgres.Options{SecretKey: pgtest.SecretKey(), Tracer: rec, ListenURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tn := model.NewID()
	now := time.Now()
	team := &model.Team{ID: model.NewID(), Name: "Engine 1", Status: "available", Verticals: []string{"emergency"}}
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme-routing", Status: "active"}); err != nil {
			return err
		}
		return tx.PutTeam(tn, team)
	})
	ev := &model.Event{ID: model.NewIDAt(now), Type: "fire", Priority: model.PriorityHigh, Vertical: "emergency",
		Payload: json.RawMessage(`{"floor":3}`), Status: model.EventPending, ChannelsAttempted: []string{},
		Source: "api", CreatedAt: model.At(now), UpdatedAt: model.At(now)}
	change := func(name string) model.Change {
		return model.Change{Name: name, Perm: model.PermEventsRead, Data: json.RawMessage(`{}`), At: model.At(now)}
	}
	m := &model.Mission{ID: model.NewIDAt(now), EventID: ev.ID, TeamID: team.ID, Status: model.MissionCreated,
		Vertical: "emergency", Priority: "high", DispatchedAt: model.At(now), DispatchID: model.NewID(),
		DispatchedBy: model.NilID, CreatedAt: model.At(now), UpdatedAt: model.At(now)}
	cases := []struct {
		name  string
		reads model.BatchReads
		fn    func(tx model.Tx) error
	}{
		// An ingest declares its reply's key: the group reads it with the tenant's lock
		// (docs/decisions/0231-group-reads.md).
		{"ingest", model.BatchReads{EventReplyKey: "key-1"}, func(tx model.Tx) error {
			if _, err := tx.EventReply(tn, "key-1"); err != nil {
				return err
			}
			if err := tx.PutEvent(tn, ev); err != nil {
				return err
			}
			reply := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"event_id":"x"}`)}, CreatedAt: model.At(now)}
			if err := tx.PutEventReply(tn, "key-1", reply); err != nil {
				return err
			}
			// A second reply: the two go out as one multi-row insert
			// (docs/decisions/0233-multi-row-writes.md).
			if err := tx.PutEventReply(tn, "key-2", reply); err != nil {
				return err
			}
			o := &model.OutboxEntry{ID: model.NewID(), TenantID: tn, Kind: model.OutboxWebhook, WebhookID: model.NewID(),
				Name: "event.created", Body: json.RawMessage(`{}`), DueAt: model.At(now), CreatedAt: model.At(now)}
			if err := tx.PutOutboxEntry(o); err != nil {
				return err
			}
			if err := tx.AddUsage(tn, now.UTC().Format("2006-01-02"), "events.priority.high", 1); err != nil {
				return err
			}
			return db.AppendChange(tx, tn, change("event.created"))
		}},
		{"dispatch", model.BatchReads{}, func(tx model.Tx) error {
			if _, err := tx.Event(tn, ev.ID); err != nil {
				return err
			}
			if _, err := tx.Team(tn, team.ID); err != nil {
				return err
			}
			if err := tx.PutMission(tn, m); err != nil {
				return err
			}
			d := &model.Dispatch{ID: m.DispatchID, TenantID: tn, EventID: ev.ID, TeamID: team.ID,
				DispatchedBy: model.NilID, DispatchedAt: model.At(now), MissionID: m.ID}
			if err := tx.PutDispatch(tn, d); err != nil {
				return err
			}
			ev.Status = model.EventDelivered
			if err := tx.PutEvent(tn, ev); err != nil {
				return err
			}
			return db.AppendChange(tx, tn, change("mission.created"))
		}},
		{"mission move", model.BatchReads{}, func(tx model.Tx) error {
			got, err := tx.Mission(tn, m.ID)
			if err != nil {
				return err
			}
			got.Status = model.MissionAck
			if err := tx.PutMission(tn, got); err != nil {
				return err
			}
			if _, err := tx.AppendDown(tn, model.DownChange{Kind: model.DownMission, Key: m.ID, At: model.At(now)}); err != nil {
				return err
			}
			return db.AppendChange(tx, tn, change("mission.updated"))
		}},
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var report strings.Builder
	for _, c := range cases {
		stmts := rec.record(func() {
			if err := db.Batch(model.WithBatchReads(ctx, c.reads), tn, c.fn); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		})
		fmt.Fprintf(&report, "\n%s: %d statements\n", c.name, len(stmts))
		for _, s := range stmts {
			if strings.HasPrefix(s.sql, "begin") || s.sql == "commit" {
				continue
			}
			route, err := explain(ctx, conn, s)
			if err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					err = fmt.Errorf("%w (%s %s)", err, pe.Detail, pe.Hint)
				}
				t.Errorf("%s: EXPLAIN %s: %v", c.name, oneLine(s.sql), err)
				continue
			}
			fmt.Fprintf(&report, "  %-14s %s\n", route, oneLine(s.sql))
			if route != "one shard" && route != "coordinator" {
				t.Errorf("%s: not routed to one shard (%s): %s", c.name, route, oneLine(s.sql))
			}
		}
	}
	t.Log(report.String())
}

// explain classifies a statement by its Citus plan: one shard (a router task), the
// coordinator alone (no distributed table), through the coordinator (an INSERT … SELECT
// whose rows the coordinator gathers first), or several shards.
func explain(ctx context.Context, conn *pgx.Conn, s recorded) (string, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The values as literals (pgx's simple protocol): Citus prunes shards by them, and
	// plans no INSERT … SELECT with parameters in an EXPLAIN.
	rows, err := tx.Query(ctx, "EXPLAIN "+s.sql, append([]any{pgx.QueryExecModeSimpleProtocol}, s.args...)...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	plan := strings.Join(lines, "\n")
	switch {
	case strings.Contains(plan, "pull to coordinator") || strings.Contains(plan, "repartition"):
		return "via coordinator", nil
	case !strings.Contains(plan, "Citus"):
		return "coordinator", nil
	case strings.Contains(plan, "Task Count: 1") && !strings.Contains(plan, "Task Count: 4"):
		return "one shard", nil // a reference table's write too: one task, on every node
	default:
		return "several shards", nil
	}
}

// oneLine squeezes a statement's white space, for the report.
func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	return s
}
