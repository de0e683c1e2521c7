package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
	"github.com/go-json-experiment/json/jsontext"
)

func TestCheckJSON(t *testing.T) {
	for _, c := range []struct {
		in, want string // want: "" for nil, else a fragment of the message
	}{
		{`{"type":"x","priority":"low"}`, ""},
		{`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, ""},
		{`{"a":"\ud83d\ude00 é \u00e9"}`, ""},
		{"{\"a\":\"\xe2\x82\xac\"}", ""},
		{`{"priority":"low","priority":"critical"}`, `the body has the key "priority" twice in one object (again at byte offset 18)`},
		{`{"priority":"low","\u0070riority":"critical"}`, `the key "priority" twice`},
		{`{"payload":{"x":1,"x":2}}`, `the key "x" twice in the object /payload (again at byte offset 18)`},
		{`{"a":[{"k":1},{"b":{"k":1,"k":2}}]}`, `twice in the object /a/1/b`},
		{"{\"type\":\"A\xff\xfe\"}", "the body is not valid UTF-8: byte 0xff at byte offset 10 (in /type)"},
		{"{\"p\":{\"k\xff\":1}}", "not valid UTF-8: byte 0xff at byte offset 8 (in /p)"},
		{`{"type":"\udc00"}`, `the body holds \udc00 at byte offset 9 (in /type), a UTF-16 surrogate that does not pair`},
		{`{"type":"\ud800x"}`, `holds \ud800 at byte offset 9`},
		{`{"type":"\ud800\u0041"}`, `holds \ud800`},
		{`["\ud800\udbff"]`, `holds \ud800 at byte offset 2 (in /0)`},
		// Syntax errors are the decoder's to report; a problem before one is reported.
		{`{"a":1,"a"`, `the key "a" twice`},
		{"{\"a\":1 \xff", ""},
		{`{"a":1}{"a":1}`, ""},
		{`{"a":tru}`, ""},
		{``, ""},
	} {
		err := strictjson.CheckJSON([]byte(c.in))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckJSON(%q) = %v, want nil", c.in, err)
		case c.want != "" && (!model.IsKind(err, model.KindInvalidJSON) || !strings.Contains(err.(*model.Error).Msg, c.want)):
			t.Errorf("CheckJSON(%q) = %v, want invalid_json with %q", c.in, err, c.want)
		}
	}
}

func TestCheckJSONManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 1000 {
		b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `":1,`)
		_ = i
	}
	body := b.String()
	// 1000 keys, many repeated: the map takes over after linearKeys and still finds them.
	if err := strictjson.CheckJSON([]byte(body + `"z":1}`)); err == nil {
		t.Fatal("a repeated key among 1000 was not found")
	}
	var u strings.Builder
	u.WriteString(`{`)
	for i := range 1000 {
		if i > 0 {
			u.WriteString(",")
		}
		raw, _ := json.Marshal(strings.Repeat("k", i%3) + string(rune(0x4e00+i)))
		u.Write(raw)
		u.WriteString(":1")
	}
	u.WriteString(`,"\u4e00":2}`)
	err := strictjson.CheckJSON([]byte(u.String()))
	if !model.IsKind(err, model.KindInvalidJSON) || !strings.Contains(err.Error(), `"一" twice`) {
		t.Fatalf("an escaped repeat after 1000 keys: %v", err)
	}
}

func TestCheckJSONEnvelopeAndItem(t *testing.T) {
	body := []byte("{\"events\":[{\"type\":\"\xff\"},{\"a\":1,\"a\":2}],\"device_id\":\"d\"}")
	if err := strictjson.CheckJSONEnvelope(body, "events"); err != nil {
		t.Fatalf("problems inside items are the items': %v", err)
	}
	if err := strictjson.CheckJSONEnvelope([]byte(`{"events":[],"device_id":"a","device_id":"b"}`), "events"); !model.IsKind(err, model.KindInvalidJSON) {
		t.Fatalf("a repeated envelope key: %v", err)
	}
	if err := strictjson.CheckJSONEnvelope([]byte("{\"x\":[\"\xff\"],\"events\":[]}"), "events"); !model.IsKind(err, model.KindInvalidJSON) {
		t.Fatalf("invalid UTF-8 outside the items: %v", err)
	}
	for in, field := range map[string]string{
		`{"type":"\udc00"}`: "type", `{"payload":{"a":1,"a":2}}`: "payload", `{"type":"x","type":"y"}`: "type",
		"{\"k\xff\":1}": "events",
	} {
		err := strictjson.CheckJSONItem([]byte(in), "events")
		var e *model.Error
		if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != field || !strings.HasPrefix(e.Msg, "the item ") {
			t.Errorf("CheckJSONItem(%q) = %#v, want a validation_error on %s", in, err, field)
		}
	}
}

// FuzzCheckJSON holds CheckJSON to jsontext (the JSON text layer of encoding/json/v2),
// which checks I-JSON by default: on JSON that encoding/json accepts, CheckJSON refuses
// exactly what jsontext refuses.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, "\"\xff\"", `"\udc00"`, `"\ud83d\ude00"`,
		`[{"a":[{"b":1,"b":1}]}]`, `{"a":{"b":1},"b":{"a":1}}`, `{"":1,"":2}`, `{"a\u0000":1,"a":2}`, "{\"a\":\"\xed\xa0\x80\"}",
		`{"e":[{"a":1,"a":2}],"b":1}`, "{\"e\":[\"\xff\"],\"e\":[]}", `{"x":{"e":[{"a":1,"a":1}]}}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"ka":10,"kb":11,"kc":12,"kd":13,"ke":14,"kf":15,"kg":16,"k0":17}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := strictjson.CheckJSON(b)
		if err != nil && !model.IsKind(err, model.KindInvalidJSON) {
			t.Fatalf("CheckJSON(%q) = %#v", b, err)
		}
		if !json.Valid(b) {
			return
		}
		if want := jsontext.Value(b).IsValid(); (err == nil) != want {
			t.Fatalf("CheckJSON(%q) = %v; jsontext says valid=%v", b, err, want)
		}
		// The envelope and its items, checked apart, refuse what the whole check refuses.
		envErr := strictjson.CheckJSONEnvelope(b, "e")
		if envErr != nil && err == nil {
			t.Fatalf("CheckJSONEnvelope(%q) = %v, but the whole body passes", b, envErr)
		}
		if envErr != nil || err == nil {
			return
		}
		var m map[string]json.RawMessage
		var items []json.RawMessage
		if json.Unmarshal(b, &m) != nil || json.Unmarshal(m["e"], &items) != nil {
			return
		}
		for _, it := range items {
			if strictjson.CheckJSONItem(it, "e") != nil {
				return
			}
		}
		t.Fatalf("%q: the envelope and every item pass, the whole body does not: %v", b, err)
	})
}

// BenchmarkCheckJSON checks the body of BenchmarkIngestEvents (server/bench_test.go).
func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(`{"type":"MEDICAL_EMERGENCY","priority":"high","vertical":"healthcare","idempotency_key":"bench-1",` +
		`"payload":{"lat":45.7001,"lng":4.8001,"severity":"high","required_equipment":["defibrillator","stretcher"],"description":"` +
		strings.Repeat("x", 260) + `"}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := strictjson.CheckJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
