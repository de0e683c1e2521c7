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
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
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
