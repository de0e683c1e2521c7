package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func testSyncBatches(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	dev := model.NewID()
	sb := &model.Batch{ID: model.NewIDAt(at(1)), DeviceID: &dev, CapturedAt: model.At(at(0)), ReceivedAt: model.At(at(1)),
		Accepted: 2, Duplicates: 1, Rejected: 1, Items: []model.BatchItem{
			{Index: 0, IdempotencyKey: "k0", Status: "accepted", EventID: strp(model.NewID())},
			{Index: 1, IdempotencyKey: "k1", Status: "rejected", Error: &model.ItemError{Code: model.KindValidation, Message: "bad"}},
		}}
	f.update(func(tx model.Tx) error { return tx.PutSyncBatch(a.ID, sb) })
	f.view(func(tx model.Tx) error {
		got, err := tx.SyncBatch(a.ID, sb.ID)
		if err != nil || got.DeviceID == nil || *got.DeviceID != dev || got.Accepted != 2 || got.Duplicates != 1 ||
			got.Rejected != 1 || len(got.Items) != 2 || got.Items[1].Error == nil || got.Items[1].Error.Code != model.KindValidation ||
			!got.ReceivedAt.Equal(at(1)) {
			t.Fatalf("SyncBatch = %+v, %v", got, err)
		}
		for _, c := range [][2]string{{b.ID, sb.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), sb.ID}} {
			_, err := tx.SyncBatch(c[0], c[1])
			assertKind(t, err, model.KindNotFound)
		}
		return nil
	})
	err := f.updateErr(func(tx model.Tx) error { return tx.PutSyncBatch(model.NewID(), sb) })
	assertKind(t, err, model.KindNotFound)
}

