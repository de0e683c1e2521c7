package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
)

// Fuzz targets of the request decoders: every body type through decodeJSON, readBody's
// limits and media type, the sync batch decoder and the query parsers.

// bodyTypes are the types request bodies decode into (decodeBody, decode and the
// handlers' own bodies), each by a function returning a fresh pointer.
var bodyTypes = []func() any{
	func() any { return new(model.LoginInput) },
	func() any { return new(model.ForgotPasswordInput) },
	func() any { return new(model.ResetPasswordInput) },
	func() any { return new(model.VerifyInput) },
	func() any { return new(model.ChangePasswordInput) },
	func() any { return new(model.CreateAPIKeyInput) },
	func() any { return new(model.RotateAPIKeyInput) },
	func() any { return new(model.DeviceInput) },
	func() any { return new(deviceSyncBody) },
	func() any { return new(model.DispatchInput) },
	func() any { return new(dispatchBody) },
	func() any { return new(model.EventInput) },
	func() any { return new(model.MissionStatusInput) },
	func() any { return new(missionStatusBody) },
	func() any { return new(model.ScoreInput) },
	func() any { return new(model.SMSInboundInput) },
	func() any { return new(model.TeamInput) },
	func() any { return new(model.TeamPatch) },
	func() any { return new(model.MemberInput) },
	func() any { return new(model.LocationInput) },
	func() any { return new(model.DispatchSettingsInput) },
	func() any { return new(model.CreateUserInput) },
	func() any { return new(model.UpdateUserInput) },
	func() any { return new(model.WebhookInput) },
	func() any { return new(zoneBody) },
	func() any { return new(model.ConnectivityReport) },
	func() any { return new(syncEnvelope) },
	func() any {
		return new(struct {
			Key *string `json:"idempotency_key"`
		})
	},
}

// decodeErrorKind fails unless err is a client error of the decoders.
func decodeErrorKind(t *testing.T, in []byte, err error) {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) || (e.Kind != model.KindInvalidJSON && e.Kind != model.KindValidation) {
		t.Fatalf("decoding %q: %#v, want invalid_json or validation_error", in, err)
	}
}

