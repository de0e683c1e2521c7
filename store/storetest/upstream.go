package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func testUpstream(t *testing.T, open Opener) {
	t.Run("Config", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.tenant("charlie")
		f.view(func(tx model.Tx) error {
			_, err := tx.Upstream(a.ID)
			assertKind(t, err, model.KindNotFound)
			if got, err := tx.UpstreamTenants(); err != nil || len(got) != 0 {
				t.Fatalf("UpstreamTenants with none = %v, %v", got, err)
			}
			return nil
		})
		ca := &model.UpstreamConfig{TenantID: a.ID, URL: "https://central.example", KeyCipher: "cipher", KeyPrefix: "frk_abcd",
			Generation: 1, Base: 4, AckedThrough: 2, LastAttemptAt: model.TimePtr(at(1)), LastError: "refused",
			Failures: 2, Rejected: 1, CreatedAt: model.At(at(0))}
		cb := &model.UpstreamConfig{TenantID: b.ID, URL: "https://other.example", Paused: true, CreatedAt: model.At(at(0))}
		f.update(func(tx model.Tx) error {
			if err := tx.PutUpstream(ca); err != nil {
				return err
			}
			return tx.PutUpstream(cb)
		})
		ca.Failures, ca.LastSuccessAt, ca.DeviceID = 0, model.TimePtr(at(5)), model.NewID()
		f.update(func(tx model.Tx) error { return tx.PutUpstream(ca) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Upstream(a.ID)
			if err != nil || got.URL != ca.URL || got.KeyCipher != "cipher" || got.Generation != 1 || got.Base != 4 ||
				got.AckedThrough != 2 || got.Failures != 0 || got.LastSuccessAt == nil || !got.LastSuccessAt.Equal(at(5)) ||
				got.DeviceID != ca.DeviceID || got.LastError != "refused" || got.Rejected != 1 {
				t.Fatalf("Upstream = %+v, %v", got, err)
			}
			if got, err := tx.Upstream(b.ID); err != nil || !got.Paused {
				t.Fatalf("Upstream(b) = %+v, %v", got, err)
			}
			tenants, err := tx.UpstreamTenants()
			slices.Sort(tenants)
			want := []string{a.ID, b.ID}
			slices.Sort(want)
			if err != nil || !slices.Equal(tenants, want) {
				t.Fatalf("UpstreamTenants = %v, %v; want %v", tenants, err, want)
			}
			for _, id := range []string{model.NewID(), "bad"} {
				_, err := tx.Upstream(id)
				assertKind(t, err, model.KindNotFound)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error {
			return tx.PutUpstream(&model.UpstreamConfig{TenantID: model.NewID(), URL: "https://x.example"})
		})
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("ChangeLog", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.view(func(tx model.Tx) error {
			if end, err := tx.ChangeLogEnd(a.ID); err != nil || end != 0 {
				t.Fatalf("ChangeLogEnd of an empty log = %d, %v", end, err)
			}
			if got, err := tx.Changes(a.ID, 0, 10); err != nil || len(got) != 0 {
				t.Fatalf("Changes of an empty log = %+v, %v", got, err)
			}
			return nil
		})
		kinds := model.ChangeKinds // every kind a change log holds round-trips
		var want []model.LogChange
		f.update(func(tx model.Tx) error {
			for i := range 5 {
				c := model.LogChange{Kind: kinds[i%len(kinds)], ID: model.NewID(), At: model.At(at(i))}
				seq, err := tx.AppendChange(a.ID, c)
				if err != nil {
					return err
				}
				if seq != int64(i+1) {
					t.Fatalf("AppendChange #%d = %d, want %d (contiguous from 1)", i, seq, i+1)
				}
				c.Seq = seq
				want = append(want, c)
			}
			seq, err := tx.AppendChange(b.ID, model.LogChange{Kind: model.ChangeEvent, ID: model.NewID(), At: model.At(at(0))})
			if err == nil && seq != 1 {
				t.Fatalf("another tenant's first change = %d, want 1 (a log per tenant)", seq)
			}
			return err
		})
		changeStr := func(cs []model.LogChange) string {
			return ids(cs, func(c model.LogChange) string {
				return fmt.Sprintf("%d %s %s %d", c.Seq, c.Kind, c.ID, c.At.UnixMilli())
			})
		}
		f.view(func(tx model.Tx) error {
			for _, c := range []struct {
				after      int64
				limit      int
				from, till int // want[from:till]
			}{{0, 10, 0, 5}, {0, 2, 0, 2}, {2, 2, 2, 4}, {4, 10, 4, 5}, {5, 10, 5, 5}} {
				got, err := tx.Changes(a.ID, c.after, c.limit)
				if err != nil || changeStr(got) != changeStr(want[c.from:c.till]) {
					t.Errorf("Changes(after %d, limit %d) = %s, %v; want %s", c.after, c.limit, changeStr(got), err, changeStr(want[c.from:c.till]))
				}
			}
			if end, err := tx.ChangeLogEnd(a.ID); err != nil || end != 5 {
				t.Fatalf("ChangeLogEnd = %d, %v; want 5", end, err)
			}
			return nil
		})
		// Trimmed: the changes up to 3 are gone, the end stays, numbers are not reused.
		f.update(func(tx model.Tx) error { return tx.TrimChanges(a.ID, 3) })
		f.view(func(tx model.Tx) error {
			if got, err := tx.Changes(a.ID, 0, 10); err != nil || changeStr(got) != changeStr(want[3:]) {
				t.Fatalf("Changes after a trim = %s, %v; want %s", changeStr(got), err, changeStr(want[3:]))
			}
			if end, err := tx.ChangeLogEnd(a.ID); err != nil || end != 5 {
				t.Fatalf("ChangeLogEnd after a trim = %d, %v; want 5", end, err)
			}
			return nil
		})
		f.update(func(tx model.Tx) error { return tx.TrimChanges(a.ID, 5) })
		f.update(func(tx model.Tx) error {
			seq, err := tx.AppendChange(a.ID, model.LogChange{Kind: model.ChangeMission, ID: model.NewID(), At: model.At(at(9))})
			if err == nil && seq != 6 {
				t.Fatalf("AppendChange after trimming everything = %d, want 6 (never reused)", seq)
			}
			return err
		})
		// A rolled back append gives its number back: the log stays contiguous.
		_ = f.updateErr(func(tx model.Tx) error {
			if _, err := tx.AppendChange(a.ID, model.LogChange{Kind: model.ChangeEvent, ID: model.NewID(), At: model.At(at(10))}); err != nil {
				return err
			}
			return fmt.Errorf("roll back")
		})
		f.view(func(tx model.Tx) error {
			if end, err := tx.ChangeLogEnd(a.ID); err != nil || end != 6 {
				t.Fatalf("ChangeLogEnd after a rolled back append = %d, %v; want 6", end, err)
			}
			got, err := tx.Changes(a.ID, 0, 10)
			if err != nil || len(got) != 1 || got[0].Seq != 6 || got[0].Kind != model.ChangeMission {
				t.Fatalf("Changes = %+v, %v", got, err)
			}
			if end, err := tx.ChangeLogEnd(b.ID); err != nil || end != 1 {
				t.Fatalf("another tenant's ChangeLogEnd = %d, %v; want 1", end, err)
			}
			return nil
		})
		f.view(func(tx model.Tx) error {
			_, err := tx.Changes(model.NewID(), 0, 10)
			assertKind(t, err, model.KindNotFound)
			_, err = tx.ChangeLogEnd(model.NewID())
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		for _, fn := range []func(tx model.Tx) error{
			func(tx model.Tx) error { return tx.TrimChanges(model.NewID(), 1) },
			func(tx model.Tx) error {
				_, err := tx.AppendChange(model.NewID(), model.LogChange{Kind: model.ChangeEvent, ID: model.NewID()})
				return err
			},
		} {
			assertKind(t, f.updateErr(fn), model.KindNotFound)
		}
	})
}
