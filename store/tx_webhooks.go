package store

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func (t *tx) Webhook(tenantID, id string) (*model.Webhook, error) {
	b, err := t.tbucket(tenantID, tbWebhooks)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("webhook")
	}
	raw := b.Get(k)
	if raw == nil {
		return nil, model.NotFound("webhook")
	}
	var w model.Webhook
	if err := decodeWebhook(k, raw, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

func (t *tx) PutWebhook(tenantID string, w *model.Webhook) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbWebhooks)
	if err != nil {
		return err
	}
	k, err := idKey(w.ID)
	if err != nil {
		return err
	}
	return b.Put(k, encodeWebhook(make([]byte, 0, 128+len(w.URL)), w))
}

// DeleteWebhook removes a subscription and its attempt log.
func (t *tx) DeleteWebhook(tenantID, id string) error {
	t.changed(tenantID)
	b, err := t.tbucket(tenantID, tbWebhooks)
	if err != nil {
		return err
	}
	k, err := idKey(id)
	if err != nil {
		return model.NotFound("webhook")
	}
	if b.Get(k) == nil {
		return model.NotFound("webhook")
	}
	if err := b.Delete(k); err != nil {
		return err
	}
	log, err := t.tbucket(tenantID, tbWebhookDeliveries)
	if err != nil {
		return err
	}
	// Collect, then delete: never delete while a cursor walks.
	var keys [][]byte
	c := log.Cursor()
	for lk, _ := c.Seek(k); len(lk) == 32 && string(lk[:16]) == string(k); lk, _ = c.Next() {
		keys = append(keys, append([]byte(nil), lk...))
	}
	for _, lk := range keys {
		if err := log.Delete(lk); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Webhooks(tenantID string) ([]model.Webhook, error) {
	b, err := t.tbucket(tenantID, tbWebhooks)
	if err != nil {
		return nil, err
	}
	out := []model.Webhook{}
	err = b.ForEach(func(k, v []byte) error {
		var w model.Webhook
		if err := decodeWebhook(k, v, &w); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	return out, err
}

func (t *tx) PutDeliveryAttempt(tenantID string, a *model.DeliveryAttempt) error {
	b, err := t.tbucket(tenantID, tbWebhookDeliveries)
	if err != nil {
		return err
	}
	k, err := pair(a.WebhookID, a.ID)
	if err != nil {
		return err
	}
	// bbolt keeps the value until commit: a fresh buffer.
	return b.Put(k, a.AppendJSON(make([]byte, 0, 256)))
}

func (t *tx) DeliveryAttempts(tenantID, webhookID string, p model.Page) ([]model.DeliveryAttempt, string, error) {
	b, err := t.tbucket(tenantID, tbWebhookDeliveries)
	if err != nil {
		return nil, "", err
	}
	wk, err := idKey(webhookID)
	if err != nil {
		return nil, "", model.NotFound("webhook")
	}
	c := b.Cursor()
	var k, v []byte
	if p.Cursor != "" {
		after, err := decodeCursor(p.Cursor, 32)
		if err != nil || string(after[:16]) != string(wk) {
			return nil, "", model.Invalid("cursor", "cursor is not valid")
		}
		k, v = seekBefore(c, after)
	} else {
		// The first key after this webhook's range, then one step back.
		end := append(append([]byte(nil), wk...), 0xff)
		k, v = seekBefore(c, end)
	}
	out := []model.DeliveryAttempt{}
	var last []byte
	size := 0 // of the page's stored JSON
	for ; len(k) == 32 && string(k[:16]) == string(wk); k, v = c.Prev() {
		if p.Full(len(out), size, len(v)) {
			return out, encodeCursor(last), nil
		}
		var a model.DeliveryAttempt
		if err := json.Unmarshal(v, &a); err != nil {
			return nil, "", err
		}
		out = append(out, a)
		last = append([]byte(nil), k...)
		size += len(v)
	}
	return out, "", nil
}