func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{}`, ``, ` `, `null`, `[]`, `{"a":1}{}`, `{"email":"a@b.c","password":"x"}`,
		`{"type":"fire","priority":"high","vertical":"emergency","idempotency_key":"k","payload":{"lat":1,"lng":2}}`,
		`{"name":7}`, `{"scopes":"a"}`, `{"grace_period_minutes":1.5}`, `{"lat":"1"}`, `{"items":[1,{}],"ack_through":3}`,
		`{"code":"Z1","boundary":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}`,
		`{"reported_at":"2026-06-09T10:11:12Z","state":"online"}`, `{"events":[{"type":"x"}],"captured_at":"y"}`,
		`{"recorded_at":"0000-01-01T00:00:00+01:00"}`, "{\"name\":\"\xff\"}", `{"name":"\ud800"}`,
		// Strict JSON: a key twice (also spelt with an escape, also in the payload), invalid
		// UTF-8 in a key or a value, unpaired surrogates; and what stays allowed.
		`{"priority":"low","priority":"critical"}`, `{"priority":"low","\u0070riority":"critical"}`,
		`{"type":"x","payload":{"lat":1,"lat":2}}`, `{"payload":{"a":[{"b":1,"b":2}]}}`, "{\"na\xffme\":\"x\"}",
		"{\"type\":\"A\xff\xfe\"}", `{"type":"\udc00"}`, `{"type":"\ud800\u0041"}`, `{"type":"\ud83d\ude00\ufffd"}`,
		`{"a":{"k":1},"b":{"k":1}}`, `{"items":[{"sequence_number":1,"sequence_number":2}]}`} {
		for i := range bodyTypes {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		v := bodyTypes[int(which)%len(bodyTypes)]()
		// readBody refuses what is not strict JSON before any decoder sees it.
		if err := strictjson.CheckJSON(body); err != nil {
			if !model.IsKind(err, model.KindInvalidJSON) {
				t.Fatalf("CheckJSON(%q) = %#v, want invalid_json", body, err)
			}
			return
		}
		if err := decodeJSON(body, v); err != nil {
			decodeErrorKind(t, body, err)
			return
		}
		// What decodes has a normal form: encoded, it decodes again, and encodes the same.
		once, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T from %q does not encode: %v", v, body, err)
		}
		v2 := bodyTypes[int(which)%len(bodyTypes)]()
		if err := decodeJSON(once, v2); err != nil {
			t.Fatalf("%T: %q decodes, its encoding %s does not: %v", v, body, once, err)
		}
		if twice, _ := json.Marshal(v2); !bytes.Equal(once, twice) {
			t.Fatalf("%T: %q encodes to %s, then %s", v, body, once, twice)
		}
	})
}

// readCounter is a request body that counts what was read of it.
type readCounter struct {
	r io.Reader
	n int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func FuzzReadBody(f *testing.F) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain",
		"", "application/json; charset", "application/jsonx", `application/json; a="`} {
		f.Add(ct, uint8(0), []byte(`{"a":1}`))
		f.Add(ct, uint8(1), bytes.Repeat([]byte("x"), 65))
		f.Add(ct, uint8(2), []byte(`{}`))
	}
	const limit = 64
	f.Fuzz(func(t *testing.T, contentType string, mode uint8, body []byte) {
		rc := &readCounter{r: bytes.NewReader(body)}
		r := &http.Request{Method: "POST", Header: http.Header{}, Body: io.NopCloser(rc)}
		r.Header.Set("Content-Type", contentType)
		switch mode % 3 {
		case 0:
			r.ContentLength = int64(len(body)) // declared
		case 1:
			r.ContentLength = -1 // chunked: unknown
		case 2:
			r.ContentLength = limit + 1 + int64(len(body)) // declared too large
		}
		got, err := readBody(r, limit)
		if rc.n > limit+1 {
			t.Fatalf("readBody read %d bytes with a limit of %d", rc.n, limit)
		}
		if r.ContentLength > limit {
			if !model.IsKind(err, model.KindPayloadTooLarge) || rc.n != 0 {
				t.Fatalf("declared %d: %v after reading %d bytes, want payload_too_large before reading", r.ContentLength, err, rc.n)
			}
			return
		}
		mt, _, mtErr := mime.ParseMediaType(contentType)
		jsonType := mtErr == nil && mt == "application/json"
		switch {
		case len(body) == 0:
			if err != nil && !(r.ContentLength < 0 && !jsonType && model.IsKind(err, model.KindUnsupportedMediaType)) || len(got) != 0 {
				t.Fatalf("empty body: %q, %v", got, err)
			}
		case !jsonType:
			if !model.IsKind(err, model.KindUnsupportedMediaType) {
				t.Fatalf("Content-Type %q: %v, want unsupported_media_type", contentType, err)
			}
		case len(body) > limit:
			if !model.IsKind(err, model.KindPayloadTooLarge) {
				t.Fatalf("%d bytes: %v, want payload_too_large", len(body), err)
			}
		case strictjson.CheckJSON(body) != nil:
			if !model.IsKind(err, model.KindInvalidJSON) || got != nil {
				t.Fatalf("%q is not strict JSON: readBody = %q, %v", body, got, err)
			}
		case err != nil || !bytes.Equal(got, body):
			t.Fatalf("readBody = %q, %v; want the body %q", got, err, body)
		}
	})
}

