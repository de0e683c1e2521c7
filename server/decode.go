package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
)

// Body size limits.
const (
	maxBody     = 1 << 20
	maxBulkBody = 8 << 20
)

// readBody reads a request body of at most limit bytes, checking its Content-Type, and
// refuses one that is not strict JSON (engine.CheckJSON: invalid UTF-8, an unpaired
// surrogate, a key twice in an object). An empty body reads as nil.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := readRawBody(r, limit)
	if err != nil {
		return nil, err
	}
	if err := strictjson.CheckJSON(body); err != nil {
		return nil, err
	}
	return body, nil
}

// readRawBody is readBody without the strict JSON check, for a bulk body whose items are
// judged alone: its handler checks the envelope (engine.CheckJSONEnvelope) and each item
// (engine.CheckJSONItem) itself.
func readRawBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, model.Errorf(model.KindUnsupportedMediaType, "the body must be sent with Content-Type: application/json")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, model.Errorf(model.KindInvalidJSON, "the body could not be read")
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(limit)
	}
	return body, nil
}

func tooLarge(limit int64) error {
	return model.Errorf(model.KindPayloadTooLarge, "the body is larger than %d MiB", limit>>20)
}

// decodeInput reads a request body of at most 1 MiB and decodes it into a T, once: the
// body of a request that keeps nothing of it but its input (POST /v1/events, whose key
// is a field of its input; the score).
func decodeInput[T any](r *http.Request) (T, error) {
	var in T
	raw, err := readBody(r, maxBody)
	if err != nil {
		return in, err
	}
	return in, decodeJSON(raw, &in)
}

// decodeBody reads the body of a write, of at most 1 MiB, and decodes it into a T, once,
// returning it as a reqBody too (the idempotency key and fingerprints). A T that embeds
// bodyKey gets the body's idempotency_key in the same decode.
func decodeBody[T any](r *http.Request) (*reqBody, T, error) {
	var in T
	raw, err := readBody(r, maxBody)
	if err != nil {
		return nil, in, err
	}
	if err := decodeJSON(raw, &in); err != nil {
		return nil, in, err
	}
	body := &reqBody{raw: raw}
	if k, ok := any(&in).(keyCarrier); ok {
		body.key, body.found = k.rawIdempotencyKey(), true
	}
	return body, in, nil
}

// reqBody is the body of a write as read once: its bytes, for the fingerprints, and,
// when the decode of its input found it (found), the body's top-level idempotency_key as
// written (nil: absent). A nil *reqBody is a write without a body.
type reqBody struct {
	raw   []byte
	key   json.RawMessage
	found bool
}

// rawBody is the reqBody of bytes that no input with bodyKey was decoded from:
// idempotencyKey decodes them for the key, when no header names one.
func rawBody(raw []byte) *reqBody { return &reqBody{raw: raw} }

// bodyKey is the optional idempotency_key of a write's body (docs/rules.md, HTTP): a body
// type that embeds it gets the key in the decode of its own fields, so the body is
// decoded once (docs/decisions/0146-one-way-through-request.md). It keeps the key as
// written, and the decode never fails on it: the body's own fields report their errors
// first, as they did when the key was read by a decode of its own, and a key that is no
// string is an error only when no Idempotency-Key header names the key (reqBody's
// idempotencyKey).
type bodyKey struct {
	IdempotencyKey json.RawMessage `json:"idempotency_key"`
}

func (b *bodyKey) rawIdempotencyKey() json.RawMessage { return b.IdempotencyKey }

// keyCarrier is a body type that embeds bodyKey.
type keyCarrier interface{ rawIdempotencyKey() json.RawMessage }

// idempotencyKey is the body's idempotency_key ("": absent or null), decoding the body
// for it when its input's decode did not look for it. A key that is no string is the
// validation error encoding/json gives a string field.
func (b *reqBody) idempotencyKey() (string, error) {
	if !b.found {
		var in bodyKey
		if err := decodeJSON(b.raw, &in); err != nil {
			return "", err
		}
		b.key, b.found = in.IdempotencyKey, true
	}
	k := bytes.TrimSpace(b.key)
	if len(k) == 0 || bytes.Equal(k, []byte("null")) {
		return "", nil
	}
	var key string
	if k[0] != '"' || json.Unmarshal(k, &key) != nil {
		return "", jsonError(&json.UnmarshalTypeError{Field: "idempotency_key", Type: reflect.TypeFor[string]()})
	}
	return key, nil
}

// parsedBody is called on each parse of a request body's JSON (decodeJSON, the
// canonical form of a fingerprint): the tests count them (a body is decoded once).
var parsedBody = func() {}

// decodeJSON decodes body (nil reads as {}) into v, which must be a pointer to a struct.
// Fields of the wrong type are validation errors naming the field. A body that is not a
// JSON object is invalid_json, literal null included (encoding/json would take it as {}).
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := notObject(body); err != nil {
		return err
	}
	parsedBody()
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(unembed(err, v))
	}
	if _, err := dec.Token(); err != io.EOF {
		return model.Errorf(model.KindInvalidJSON, "the body must hold one JSON object")
	}
	return nil
}

// errNotObject is the error of a body that is JSON but not an object.
func errNotObject() error {
	return model.Errorf(model.KindInvalidJSON, "the body must be a JSON object")
}

// notObject refuses a body of literal null, which encoding/json decodes into a struct as
// {} (docs/decisions/0131-text-never-stored.md); the other
// bodies that are no object fail to decode into a struct, with errNotObject too
// (jsonError).
func notObject(body []byte) error {
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return errNotObject()
	}
	return nil
}

// unembed drops from the field of a type error the embedded structs of v that lead to
// it: encoding/json names them (MissionStatusInput.status, for a body type that embeds
// its input beside bodyKey), the contract names the JSON members only (status).
func unembed(err error, v any) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	t := reflect.TypeOf(v)
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name, rest, ok := strings.Cut(te.Field, ".")
		if t.Kind() != reflect.Struct || !ok {
			return err
		}
		f, found := t.FieldByName(name)
		if !found || !f.Anonymous {
			return err
		}
		te.Field, t = rest, f.Type
	}
}

// jsonError turns a decoding error into the contract's error.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return errNotObject()
		}
		return model.Invalid(te.Field, "%s must be %s", te.Field, typeName(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return model.Errorf(model.KindInvalidJSON, "the body is not valid JSON")
	}
	return model.Invalid("", "%v", err) // a field's own decoder refused its value
}

func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// Query limits of lists.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// pageOf reads `limit` and `cursor` from the query. Every list of the API pages through
// it, so every page is also capped at engine.MaxPageBytes.
func pageOf(r *http.Request) (model.Page, error) {
	q := r.URL.Query()
	p := model.Page{Limit: defaultLimit, Cursor: q.Get("cursor"), MaxBytes: model.MaxPageBytes}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return p, model.Invalid("limit", "limit must be an integer")
		}
		if n < 1 {
			return p, model.Invalid("limit", "limit must be at least 1")
		}
		p.Limit = min(n, maxLimit)
	}
	return p, nil
}
