package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testRetention: the prunes delete a tenant's records older than the cut, oldest first and
// at most limit per call, and nothing else: newer records, other tenants', usage counters
// and the ledger stay; a tenant's retention settings are stored with it.
func testRetention(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	w1, w2 := model.NewIDAt(at(0)), model.NewIDAt(at(0))
	var batches []string
	attempts := map[string][]string{}
	f.update(func(tx model.Tx) error {
		for i := range 10 {
			sb := &model.Batch{ID: model.NewIDAt(at(10 * i)), ReceivedAt: model.At(at(10 * i))}
			batches = append(batches, sb.ID)
			if err := tx.PutSyncBatch(a.ID, sb); err != nil {
				return err
			}
		}
		for i := range 6 {
			for _, w := range []string{w1, w2} {
				at := &model.DeliveryAttempt{ID: model.NewIDAt(at(10 * i)), WebhookID: w, Attempt: i + 1, Status: "failed", At: model.At(at(10 * i))}
				attempts[w] = append(attempts[w], at.ID)
				if err := tx.PutDeliveryAttempt(a.ID, at); err != nil {
					return err
				}
			}
		}
		if err := tx.PutSyncBatch(b.ID, &model.Batch{ID: model.NewIDAt(at(0)), ReceivedAt: model.At(at(0))}); err != nil {
			return err
		}
		if err := tx.PutDeliveryAttempt(b.ID, &model.DeliveryAttempt{ID: model.NewIDAt(at(0)), WebhookID: w1, At: model.At(at(0))}); err != nil {
			return err
		}
		if err := tx.AddUsage(a.ID, "2026-06-09", "events", 7); err != nil {
			return err
		}
		return tx.PutLedgerEntry(a.ID, &model.LedgerEntry{ID: model.NewIDAt(at(0)), Kind: "dispatch", At: model.At(at(0))})
	})
	prune := func(name string, fn func(tx model.Tx) (int, error), want int) {
		t.Helper()
		var n int
		f.update(func(tx model.Tx) (err error) { n, err = fn(tx); return err })
		if n != want {
			t.Fatalf("%s deleted %d, want %d", name, n, want)
		}
	}
	// Batches before at(50): the five oldest, three then two.
	for _, want := range []int{3, 2, 0} {
		prune("PruneSyncBatches", func(tx model.Tx) (int, error) { return tx.PruneSyncBatches(a.ID, at(50), 3) }, want)
	}
	// Attempts before at(30): three per webhook, four then two.
	for _, want := range []int{4, 2, 0} {
		prune("PruneDeliveryAttempts", func(tx model.Tx) (int, error) { return tx.PruneDeliveryAttempts(a.ID, at(30), 4) }, want)
	}
	f.view(func(tx model.Tx) error {
		for i, id := range batches {
			_, err := tx.SyncBatch(a.ID, id)
			if i < 5 {
				assertKind(t, err, model.KindNotFound)
			} else if err != nil {
				t.Fatalf("batch %d (kept) after the prune: %v", i, err)
			}
		}
		for _, w := range []string{w1, w2} {
			list, _, err := tx.DeliveryAttempts(a.ID, w, model.Page{})
			if err != nil {
				return err
			}
			var got []string
			for _, at := range list {
				got = append(got, at.ID)
			}
			want := slices.Clone(attempts[w][3:])
			slices.Reverse(want)
			if !slices.Equal(got, want) {
				t.Fatalf("attempts of a webhook after the prune = %v, want %v", got, want)
			}
		}
		if list, _, err := tx.DeliveryAttempts(b.ID, w1, model.Page{}); err != nil || len(list) != 1 {
			t.Fatalf("another tenant's attempts after the prune: %v %v", list, err)
		}
		if c, err := tx.UsageCounters(a.ID, "2026-06-01", "2026-06-30"); err != nil || len(c) != 1 || c[0].N != 7 {
			t.Fatalf("usage after the prune: %v %v", c, err)
		}
		if n, err := tx.LedgerCount(a.ID, "dispatch", at(-1), at(1)); err != nil || n != 1 {
			t.Fatalf("ledger after the prune: %d %v", n, err)
		}
		return nil
	})
	// The other tenant's batch was left: it is there to prune.
	prune("PruneSyncBatches of the other tenant", func(tx model.Tx) (int, error) { return tx.PruneSyncBatches(b.ID, at(1), 10) }, 1)
	for _, fn := range []func(tx model.Tx) error{
		func(tx model.Tx) error { _, err := tx.PruneSyncBatches(model.NewID(), at(1), 1); return err },
		func(tx model.Tx) error { _, err := tx.PruneDeliveryAttempts(model.NewID(), at(1), 1); return err },
	} {
		assertKind(t, f.updateErr(fn), model.KindNotFound)
	}

	// Events: walked oldest first, limit at a time, from a cursor; those keep keeps stay;
	// a pruned event's idempotency reply goes with it.
	var evs []*model.Event
	f.update(func(tx model.Tx) error {
		for i := range 6 {
			ev := &model.Event{ID: model.NewIDAt(at(10 * i)), Type: "FIRE", Priority: "low", Vertical: "emergency",
				IdempotencyKey: fmt.Sprintf("k%d", i), Status: model.EventDelivered, ChannelSelected: "rest_full",
				Source: "api", CreatedAt: model.At(at(10 * i)), UpdatedAt: model.At(at(10 * i))}
			if i == 1 {
				ev.Status = model.EventPending
			}
			evs = append(evs, ev)
			if err := tx.PutEvent(a.ID, ev); err != nil {
				return err
			}
			if err := tx.PutEventReply(a.ID, ev.IdempotencyKey, &model.IdempotencyRecord{Reply: model.Reply{Status: 201,
				Body: []byte(`{"event_id":"` + ev.ID + `"}`)}, CreatedAt: ev.CreatedAt}); err != nil {
				return err
			}
		}
		return nil
	})
	keepPending := func(ev *model.Event) (bool, error) { return ev.Status == model.EventPending, nil }
	after := ""
	for i, want := range []struct {
		n    int
		next string
	}{{1, evs[1].ID}, {2, evs[3].ID}, {0, ""}} {
		var n int
		f.update(func(tx model.Tx) (err error) {
			n, after, err = tx.PruneEvents(a.ID, after, at(40), 2, keepPending)
			return err
		})
		if n != want.n || after != want.next {
			t.Fatalf("PruneEvents call %d: %d deleted, next %q; want %d, %q", i, n, after, want.n, want.next)
		}
	}
	f.view(func(tx model.Tx) error {
		for i, ev := range evs {
			pruned := i == 0 || i == 2 || i == 3
			_, err := tx.Event(a.ID, ev.ID)
			reply, rerr := tx.EventReply(a.ID, ev.IdempotencyKey)
			if rerr != nil {
				return rerr
			}
			if pruned {
				assertKind(t, err, model.KindNotFound)
				if reply != nil {
					t.Fatalf("event %d pruned, its reply kept", i)
				}
			} else if err != nil || reply == nil {
				t.Fatalf("event %d (kept) after the prune: %v, reply %v", i, err, reply)
			}
		}
		return nil
	})
	assertKind(t, f.updateErr(func(tx model.Tx) error {
		_, _, err := tx.PruneEvents(model.NewID(), "", at(1), 1, keepPending)
		return err
	}), model.KindNotFound)

	// Missions: the same walk; a pruned mission leaves the by-event and by-team indexes.
	ev := evs[4]
	team := model.NewID()
	var ms []*model.Mission
	f.update(func(tx model.Tx) error {
		for i := range 3 {
			m := &model.Mission{ID: model.NewIDAt(at(10 * i)), EventID: ev.ID, TeamID: team, Status: model.MissionCompleted,
				CreatedAt: model.At(at(10 * i)), UpdatedAt: model.At(at(10 * i))}
			if i == 1 {
				m.Status = model.MissionOnSite
			}
			ms = append(ms, m)
			if err := tx.PutMission(a.ID, m); err != nil {
				return err
			}
		}
		return nil
	})
	keepActive := func(m *model.Mission) (bool, error) { return m.Status != model.MissionCompleted, nil }
	var n int
	f.update(func(tx model.Tx) (err error) {
		n, after, err = tx.PruneMissions(a.ID, "", at(100), 10, keepActive)
		return err
	})
	if n != 2 || after != "" {
		t.Fatalf("PruneMissions: %d deleted, next %q; want 2, \"\"", n, after)
	}
	f.view(func(tx model.Tx) error {
		left, err := tx.MissionsOfEvent(a.ID, ev.ID)
		if err != nil || len(left) != 1 || left[0].ID != ms[1].ID {
			t.Fatalf("missions of the event after the prune: %v %v", left, err)
		}
		list, _, err := tx.Missions(a.ID, model.MissionFilter{TeamIDs: []string{team}}, model.Page{})
		if err != nil || len(list) != 1 || list[0].ID != ms[1].ID {
			t.Fatalf("missions of the team after the prune: %v %v", list, err)
		}
		_, err = tx.Mission(a.ID, ms[0].ID)
		assertKind(t, err, model.KindNotFound)
		return nil
	})

	// A tenant's own settings are kept with it.
	a.Retention = &model.Retention{SyncBatchesDays: 7, DeliveryLogDays: 90, EventsDays: 800, MissionsDays: 3000}
	f.update(func(tx model.Tx) error { return tx.PutTenant(a) })
	f.view(func(tx model.Tx) error {
		got, err := tx.Tenant(a.ID)
		if err != nil || got.Retention == nil || *got.Retention != *a.Retention {
			t.Fatalf("Tenant with retention = %+v, %v", got, err)
		}
		return nil
	})
}
