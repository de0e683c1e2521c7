package engine

// Strict JSON (docs/decisions/0080-strict-json.md). encoding/json resolves three
// things silently, each its own way, so that a gateway in front of the node may read a
// body differently from the node: a string holding invalid UTF-8 (it keeps U+FFFD), an
// escaped UTF-16 surrogate that does not pair (\udc00, U+FFFD too), and an object naming
// a key twice (the last one wins). I-JSON (RFC 7493) forbids all three, and so does the
// node, at any depth, the opaque payload included. Keys are compared by their decoded
// value: "a" and "\u0061" are the same key.
//
// Syntax is left to the decoder, whose messages the API already answers: the scan stops
// at the first byte that is not JSON and reports nothing, so only a problem before that
// point is reported.