func testUsage(t *testing.T, open Opener) {
	t.Run("Counters", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.update(func(tx model.Tx) error {
			for _, c := range []struct {
				day, metric string
				n           uint64
			}{
				{"2026-06-09", "events", 3}, {"2026-06-09", "events", 2}, {"2026-06-09", "dispatches", 1},
				{"2026-05-31", "events", 7}, {"2026-06-10", "sms", 4}, {"2026-07-01", "events", 1},
				{"2026-06-11", "events", 0}, {"2026-06-12", "webhooks", 1 << 40},
			} {
				if err := tx.AddUsage(a.ID, c.day, c.metric, c.n); err != nil {
					return err
				}
			}
			return tx.AddUsage(b.ID, "2026-06-09", "events", 100)
		})
		counters := func(from, to string) string {
			var got []model.UsageCounter
			f.view(func(tx model.Tx) (err error) {
				got, err = tx.UsageCounters(a.ID, from, to)
				return err
			})
			return ids(got, func(c model.UsageCounter) string { return fmt.Sprintf("%s %s %d", c.Day, c.Metric, c.N) })
		}
		for _, c := range []struct{ from, to, want string }{
			// One metric a day here; days with two are checked below. A zero counter is not
			// listed.
			{"2026-06-10", "2026-06-30", "2026-06-10 sms 4,2026-06-12 webhooks 1099511627776"},
			{"2026-05-31", "2026-05-31", "2026-05-31 events 7"},
			{"2026-06-13", "2026-06-30", ""},
			{"2026-06-10", "2026-06-10", "2026-06-10 sms 4"},
			{"2026-07-01", "2026-12-31", "2026-07-01 events 1"},
		} {
			if got := counters(c.from, c.to); got != c.want {
				t.Errorf("UsageCounters(%s, %s) = %s; want %s", c.from, c.to, got, c.want)
			}
		}
		// Within a day the order is the store's; across days it is day order.
		for _, c := range []struct{ from, to, want string }{
			{"2026-06-01", "2026-06-09", "2026-06-09 dispatches 1,2026-06-09 events 5"},
			{"2026-01-01", "2026-12-31", "2026-05-31 events 7,2026-06-09 dispatches 1,2026-06-09 events 5," +
				"2026-06-10 sms 4,2026-06-12 webhooks 1099511627776,2026-07-01 events 1"},
		} {
			var got []model.UsageCounter
			f.view(func(tx model.Tx) (err error) {
				got, err = tx.UsageCounters(a.ID, c.from, c.to)
				return err
			})
			if !slices.IsSortedFunc(got, func(x, y model.UsageCounter) int { return strings.Compare(x.Day, y.Day) }) {
				t.Errorf("UsageCounters(%s, %s) = %+v; want day order", c.from, c.to, got)
			}
			slices.SortFunc(got, func(x, y model.UsageCounter) int {
				return strings.Compare(x.Day+" "+x.Metric, y.Day+" "+y.Metric)
			})
			if s := ids(got, func(c model.UsageCounter) string { return fmt.Sprintf("%s %s %d", c.Day, c.Metric, c.N) }); s != c.want {
				t.Errorf("UsageCounters(%s, %s) = %s; want %s", c.from, c.to, s, c.want)
			}
		}
		f.view(func(tx model.Tx) error {
			_, err := tx.UsageCounters(model.NewID(), "2026-01-01", "2026-12-31")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.AddUsage(model.NewID(), "2026-06-09", "events", 1) })
		assertKind(t, err, model.KindNotFound)
		// A transaction reads the counters it added.
		f.update(func(tx model.Tx) error {
			for range 2 {
				if err := tx.AddUsage(b.ID, "2026-06-09", "events", 1); err != nil {
					return err
				}
			}
			got, err := tx.UsageCounters(b.ID, "2026-06-09", "2026-06-09")
			if err != nil {
				return err
			}
			if s := ids(got, func(c model.UsageCounter) string { return fmt.Sprintf("%s %s %d", c.Day, c.Metric, c.N) }); s != "2026-06-09 events 102" {
				t.Errorf("UsageCounters within the transaction that added to them = %s; want 2026-06-09 events 102", s)
			}
			return tx.AddUsage(b.ID, "2026-06-09", "events", 1)
		})
		f.view(func(tx model.Tx) error {
			got, err := tx.UsageCounters(b.ID, "2026-06-09", "2026-06-09")
			if len(got) != 1 || got[0].N != 103 {
				t.Errorf("UsageCounters after it committed = %+v, %v; want 103 events", got, err)
			}
			return nil
		})
	})
	t.Run("Ledger", func(t *testing.T) {
		// LedgerCount counts the entries of a kind in [from, to).
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.update(func(tx model.Tx) error {
			for i, kind := range []string{"dispatch", "dispatch", "other", "dispatch", "dispatch"} {
				e := &model.LedgerEntry{ID: model.NewIDAt(at(i * 10)), Kind: kind, DispatchID: model.NewID(),
					MissionID: model.NewID(), EventID: model.NewID(), TeamID: model.NewID(), At: model.At(at(i * 10))}
				if err := tx.PutLedgerEntry(a.ID, e); err != nil {
					return err
				}
			}
			return tx.PutLedgerEntry(b.ID, &model.LedgerEntry{ID: model.NewIDAt(at(5)), Kind: "dispatch", At: model.At(at(5))})
		})
		f.view(func(tx model.Tx) error {
			for _, c := range []struct {
				kind     string
				from, to int
				want     int
			}{{"dispatch", 0, 100, 4}, {"dispatch", 0, 40, 3}, {"dispatch", 10, 30, 1}, {"dispatch", 10, 31, 2},
				{"other", 0, 100, 1}, {"none", 0, 100, 0}, {"dispatch", 41, 100, 0}, {"dispatch", 20, 20, 0}} {
				if n, err := tx.LedgerCount(a.ID, c.kind, at(c.from), at(c.to)); err != nil || n != c.want {
					t.Errorf("LedgerCount(%s, [%d, %d)) = %d, %v; want %d", c.kind, c.from, c.to, n, err, c.want)
				}
			}
			_, err := tx.LedgerCount(model.NewID(), "dispatch", at(0), at(100))
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error {
			return tx.PutLedgerEntry(model.NewID(), &model.LedgerEntry{ID: model.NewID(), Kind: "dispatch", At: model.At(at(1))})
		})
		assertKind(t, err, model.KindNotFound)
	})
}
