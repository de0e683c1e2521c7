package store

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The idempotency records of model.Tx.

func (t *tx) Idempotency(tenantID, key string) (*model.IdempotencyRecord, error) {
	b, err := t.tbucket(tenantID, tbIdempotency)
	if err != nil {
		return nil, err
	}
	var r model.IdempotencyRecord
	if ok, err := getJSON(b, []byte(key), &r); !ok || err != nil {
		return nil, err
	}
	return &r, nil
}

func (t *tx) PutIdempotency(tenantID, key string, r *model.IdempotencyRecord) error {
	b, err := t.tbucket(tenantID, tbIdempotency)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(key), r)
}