func FuzzDecodeSyncBatch(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"events":[]}`, `{"events":null}`, `[]`,
		`{"device_id":"d","captured_at":"2026-06-09T10:11:12Z","events":[{"type":"fire","idempotency_key":"k"}]}`,
		`{"events":[{"type":7},{"type":"fire"},[],null,"x"]}`, `{"events":[{"payload":{"a":}}]}`, `{"events":{}}`,
		`{"device_id":1,"events":[{"type":7}]}`, `{"events":[{"type":"x"}],"idempotency_key":5}`, `{"events":[]} x`,
		`{"events":[{"type":"x","type":"y"},{"payload":{"a":1,"a":2}}]}`, "{\"events\":[{\"type\":\"\xff\"},\"\xfe\"]}",
		`{"events":[],"events":[]}`, "{\"device_id\":\"\xff\",\"events\":[]}", `{"events":[{"type":"\udc00"}],"device_id":"d"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := decodeSyncBatch(body)
		if err != nil {
			decodeErrorKind(t, body, err)
			return
		}
		// The items are those of the body, one for one, each decoded or carrying the
		// validation error that rejects it alone.
		var env struct {
			Events []json.RawMessage `json:"events"`
		}
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("%q decodes as a batch but its events do not: %v", body, err)
			}
		}
		if len(in.Events) != len(env.Events) {
			t.Fatalf("%q: %d items, the body has %d", body, len(in.Events), len(env.Events))
		}
		for i, it := range in.Events {
			if it.Err == nil && strictjson.CheckJSONItem(env.Events[i], "events") != nil {
				t.Fatalf("item %d of %q is not strict JSON, and is accepted", i, body)
			}
			if it.Err != nil {
				decodeErrorKind(t, env.Events[i], it.Err)
				if model.IsKind(it.Err, model.KindInvalidJSON) {
					t.Fatalf("item %d of %q: %v: a whole-body error on one item", i, body, it.Err)
				}
			}
		}
	})
}

func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "limit=50", "limit=0", "limit=-1", "limit=501", "limit=9999999999999999999999",
		"limit=1e3", "limit=+7", "limit= 7", "cursor=AZ_-", "limit=2&limit=3", "since=2026-06-09T10:11:12.345Z",
		"until=2026-06-09T10:11:12+02:00", "since=x", "until=0000-01-01T00:00:00%2B01:00", "%zz", "since=1969-12-31T23:59:59Z"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/v1/events", RawQuery: rawQuery}}
		q := r.URL.Query()
		p, err := pageOf(r)
		if err != nil {
			AssertField(t, err, "limit")
		} else {
			if p.Limit < 1 || p.Limit > maxLimit || p.Cursor != q.Get("cursor") {
				t.Fatalf("pageOf(%q) = %+v", rawQuery, p)
			}
			if n, err := strconv.Atoi(q.Get("limit")); err == nil && p.Limit != min(n, maxLimit) {
				t.Fatalf("pageOf(%q) = %+v, want limit %d", rawQuery, p, min(n, maxLimit))
			} else if q.Get("limit") == "" && p.Limit != defaultLimit {
				t.Fatalf("pageOf(%q) = %+v, want the default limit", rawQuery, p)
			}
		}
		for _, name := range []string{"since", "until"} {
			tm, err := queryTime(r, name)
			switch {
			case err != nil:
				AssertField(t, err, name)
			case q.Get(name) == "" && tm != nil, q.Get(name) != "" && tm == nil:
				t.Fatalf("queryTime(%q, %s) = %v", rawQuery, name, tm)
			case tm != nil:
				// The instant survives being written in RFC 3339 and read again.
				back, err := time.Parse(time.RFC3339Nano, tm.Format(time.RFC3339Nano))
				if tm.Year() >= 0 && tm.Year() <= 9999 && (err != nil || !back.Equal(*tm)) {
					t.Fatalf("queryTime(%q, %s) = %v, written back reads %v, %v", rawQuery, name, tm, back, err)
				}
			}
		}
	})
}

// AssertField fails unless err is a validation_error naming field.
func AssertField(t *testing.T, err error, field string) {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != field {
		t.Fatalf("error %#v, want a validation_error on %s", err, field)
	}
}
