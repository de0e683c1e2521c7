package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// benchEvents is how many events the retention and compaction benchmarks store:
// FIELDRELAY_BENCH_EVENTS, 100,000 by default (the measure is 1,000,000).
func benchEvents(b *testing.B) int {
	n := 100_000
	if v := os.Getenv("FIELDRELAY_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10_000 {
			b.Fatalf("FIELDRELAY_BENCH_EVENTS=%q: want a number of at least 10000", v)
		}
	}
	return n
}

// fillEvents stores the events numbered from to to-1 (in their idempotency keys): settled,
// about 300 bytes of payload each, with their idempotency replies, 5,000 per transaction
// and one second of the fake clock apart per transaction.
func fillEvents(b *testing.B, e *engine.Engine, clock *model.FakeClock, tenantID string, from, to int) {
	payload := []byte(`{"lat":45.764,"lng":4.8357,"caller_note":"` + fmt.Sprintf("%0260d", 0) + `"}`)
	for start := from; start < to; start += 5000 {
		MustUpdate(b, e, func(tx model.Tx) error {
			for i := start; i < min(start+5000, to); i++ {
				now := model.At(clock.Now())
				ev := &model.Event{ID: model.NewIDAt(now.Time), Type: "FIRE", Priority: "low", Vertical: "emergency",
					IdempotencyKey: fmt.Sprintf("k-%d", i), Payload: payload, Status: model.EventDelivered,
					ChannelSelected: "rest_full", Source: "api", CreatedAt: now, UpdatedAt: now}
				if err := tx.PutEvent(tenantID, ev); err != nil {
					return err
				}
				if err := tx.PutEventReply(tenantID, ev.IdempotencyKey, &model.IdempotencyRecord{Reply: model.Reply{Status: 201,
					Body: []byte(`{"event_id":"` + ev.ID + `"}`)}, CreatedAt: now}); err != nil {
					return err
				}
			}
			return nil
		})
		clock.Advance(time.Second)
	}
}

// BenchmarkSweepRetention: the retention sweep over a bbolt store (fsync on) whose events
// (benchEvents, settled, with their idempotency replies) have all passed events_days:
// events are the records that fill a node's file. Each iteration fills a fresh store,
// moves the fake clock past the retention and times the sweep alone. Reported: events
// deleted per second, the longest transaction and the number of transactions
// (docs/bench.md, "A node that runs for years").
//
//	go test -run '^$' -bench SweepRetention -benchtime 1x ./engine
func BenchmarkSweepRetention(b *testing.B) {
	n := benchEvents(b)
	for range b.N {
		b.StopTimer()
		clock := model.NewFakeClock(epoch)
		e := engine.New(MustOpenDB(b), engine.Options{Clock: clock, Password: cheapPasswords,
			Logger: slog.New(slog.DiscardHandler), Retention: model.Retention{EventsDays: 400}})
		tn := MustCreateTenant(b, e, "alpha").Tenant
		fillEvents(b, e, clock, tn.ID, 0, n)
		clock.Advance(401 * 24 * time.Hour)
		b.StartTimer()

		began := time.Now()
		rep, err := e.SweepRetention(context.Background())
		took := time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Events != n {
			b.Fatalf("sweep: %+v, want %d events", rep, n)
		}
		b.ReportMetric(float64(rep.Events)/took.Seconds(), "events/s")
		b.ReportMetric(float64(rep.LongestTx.Microseconds())/1000, "longest-tx-ms")
		b.ReportMetric(float64(rep.Transactions), "txs")
	}
}

// BenchmarkCompactAfterSweep: a file that grew and shrank. benchEvents events are stored,
// the older half pruned by the retention sweep, and `fieldrelay compact`'s work
// (store.Compact: copy, verify by digest and check, rename) timed on the closed file.
// Reported: the file before and after, and the time.
//
//	FIELDRELAY_BENCH_EVENTS=1000000 go test -run '^$' -bench CompactAfterSweep -benchtime 1x -timeout 30m ./engine
func BenchmarkCompactAfterSweep(b *testing.B) {
	n := benchEvents(b)
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		db := mustOpenDir(b, dir)
		clock := model.NewFakeClock(epoch)
		e := engine.New(db, engine.Options{Clock: clock, Password: cheapPasswords,
			Logger: slog.New(slog.DiscardHandler), Retention: model.Retention{EventsDays: 400}})
		tn := MustCreateTenant(b, e, "alpha").Tenant
		fillEvents(b, e, clock, tn.ID, 0, n/2)
		clock.Advance(200 * 24 * time.Hour)
		fillEvents(b, e, clock, tn.ID, n/2, n)
		clock.Advance(201 * 24 * time.Hour)
		rep, err := e.SweepRetention(context.Background())
		if err != nil || rep.Events != n/2 {
			b.Fatalf("sweep: %+v (%v), want %d events", rep, err, n/2)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		res, err := store.Compact(dir, false, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Before)/(1<<20), "MiB-before")
		b.ReportMetric(float64(res.After)/(1<<20), "MiB-after")
		b.ReportMetric(float64(res.After)/float64(n-n/2), "bytes/kept-event")
	}
}
