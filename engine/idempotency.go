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

// ValidateIdempotencyKey checks a client's key, from a body or the Idempotency-Key
// header: at most MaxIdempotencyKeyLen bytes, of text model.CheckText accepts.
func ValidateIdempotencyKey(field, key string) error {
	if len(key) > MaxIdempotencyKeyLen {
		return model.Invalid(field, "%s is longer than %d characters", field, MaxIdempotencyKeyLen)
	}
	return model.CheckText(field, key)
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

// Two rules, both kept here. An event's idempotency_key names the logical event: a repeat
// returns the original reply whatever its body (eventReplay; POST /v1/events and sync
// items). The Idempotency-Key of any other write names one request: a repeat with the
// same body returns the original reply, with another body it is idempotency_key_reused
// (replay, remember; every other write, device sync and sync batch included). Both look
// the stored record up and answer it with replayed; what differs between them is one
// function, sameRequest. See docs/decisions/0084-transaction-owner.md
// and docs/decisions/0146-one-way-through-request.md.

// errKeyReused is the error of a key repeated with a different body.
func errKeyReused() error {
	return model.Errorf(model.KindIdempotencyReused, "this Idempotency-Key was used with a different request body")
}

// sameRequest is the one difference between the two rules: whether the repeat of a key
// whose reply rec holds is the request that reply answered. An Idempotency-Key names one
// request, so the repeat must carry the same body: the fingerprint of its canonical JSON,
// or the raw-bytes fingerprint that records made before fingerprints were canonical hold
// (else idempotency_key_reused). An event's idempotency_key names the logical event, not
// a request (docs/rules.md): a repeat is the same event whatever its body says, so its
// records keep no fingerprint and eventReplay never calls this.
func sameRequest(rec *model.IdempotencyRecord, k *model.IdempotencyKey) error {
	if rec.Fingerprint != k.Fingerprint && (k.RawFingerprint == "" || rec.Fingerprint != k.RawFingerprint) {
		return errKeyReused()
	}
	return nil
}

// replayed is the reply rec holds, marked Replayed (nil: nil).
func replayed(rec *model.IdempotencyRecord) *model.Reply {
	if rec == nil {
		return nil
	}
	out := rec.Reply
	out.Replayed = true
	return &out
}

// storeKey is the stored name of k (empty: no key), after checking it: the one check of
// a write's Idempotency-Key (or body idempotency_key), wherever it was read.
func storeKey(k *model.IdempotencyKey) (string, error) {
	if k == nil || k.Key == "" {
		return "", nil
	}
	if err := ValidateIdempotencyKey("idempotency_key", k.Key); err != nil {
		return "", err
	}
	return k.Route + "\n" + k.Key, nil
}

// replay returns the reply stored under k in the tenant (nil: none, or no key), marked
// Replayed; a repeat of k with another body is idempotency_key_reused.
func replay(tx model.Tx, tenantID string, k *model.IdempotencyKey) (*model.Reply, error) {
	sk, err := storeKey(k)
	if err != nil {
		return nil, err
	}
	return replayAt(tx, tenantID, sk, k)
}

// replayAt is replay under the stored name sk of k, already checked ("": no key).
func replayAt(tx model.Tx, tenantID, sk string, k *model.IdempotencyKey) (*model.Reply, error) {
	if sk == "" {
		return nil, nil
	}
	rec, err := tx.Idempotency(tenantID, sk)
	if err != nil || rec == nil {
		return nil, err
	}
	if err := sameRequest(rec, k); err != nil {
		return nil, err
	}
	return replayed(rec), nil
}

// remember stores reply under k in the tenant (nothing without a key).
func remember(tx model.Tx, tenantID string, k *model.IdempotencyKey, reply model.Reply, at model.Time) error {
	sk, err := storeKey(k)
	if err != nil {
		return err
	}
	return rememberAt(tx, tenantID, sk, k, reply, at)
}

// rememberAt is remember under the stored name sk of k, already checked ("": no key).
func rememberAt(tx model.Tx, tenantID, sk string, k *model.IdempotencyKey, reply model.Reply, at model.Time) error {
	if sk == "" {
		return nil
	}
	return tx.PutIdempotency(tenantID, sk, &model.IdempotencyRecord{Reply: reply, Fingerprint: k.Fingerprint, CreatedAt: at})
}

// eventReplay returns the reply stored for the event named key in the tenant (nil:
// none), marked Replayed, whatever the body of the repeat (no sameRequest: the key names
// the event).
func eventReplay(tx model.Tx, tenantID, key string) (*model.Reply, error) {
	rec, err := tx.EventReply(tenantID, key)
	if err != nil {
		return nil, err
	}
	return replayed(rec), nil
}

// write is the frame of every write use case but the bulk ones: it checks w's key (a
// refused key runs nothing), then, in one transaction, looks the key up (a replay
// answers the stored reply and runs nothing), runs fn (the check and the effect, its
// outbox entries and usage counters), renders fn's result with w.Render and stores it
// under the key. A failed fn stores nothing. w nil: fn alone.
func write[T any](ctx context.Context, e *Engine, tenantID string, w *model.Write, fn func(model.Tx) (T, error)) (T, error) {
	var out T
	var k *model.IdempotencyKey
	if w != nil {
		k = w.Key
	}
	sk, err := storeKey(k) // the one check of the key, before the transaction
	if err != nil {
		return out, err
	}
	err = e.store.Update(ctx, func(tx model.Tx) error {
		var zero T
		out = zero
		if w != nil {
			w.Reply = model.Reply{}
		}
		if r, err := replayAt(tx, tenantID, sk, k); err != nil || r != nil {
			if r != nil {
				w.Reply = *r
			}
			return err
		}
		v, err := fn(tx)
		if err != nil {
			return err
		}
		out = v
		if w == nil || w.Render == nil {
			return nil
		}
		if w.Reply, err = w.Render(v); err != nil {
			return err
		}
		return rememberAt(tx, tenantID, sk, k, w.Reply, model.At(e.clock.Now()))
	})
	return out, err
}
