package server

import "sync/atomic"

// bodyParses counts the parses of request bodies (parsedBody) in this test binary.
var bodyParses atomic.Int64

func init() { parsedBody = func() { bodyParses.Add(1) } }

// BodyParses returns how many times request bodies have been parsed so far: by
// decodeJSON, and for the canonical form of an idempotency fingerprint.
func BodyParses() int64 { return bodyParses.Load() }
