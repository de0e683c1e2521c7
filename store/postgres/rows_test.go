package postgres

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestMergeRows (docs/decisions/0233-multi-row-writes.md): the queued one-row inserts of a
// merging table become multi-row inserts at the place of the first, in powers of two;
// a statement between that names the table, a row's conflict key seen before or another
// tenant's row starts a new statement, so the outcome is that of the statements one after
// the other.
func TestMergeRows(t *testing.T) {
	const reply = `INSERT INTO event_replies (tenant_id, key, status, request_id, created_at, body) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, key) DO UPDATE SET status = excluded.status`
	row := func(key string) []any { return []any{"t", key, 201, "r", nil, []byte("{}")} }
	cases := []struct {
		name  string
		queue func(b *pgx.Batch)
		want  []string // the statements sent: the table and the rows of a merged one, or the statement
	}{
		{"five replies and a write between", func(b *pgx.Batch) {
			for _, k := range []string{"a", "b"} {
				b.Queue(reply, row(k)...)
			}
			b.Queue("INSERT INTO events (tenant_id, id) VALUES ($1, $2)", "t", "e")
			for _, k := range []string{"c", "d", "e"} {
				b.Queue(reply, row(k)...)
			}
		}, []string{"event_replies 4", "event_replies 1", "events"}},
		{"another tenant's reply", func(b *pgx.Batch) {
			b.Queue(reply, row("a")...)
			b.Queue(reply, append([]any{"u"}, row("b")[1:]...)...)
			b.Queue(reply, row("c")...)
		}, []string{"event_replies 2", "event_replies 1"}},
		{"a reply written twice", func(b *pgx.Batch) {
			for _, k := range []string{"a", "b", "a"} {
				b.Queue(reply, row(k)...)
			}
		}, []string{"event_replies 2", "event_replies 1"}},
		{"a statement between names the table", func(b *pgx.Batch) {
			b.Queue(reply, row("a")...)
			b.Queue("DELETE FROM event_replies WHERE tenant_id = $1", "t")
			b.Queue(reply, row("b")...)
		}, []string{"event_replies 1", "DELETE", "event_replies 1"}},
		{"outbox entries, and a table that does not merge between", func(b *pgx.Batch) {
			const entry = `INSERT INTO outbox (tenant_id, id, due_at, leased, doc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, id) DO UPDATE SET due_at = excluded.due_at, leased = excluded.leased, doc = excluded.doc`
			b.Queue(entry, "t", "o1", nil, false, "{}")
			b.Queue("INSERT INTO events (tenant_id, id) VALUES ($1, $2)", "t", "e")
			b.Queue(entry, "t", "o2", nil, false, "{}")
		}, []string{"outbox 2", "events"}},
		{"stream changes, and a write of the events they reference between", func(b *pgx.Batch) {
			change := func(seq int64, event string) []any {
				return []any{"t", seq, "event.created", "events:read", "", nil, nil, event}
			}
			b.Queue(insertChange, change(1, "e")...)
			b.Queue(insertChange, change(2, "e")...)
			b.Queue("INSERT INTO events (tenant_id, id) VALUES ($1, $2)", "t", "f")
			b.Queue(insertChange, change(3, "f")...)
		}, []string{"stream_changes 2", "events", "stream_changes 1"}},
		{"a table that does not merge", func(b *pgx.Batch) {
			b.Queue("INSERT INTO events (tenant_id, id) VALUES ($1, $2)", "t", "e")
			b.Queue("INSERT INTO events (tenant_id, id) VALUES ($1, $2)", "t", "f")
		}, []string{"events", "events"}},
	}
	for _, c := range cases {
		b := &pgx.Batch{}
		c.queue(b)
		var got []string
		for _, q := range mergeRows(b).QueuedQueries {
			switch {
			case strings.HasPrefix(q.SQL, "INSERT INTO event_replies"):
				n := len(q.Arguments) / 6
				if strings.Count(q.SQL, "), (")+1 != n {
					t.Errorf("%s: %d rows of arguments for %q", c.name, n, q.SQL)
				}
				got = append(got, "event_replies "+string(rune('0'+n)))
			case strings.HasPrefix(q.SQL, "INSERT INTO stream_changes"):
				got = append(got, "stream_changes "+string(rune('0'+len(q.Arguments)/8)))
			case strings.HasPrefix(q.SQL, "INSERT INTO outbox"):
				got = append(got, "outbox "+string(rune('0'+len(q.Arguments)/5)))
			case strings.HasPrefix(q.SQL, "INSERT INTO events"):
				got = append(got, "events")
			default:
				got = append(got, strings.Fields(q.SQL)[0])
			}
		}
		if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%s: sent %q, want %q", c.name, got, c.want)
		}
	}
	// The rows keep their order, renumbered.
	b := &pgx.Batch{}
	b.Queue(reply, row("a")...)
	b.Queue(reply, row("b")...)
	q := mergeRows(b).QueuedQueries[0]
	if !strings.Contains(q.SQL, "VALUES ($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)") || q.Arguments[1] != "a" || q.Arguments[7] != "b" {
		t.Errorf("merged: %q %v", q.SQL, q.Arguments)
	}
}
