package store

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"
)

// fullOutbox has every field set, so that a field added to model.OutboxEntry and left out
// of the binary form fails TestOutboxCodec_EveryField.
func fullOutbox() *model.OutboxEntry {
	at := func(d time.Duration) model.Time {
		return model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC).Add(d))
	}
	return &model.OutboxEntry{ID: "01a2193a-0fca-7001-a0f0-c37090f00ec1", TenantID: "01a2193a-0fca-7000-9f5d-298c93139d91",
		Kind: model.OutboxWebhook, WebhookID: "01a2193a-0fca-7002-8000-000000000001", Name: "event.created",
		Body: json.RawMessage(`{"event":"event.created","payload":{"note":"é\u2028"}}`), To: "+33612345678", Text: "Flood, zone 3",
		UserID: "01a2193a-0fca-7003-8000-000000000002", TokenKind: "reset", EventID: "01a2193a-0fca-7004-8000-000000000003",
		Channel: "webhook", MissionID: "01a2193a-0fca-7005-8000-000000000004", Attempts: 3, DueAt: at(time.Minute),
		LastStatus: 503, LastError: "the receiver answered HTTP 503", LeasedBy: "run-7", CreatedAt: at(0)}
}

// marshalRoundTrip is v as its JSON record (encoding/json both ways) read it back: what
// every reader of an outbox entry or a webhook saw before its binary form, and must still see.
func marshalRoundTrip[T any](t *testing.T, v *T) T {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOutboxCodec_EveryField(t *testing.T) {
	full := fullOutbox()
	v := reflect.ValueOf(*full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("fullOutbox leaves %s unset: set it, and write it in the binary form", v.Type().Field(i).Name)
		}
	}
	bare := &model.OutboxEntry{ID: full.ID, TenantID: full.TenantID, Kind: model.OutboxSMS, To: "+33612345678",
		Text: "x", DueAt: full.DueAt, CreatedAt: full.CreatedAt}
	zero := *bare
	zero.DueAt, zero.CreatedAt = model.Time{}, model.Time{}
	for name, o := range map[string]*model.OutboxEntry{"full": full, "bare": bare, "zero times": &zero} {
		t.Run(name, func(t *testing.T) {
			k, _ := idKey(o.ID)
			raw := encodeOutbox(nil, o)
			var got model.OutboxEntry
			if err := decodeOutbox(k, raw, &got); err != nil {
				t.Fatal(err)
			}
			if want := marshalRoundTrip(t, o); !reflect.DeepEqual(got, want) {
				t.Errorf("decoded:\n%#v\nthe JSON record reads:\n%#v", got, want)
			}
			due, err := outboxDueAt(k, raw)
			if err != nil || !due.Equal(o.DueAt.Time) {
				t.Errorf("due at %v (%v), want %v", due, err, o.DueAt.Time)
			}
			// Every truncation of the head is an error, never a panic; the body is the
			// rest of the record.
			head := len(raw) - len(o.Body)
			for n := range head {
				if err := decodeOutbox(k, raw[:n], &got); err == nil {
					t.Fatalf("truncated to %d of %d bytes: decoded", n, len(raw))
				}
			}
		})
	}
}

// A file written before the binary form holds the outbox as JSON records: they still
// read, move and end, and a moved entry takes the binary form.
func TestOutboxCodec_JSONRecord(t *testing.T) {
	db := openInternal(t, t.TempDir())
	tn := &model.Tenant{ID: model.NewID(), Slug: "older", Name: "Older"}
	ctx := context.Background()
	if err := db.Update(ctx, func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
		t.Fatal(err)
	}
	older := func(o *model.OutboxEntry) {
		// The record and its index as the JSON form wrote them.
		err := db.bolt.Update(func(btx *bolt.Tx) error {
			tk, _ := idKey(tn.ID)
			k, _ := idKey(o.ID)
			raw, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if err := btx.Bucket(bucketTenantRoot).Bucket(tk).Bucket(tbOutbox).Put(k, raw); err != nil {
				return err
			}
			dk, err := dueKey(o)
			if err != nil {
				return err
			}
			return btx.Bucket(bucketOutboxDue).Put(dk, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	moved, ended := fullOutbox(), fullOutbox()
	for _, o := range []*model.OutboxEntry{moved, ended} {
		// A message of no event: the check would look for the event.
		o.TenantID, o.LeasedBy, o.EventID, o.Channel, o.MissionID = tn.ID, "", "", "", ""
	}
	ended.ID = model.NewID()
	older(moved)
	older(ended)
	err := db.Update(ctx, func(tx model.Tx) error {
		got, err := tx.OutboxEntry(tn.ID, moved.ID)
		if err != nil {
			return err
		}
		if want := marshalRoundTrip(t, moved); !reflect.DeepEqual(*got, want) {
			t.Errorf("decoded:\n%#v\nwant:\n%#v", *got, want)
		}
		got.DueAt = model.At(got.DueAt.Add(time.Hour))
		if err := tx.PutOutboxEntry(got); err != nil {
			return err
		}
		return tx.DeleteOutboxEntry(tn.ID, ended.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		if len(refs) != 1 || refs[0].ID != moved.ID || !refs[0].DueAt.Equal(moved.DueAt.Add(time.Hour)) {
			t.Errorf("outbox_due holds %+v, want only %s due %v", refs, moved.ID, moved.DueAt.Add(time.Hour))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.bolt.View(func(btx *bolt.Tx) error {
		tk, _ := idKey(tn.ID)
		k, _ := idKey(moved.ID)
		if raw := btx.Bucket(bucketTenantRoot).Bucket(tk).Bucket(tbOutbox).Get(k); len(raw) == 0 || raw[0] != outboxV1 {
			t.Errorf("the moved entry is stored as %.20q, want the binary form", raw)
		}
		return nil
	})
	if r, err := db.Check(); err != nil || len(r.Problems) > 0 {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}
