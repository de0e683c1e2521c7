package storetest

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newWebhook returns a subscription created at(i).
func newWebhook(i int) *model.Webhook {
	return &model.Webhook{ID: model.NewIDAt(at(i)), URL: "https://hooks.example/in", Events: []string{"event.created"},
		Secret: "whsec_x", Status: "active", CreatedAt: model.At(at(i)), UpdatedAt: model.At(at(i))}
}

// newAttempt returns an attempt of a webhook's message made at(i).
func newAttempt(webhookID string, i int) *model.DeliveryAttempt {
	return &model.DeliveryAttempt{ID: model.NewIDAt(at(i)), WebhookID: webhookID, MessageID: model.NewID(),
		Event: "event.created", Attempt: 1, Status: "failed", StatusCode: 500, DurationMs: 12, At: model.At(at(i))}
}

func testWebhooks(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		w1, w2, w3 := newWebhook(1), newWebhook(2), newWebhook(3)
		f.update(func(tx model.Tx) error {
			for _, w := range []*model.Webhook{w2, w1} {
				if err := tx.PutWebhook(a.ID, w); err != nil {
					return err
				}
			}
			return tx.PutWebhook(b.ID, w3)
		})
		w1.FailedMessages = 2
		f.update(func(tx model.Tx) error { return tx.PutWebhook(a.ID, w1) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Webhook(a.ID, w1.ID)
			if err != nil || got.URL != w1.URL || got.FailedMessages != 2 || got.Secret != w1.Secret || len(got.Events) != 1 {
				t.Fatalf("Webhook = %+v, %v", got, err)
			}
			all, err := tx.Webhooks(a.ID)
			if err != nil || ids(all, func(w model.Webhook) string { return w.ID }) != w1.ID+","+w2.ID {
				t.Fatalf("Webhooks = %+v, %v; want oldest first", all, err)
			}
			for _, c := range [][2]string{{b.ID, w1.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), w1.ID}} {
				_, err := tx.Webhook(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			_, err = tx.Webhooks(model.NewID())
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		c := f.tenant("charlie")
		f.view(func(tx model.Tx) error {
			all, err := tx.Webhooks(c.ID)
			if err != nil || len(all) != 0 {
				t.Fatalf("Webhooks of a tenant with none = %+v, %v", all, err)
			}
			return nil
		})
	})
	t.Run("Delete", func(t *testing.T) {
		// DeleteWebhook removes the subscription and its attempt log.
		f := newFx(t, open)
		a := f.tenant("alpha")
		w1, w2 := newWebhook(1), newWebhook(2)
		f.update(func(tx model.Tx) error {
			for i, w := range []*model.Webhook{w1, w2} {
				if err := tx.PutWebhook(a.ID, w); err != nil {
					return err
				}
				if err := tx.PutDeliveryAttempt(a.ID, newAttempt(w.ID, 10+i)); err != nil {
					return err
				}
			}
			return nil
		})
		f.update(func(tx model.Tx) error { return tx.DeleteWebhook(a.ID, w1.ID) })
		f.view(func(tx model.Tx) error {
			_, err := tx.Webhook(a.ID, w1.ID)
			assertKind(t, err, model.KindNotFound)
			if all, _ := tx.Webhooks(a.ID); len(all) != 1 || all[0].ID != w2.ID {
				t.Fatalf("Webhooks after a delete = %+v", all)
			}
			got, _, err := tx.DeliveryAttempts(a.ID, w1.ID, model.Page{Limit: 10})
			if err != nil || len(got) != 0 {
				t.Fatalf("attempts of a deleted webhook = %+v, %v", got, err)
			}
			got, _, err = tx.DeliveryAttempts(a.ID, w2.ID, model.Page{Limit: 10})
			if err != nil || len(got) != 1 {
				t.Fatalf("attempts of the other webhook = %+v, %v", got, err)
			}
			return nil
		})
		for _, c := range [][2]string{{a.ID, w1.ID}, {a.ID, "bad"}, {model.NewID(), w2.ID}} {
			err := f.updateErr(func(tx model.Tx) error { return tx.DeleteWebhook(c[0], c[1]) })
			assertKind(t, err, model.KindNotFound)
		}
	})
	t.Run("DeliveryAttempts", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		w, other := newWebhook(0), newWebhook(1)
		var want []string // newest first
		f.update(func(tx model.Tx) error {
			for _, x := range []*model.Webhook{w, other} {
				if err := tx.PutWebhook(a.ID, x); err != nil {
					return err
				}
			}
			for i := range 5 {
				at := newAttempt(w.ID, 10+i)
				want = append([]string{at.ID}, want...)
				if err := tx.PutDeliveryAttempt(a.ID, at); err != nil {
					return err
				}
				if err := tx.PutDeliveryAttempt(a.ID, newAttempt(other.ID, 10+i)); err != nil {
					return err
				}
			}
			return tx.PutDeliveryAttempt(b.ID, newAttempt(w.ID, 20))
		})
		list := func(tx model.Tx, p model.Page) ([]model.DeliveryAttempt, string, error) {
			return tx.DeliveryAttempts(a.ID, w.ID, p)
		}
		got, sizes := walk(t, f, model.Page{Limit: 2}, 5, list)
		attemptID := func(a model.DeliveryAttempt) string { return a.ID }
		if sizesOf(sizes) != "[2 2 1]" || ids(got, attemptID) != ids(want, func(s string) string { return s }) {
			t.Fatalf("attempts %s in pages %v; want %v newest first", ids(got, attemptID), sizes, want)
		}
		if got[0].WebhookID != w.ID || got[0].StatusCode != 500 || got[0].DurationMs != 12 || !got[0].At.Equal(at(14)) {
			t.Fatalf("attempt = %+v", got[0])
		}
		f.view(func(tx model.Tx) error {
			_, _, err := tx.DeliveryAttempts(a.ID, w.ID, model.Page{Limit: 2, Cursor: "!!!"})
			assertKind(t, err, model.KindValidation)
			_, _, err = tx.DeliveryAttempts(model.NewID(), w.ID, model.Page{Limit: 2})
			assertKind(t, err, model.KindNotFound)
			none, next, err := tx.DeliveryAttempts(a.ID, model.NewID(), model.Page{Limit: 2})
			if err != nil || len(none) != 0 || next != "" {
				t.Fatalf("attempts of a webhook with none = %+v, %q, %v", none, next, err)
			}
			return nil
		})
	})
}
