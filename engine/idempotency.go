package engine

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// MaxIdempotencyKeyLen is the longest idempotency key accepted.
const MaxIdempotencyKeyLen = 255

// IdempotencyRetention is how long the key of a non-event write is kept at least.
const IdempotencyRetention = 24 * time.Hour

// CanonicalJSON returns body in one form for every way of writing the same JSON: keys
// sorted, no insignificant white space, numbers as written. A body that is not JSON is
// returned as it is.
func CanonicalJSON(body []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return body
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

// Fingerprint returns the fingerprint of a request body: an HMAC under an installation
// secret, so that a stored fingerprint tells nothing of a body that held a password.
func Fingerprint(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// ValidateIdempotencyKey checks a client's key.
func ValidateIdempotencyKey(field, key string) error {
	if len(key) > MaxIdempotencyKeyLen {
		return model.Invalid(field, "%s is longer than %d characters", field, MaxIdempotencyKeyLen)
	}
	return nil
}

// SweepIdempotency forgets the keys of non-event writes older than IdempotencyRetention.
// Event keys are kept as long as their events.
func (e *Engine) SweepIdempotency(ctx context.Context) (int, error) {
	var n int
	err := e.store.Update(ctx, func(tx model.Tx) (err error) {
		n, err = tx.ExpireIdempotency(e.clock.Now().Add(-IdempotencyRetention))
		return err
	})
	return n, err
}

// Write runs fn in one transaction guarded by k (nil: no key). The check, fn's effect and
// the stored reply commit together, so concurrent duplicates run fn once. A failed fn
// stores nothing.
func (e *Engine) Write(ctx context.Context, tenantID string, k *model.IdempotencyKey, fn func(model.Tx) (model.Reply, error)) (model.Reply, error) {
	var out model.Reply
	err := e.store.Update(ctx, func(tx model.Tx) error {
		var storeKey string
		if k != nil && k.Key != "" {
			if err := ValidateIdempotencyKey("idempotency_key", k.Key); err != nil {
				return err
			}
			storeKey = k.Route + "\n" + k.Key
			rec, err := tx.Idempotency(tenantID, storeKey)
			if err != nil {
				return err
			}
			if rec != nil {
				if rec.Fingerprint != k.Fingerprint && (k.RawFingerprint == "" || rec.Fingerprint != k.RawFingerprint) {
					return model.Errorf(model.KindIdempotencyReused, "this Idempotency-Key was used with a different request body")
				}
				out = rec.Reply
				out.Replayed = true
				return nil
			}
		}
		r, err := fn(tx)
		if err != nil {
			return err
		}
		out = r
		if storeKey == "" {
			return nil
		}
		return tx.PutIdempotency(tenantID, storeKey, &model.IdempotencyRecord{
			Reply: r, Fingerprint: k.Fingerprint, CreatedAt: model.At(e.clock.Now())})
	})
	return out, err
}
