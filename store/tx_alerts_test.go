package store

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// A file of schema version 3 keeps the open alerts' index in a bucket of its own: opening
// it moves the index into the alerts bucket, where the open alerts are found and listed as
// before, and drops the old bucket.
func TestOpenAlertsMovedInside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openInternal(t, dir)
	tn := &model.Tenant{ID: model.NewID(), Slug: "acme", Name: "Acme"}
	open := &model.Alert{ID: model.NewID(), Kind: model.AlertEventUndispatched, Key: model.AlertKey(model.AlertEventUndispatched, "e1"),
		Priority: model.PriorityHigh, Message: "m", Status: model.AlertOpen}
	closed := &model.Alert{ID: model.NewID(), Kind: model.AlertEventUndispatched, Key: model.AlertKey(model.AlertEventUndispatched, "e2"),
		Priority: model.PriorityHigh, Message: "m", Status: model.AlertClosed}
	if err := db.Update(ctx, func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
		t.Fatal(err)
	}
	// Version 3's layout, written by hand: the records by id, the index in alerts_open.
	tk, _ := idKey(tn.ID)
	err := db.bolt.Update(func(btx *bolt.Tx) error {
		tb := btx.Bucket(bucketTenantRoot).Bucket(tk)
		for _, a := range []*model.Alert{open, closed} {
			k, _ := idKey(a.ID)
			if err := putJSON(tb.Bucket(tbAlerts), k, a); err != nil {
				return err
			}
		}
		old, err := tb.CreateBucket(tbAlertsOpenOld)
		if err != nil {
			return err
		}
		ok, _ := idKey(open.ID)
		if err := old.Put([]byte(open.Key), ok); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(metaSchemaVersion, []byte("3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openInternal(t, dir)
	if err := db.View(ctx, func(tx model.Tx) error {
		if a, err := tx.OpenAlert(tn.ID, open.Key); err != nil || a == nil || a.ID != open.ID {
			t.Errorf("OpenAlert after the move = %+v, %v; want %s", a, err, open.ID)
		}
		if a, err := tx.OpenAlert(tn.ID, closed.Key); err != nil || a != nil {
			t.Errorf("OpenAlert of a closed alert = %+v, %v; want none", a, err)
		}
		list, _, err := tx.Alerts(tn.ID, model.AlertFilter{}, model.Page{Limit: 10})
		if err != nil || len(list) != 1 || list[0].ID != open.ID {
			t.Errorf("open alerts after the move = %+v, %v; want %s alone", list, err, open.ID)
		}
		all, _, err := tx.Alerts(tn.ID, model.AlertFilter{Status: "all"}, model.Page{Limit: 10})
		if err != nil || len(all) != 2 {
			t.Errorf("all alerts after the move = %+v, %v; want both", all, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err = db.bolt.View(func(btx *bolt.Tx) error {
		if btx.Bucket(bucketTenantRoot).Bucket(tk).Bucket(tbAlertsOpenOld) != nil {
			t.Error("the tenant still has its alerts_open bucket")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An alert is stored packed (schema version 5): the record of a typical event_undispatched
// alert is under a third of its JSON, and reads back as written, open or closed.
func TestAlertRecordPacked(t *testing.T) {
	at := model.At(time.Date(2026, 11, 28, 11, 27, 16, 809e6, time.UTC))
	event := model.NewID()
	for _, a := range []*model.Alert{
		{ID: model.NewID(), Kind: model.AlertEventUndispatched, Key: model.AlertKey(model.AlertEventUndispatched, event),
			Priority: model.PriorityHigh, Message: "High event not dispatched: Order.created", EventID: &event,
			Status: model.AlertOpen, RaisedAt: at, UpdatedAt: at},
		{ID: model.NewID(), Kind: model.AlertMissionUnacknowledged, Key: "mission_unacknowledged:m", Priority: "critical",
			Message: "Not acknowledged in time: Alpha on <fire> & smoke", EventID: &event, Status: model.AlertClosed,
			RaisedAt: at, AckedAt: &at, ClosedAt: &at, UpdatedAt: at},
	} {
		raw := encodeAlert(a)
		text := a.AppendJSON(nil)
		if raw[0] != alertPacked {
			t.Fatalf("%s not packed", a.Kind)
		}
		if a.Kind == model.AlertEventUndispatched && 3*len(raw) > len(text) {
			t.Errorf("the record of an undispatched alert is %d bytes for %d of JSON, want under a third", len(raw), len(text))
		}
		var got model.Alert
		if err := decodeAlert(nil, raw, &got); err != nil {
			t.Fatal(err)
		}
		if again := got.AppendJSON(nil); !bytes.Equal(again, text) {
			t.Fatalf("read back:\n got %s\nwant %s", again, text)
		}
	}
}
