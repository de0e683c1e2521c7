package model

// Reply is the stored response of a write, opaque to the engine: what a replay returns.
type Reply struct {
	Status    int    `json:"status"`
	Body      []byte `json:"body"`
	RequestID string `json:"request_id"`
	// Replayed is true when the reply is the stored answer to an earlier request.
	Replayed bool `json:"-"`
	// Shown, when set, is the body answered this once instead of Body: an answer that
	// shows a secret once (a new API key) stores Body without it, so no secret is kept
	// in an idempotency record.
	Shown []byte `json:"-"`
}

// IdempotencyRecord is a Reply kept under its key, with the fingerprint of the request
// that produced it.
type IdempotencyRecord struct {
	Reply
	Fingerprint string `json:"fingerprint"`
	CreatedAt   Time   `json:"created_at"`
}

// IdempotencyKey guards a write: a second write with the same Route and Key in the same
// tenant returns the first reply instead of running again.
type IdempotencyKey struct {
	Route string
	Key   string
	// Fingerprint identifies the request body (CanonicalJSON of it): the same key with
	// another body is idempotency_key_reused.
	Fingerprint string
	// RawFingerprint is the fingerprint of the body's bytes as sent, which records made
	// before fingerprints were canonical hold; a replay matching it is a replay too.
	RawFingerprint string
}

// Write is what a write use case needs of its request beyond its input: the idempotency
// key that guards it (nil: none) and how its result becomes the reply stored under that
// key. The use case sets Reply: the answer to send (a replay's, with Replayed set). A nil
// *Write, as the command line and the tests pass it, stores and renders nothing.
type Write struct {
	Key    *IdempotencyKey
	Render Render
	Reply  Reply
}
