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

// fullWebhook has every field set, so that a field added to model.Webhook and left out of
// the binary form fails TestWebhookCodec_EveryField.
func fullWebhook() *model.Webhook {
	at := func(d time.Duration) *model.Time {
		v := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC).Add(d))
		return &v
	}
	return &model.Webhook{ID: "01a2193a-0fca-7001-a0f0-c37090f00ec1", URL: "https://hooks.example.com/in?é=1",
		Events: []string{"event.created", "mission.status_updated"}, Secret: "whsec_abc", Status: "disabled",
		DisabledReason: "the receiver answered 410 Gone", LastSuccessAt: at(time.Hour), FailedMessages: 7,
		ReenabledAt: at(2 * time.Hour), CreatedAt: *at(0), UpdatedAt: *at(3 * time.Hour)}
}

func TestWebhookCodec_EveryField(t *testing.T) {
	full := fullWebhook()
	v := reflect.ValueOf(*full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("fullWebhook leaves %s unset: set it, and write it in the binary form", v.Type().Field(i).Name)
		}
	}
	bare := &model.Webhook{ID: full.ID, URL: "https://x.example", Status: "active", CreatedAt: full.CreatedAt, UpdatedAt: full.UpdatedAt}
	empty := *bare
	empty.Events = []string{}
	zero := *bare
	zero.CreatedAt, zero.UpdatedAt = model.Time{}, model.Time{}
	for name, w := range map[string]*model.Webhook{"full": full, "bare": bare, "empty events": &empty, "zero times": &zero} {
		t.Run(name, func(t *testing.T) {
			k, _ := idKey(w.ID)
			raw := encodeWebhook(nil, w)
			var got model.Webhook
			if err := decodeWebhook(k, raw, &got); err != nil {
				t.Fatal(err)
			}
			if want := marshalRoundTrip(t, w); !reflect.DeepEqual(got, want) {
				t.Errorf("decoded:\n%#v\nthe JSON record reads:\n%#v", got, want)
			}
			for n := range len(raw) {
				if err := decodeWebhook(k, raw[:n], &got); err == nil {
					t.Fatalf("truncated to %d of %d bytes: decoded", n, len(raw))
				}
			}
		})
	}
}

// A file written before the binary form holds JSON subscriptions: they still read, and
// take the binary form when next written.
func TestWebhookCodec_JSONRecord(t *testing.T) {
	db := openInternal(t, t.TempDir())
	tn := &model.Tenant{ID: model.NewID(), Slug: "older", Name: "Older"}
	ctx := context.Background()
	if err := db.Update(ctx, func(tx model.Tx) error { return tx.PutTenant(tn) }); err != nil {
		t.Fatal(err)
	}
	old := fullWebhook()
	err := db.bolt.Update(func(btx *bolt.Tx) error {
		tk, _ := idKey(tn.ID)
		k, _ := idKey(old.ID)
		raw, err := json.Marshal(old)
		if err != nil {
			return err
		}
		return btx.Bucket(bucketTenantRoot).Bucket(tk).Bucket(tbWebhooks).Put(k, raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := marshalRoundTrip(t, old)
	err = db.Update(ctx, func(tx model.Tx) error {
		got, err := tx.Webhook(tn.ID, old.ID)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("decoded:\n%#v\nwant:\n%#v", *got, want)
		}
		all, err := tx.Webhooks(tn.ID)
		if err != nil {
			return err
		}
		if len(all) != 1 || !reflect.DeepEqual(all[0], want) {
			t.Errorf("listed %#v, want %#v", all, want)
		}
		return tx.PutWebhook(tn.ID, got)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx model.Tx) error {
		got, err := tx.Webhook(tn.ID, old.ID)
		if err == nil && !reflect.DeepEqual(*got, want) {
			t.Errorf("rewritten, reads:\n%#v\nwant:\n%#v", *got, want)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.bolt.View(func(btx *bolt.Tx) error {
		tk, _ := idKey(tn.ID)
		k, _ := idKey(old.ID)
		if raw := btx.Bucket(bucketTenantRoot).Bucket(tk).Bucket(tbWebhooks).Get(k); len(raw) == 0 || raw[0] != webhookV1 {
			t.Errorf("the rewritten subscription is stored as %.20q, want the binary form", raw)
		}
		return nil
	})
}
