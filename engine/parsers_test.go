package engine_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
)

// wantPayloadErr checks that err is a validation_error naming field.
func wantPayloadErr(t *testing.T, err error, field string) {
	t.Helper()
	var e *engine.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v, want a validation_error on %s", err, field)
	}
	if e.Kind != engine.KindValidation || e.Field != field || e.Msg == "" {
		t.Fatalf("error kind %q field %q msg %q, want validation_error on %s", e.Kind, e.Field, e.Msg, field)
	}
}

func TestParsePayloadNoPayload(t *testing.T) {
	for _, raw := range []string{"", "null", "  null ", "{}", `{"note": "nothing we read"}`,
		`{"lat": null, "lng": null, "location": null, "required_equipment": null, "severity": null}`} {
		got, err := engine.ParsePayload("healthcare", json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got.Lat != nil || got.Lng != nil || got.RequiredEquipment != nil || got.Severity != "" {
			t.Fatalf("%q: %+v, want nothing", raw, got)
		}
	}
	if got, err := engine.ParsePayload("healthcare", nil); err != nil || got.Lat != nil {
		t.Fatalf("nil payload: %+v, %v", got, err)
	}
}

func TestParsePayloadLocation(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		lat, lng      float64
	}{
		{"LatLng", `{"lat": 45.764, "lng": 4.8357}`, 45.764, 4.8357},
		{"LatLngIntegers", `{"lat": -33, "lng": 151}`, -33, 151},
		{"LatLngExponent", `{"lat": 4.5e1, "lng": -4.8e0}`, 45, -4.8},
		{"LatLngBounds", `{"lat": -90, "lng": 180}`, -90, 180},
		{"LatitudeLongitude", `{"latitude": 48.8566, "longitude": 2.3522}`, 48.8566, 2.3522},
		{"LocationPoint", `{"location": {"type": "Point", "coordinates": [2.3522, 48.8566]}}`, 48.8566, 2.3522},
		{"LocationPointAltitude", `{"location": {"type": "Point", "coordinates": [2.3522, 48.8566, 35]}}`, 48.8566, 2.3522},
		{"GeometryPoint", `{"geometry": {"type": "Point", "coordinates": [-0.1276, 51.5072]}}`, 51.5072, -0.1276},
		{"LatLngWinsOverLatitude", `{"lat": 1, "lng": 2, "latitude": 3, "longitude": 4}`, 1, 2},
		{"LatitudeWinsOverLocation", `{"latitude": 3, "longitude": 4, "location": {"type": "Point", "coordinates": [6, 5]}}`, 3, 4},
		{"LocationWinsOverGeometry", `{"location": {"type": "Point", "coordinates": [6, 5]}, "geometry": "ignored"}`, 5, 6},
		{"NullPairFallsThrough", `{"lat": null, "lng": null, "latitude": 7, "longitude": 8}`, 7, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := engine.ParsePayload("emergency", json.RawMessage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if got.Lat == nil || got.Lng == nil || *got.Lat != tc.lat || *got.Lng != tc.lng {
				t.Fatalf("position %v,%v, want %v,%v", got.Lat, got.Lng, tc.lat, tc.lng)
			}
		})
	}
}

func TestParsePayloadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, payload, field string
	}{
		{"Array", `[1, 2]`, "payload"},
		{"String", `"lat=45"`, "payload"},
		{"Number", `42`, "payload"},
		{"Bool", `true`, "payload"},
		{"Truncated", `{"lat": 45`, "payload"},

		{"LatString", `{"lat": "45.7", "lng": 4.8}`, "payload.lat"},
		{"LngString", `{"lat": 45.7, "lng": "4.8"}`, "payload.lng"},
		{"LatBool", `{"lat": true, "lng": 4.8}`, "payload.lat"},
		{"LatObject", `{"lat": {}, "lng": 4.8}`, "payload.lat"},
		{"LatTooBig", `{"lat": 90.0001, "lng": 4.8}`, "payload.lat"},
		{"LatTooSmall", `{"lat": -91, "lng": 4.8}`, "payload.lat"},
		{"LngTooBig", `{"lat": 45, "lng": 180.5}`, "payload.lng"},
		{"LatOverflow", `{"lat": 1e400, "lng": 4.8}`, "payload.lat"},
		{"LatWithoutLng", `{"lat": 45.7}`, "payload.lng"},
		{"LngWithoutLat", `{"lng": 4.8}`, "payload.lat"},
		{"LngNullLat", `{"lat": 45.7, "lng": null}`, "payload.lng"},
		{"LatWithoutLngDespiteLatitude", `{"lat": 45.7, "latitude": 1, "longitude": 2}`, "payload.lng"},

		{"LatitudeString", `{"latitude": "45.7", "longitude": 4.8}`, "payload.latitude"},
		{"LongitudeString", `{"latitude": 45.7, "longitude": "4.8"}`, "payload.longitude"},
		{"LatitudeRange", `{"latitude": 145.7, "longitude": 4.8}`, "payload.latitude"},
		{"LongitudeRange", `{"latitude": 45.7, "longitude": -181}`, "payload.longitude"},
		{"LatitudeWithoutLongitude", `{"latitude": 45.7}`, "payload.longitude"},
		{"LongitudeWithoutLatitude", `{"longitude": 4.8}`, "payload.latitude"},

		{"LocationString", `{"location": "Building A"}`, "payload.location"},
		{"LocationArray", `{"location": [4.8, 45.7]}`, "payload.location"},
		{"LocationNotPoint", `{"location": {"type": "Polygon", "coordinates": [4.8, 45.7]}}`, "payload.location"},
		{"LocationNoType", `{"location": {"coordinates": [4.8, 45.7]}}`, "payload.location"},
		{"LocationOneCoordinate", `{"location": {"type": "Point", "coordinates": [4.8]}}`, "payload.location"},
		{"LocationFourCoordinates", `{"location": {"type": "Point", "coordinates": [4.8, 45.7, 1, 2]}}`, "payload.location"},
		{"LocationStringCoordinates", `{"location": {"type": "Point", "coordinates": ["4.8", "45.7"]}}`, "payload.location"},
		{"LocationNullCoordinates", `{"location": {"type": "Point", "coordinates": null}}`, "payload.location"},
		{"LocationLatRange", `{"location": {"type": "Point", "coordinates": [4.8, 95]}}`, "payload.location"},
		{"LocationLngRange", `{"location": {"type": "Point", "coordinates": [-200, 45]}}`, "payload.location"},
		{"GeometryBad", `{"geometry": {"type": "Point", "coordinates": {"lat": 1}}}`, "payload.geometry"},

		{"EquipmentNumber", `{"required_equipment": 3}`, "payload.required_equipment"},
		{"EquipmentObject", `{"required_equipment": {"defibrillator": true}}`, "payload.required_equipment"},
		{"EquipmentBool", `{"required_equipment": true}`, "payload.required_equipment"},
		{"EquipmentNumberItem", `{"required_equipment": ["ladder", 2]}`, "payload.required_equipment"},
		{"EquipmentNullItem", `{"required_equipment": ["ladder", null]}`, "payload.required_equipment"},
		{"EquipmentNestedArray", `{"required_equipment": [["ladder"]]}`, "payload.required_equipment"},
		{"EquipmentEmptyItem", `{"required_equipment": ["ladder", "  "]}`, "payload.required_equipment"},
		{"EquipmentTooLongItem", `{"required_equipment": ["` + strings.Repeat("x", 65) + `"]}`, "payload.required_equipment"},
		{"EquipmentTooLongPiece", `{"required_equipment": "ladder,` + strings.Repeat("é", 65) + `"}`, "payload.required_equipment"},
		{"EquipmentTooMany", `{"required_equipment": [` + strings.Repeat(`"a",`, 50) + `"b"]}`, "payload.required_equipment"},
		{"EquipmentTooManyPieces", `{"required_equipment": "` + strings.Repeat(`a,`, 50) + `b"}`, "payload.required_equipment"},

		{"SeverityNumber", `{"severity": 1}`, "payload.severity"},
		{"SeverityBool", `{"severity": true}`, "payload.severity"},
		{"SeverityArray", `{"severity": ["high"]}`, "payload.severity"},
		{"SeverityUnknown", `{"severity": "catastrophic"}`, "payload.severity"},
		{"SeverityEmpty", `{"severity": ""}`, "payload.severity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := engine.ParsePayload("telecom", json.RawMessage(tc.payload))
			wantPayloadErr(t, err, tc.field)
			if got.Lat != nil || got.RequiredEquipment != nil || got.Severity != "" {
				t.Fatalf("an error came with a result: %+v", got)
			}
		})
	}
}

func TestParsePayloadEquipment(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		want          []string
	}{
		{"Array", `{"required_equipment": ["ladder", "defibrillator"]}`, []string{"defibrillator", "ladder"}},
		{"ArrayNormalised", `{"required_equipment": [" Ladder ", "LADDER", "AED", "aed", "Thermal Camera"]}`,
			[]string{"aed", "ladder", "thermal camera"}},
		{"ArrayEscapes", `{"required_equipment": ["O\u2082 kit", "stretcher\t"]}`, []string{"o₂ kit", "stretcher"}},
		{"CommaString", `{"required_equipment": "ladder, Defibrillator ,ladder"}`, []string{"defibrillator", "ladder"}},
		{"CommaStringEmptyPieces", `{"required_equipment": ",ladder,, ,"}`, []string{"ladder"}},
		{"SingleString", `{"required_equipment": "4x4"}`, []string{"4x4"}},
		{"EmptyArray", `{"required_equipment": []}`, nil},
		{"EmptyString", `{"required_equipment": ""}`, nil},
		{"Null", `{"required_equipment": null}`, nil},
		{"FiftyItems", `{"required_equipment": [` + strings.Repeat(`"a",`, 49) + `"b"]}`, []string{"a", "b"}},
		{"SixtyFourChars", `{"required_equipment": ["` + strings.Repeat("é", 64) + `"]}`, []string{strings.Repeat("é", 64)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := engine.ParsePayload("logistics", json.RawMessage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.RequiredEquipment, tc.want) || (tc.want == nil) != (got.RequiredEquipment == nil) {
				t.Fatalf("required_equipment %#v, want %#v", got.RequiredEquipment, tc.want)
			}
		})
	}
}

func TestParsePayloadSeverity(t *testing.T) {
	levels := map[string]string{"critical": "critical", "high": "high", "medium": "medium", "low": "low",
		"CRITICAL": "critical", " High ": "high", "Medium": "medium", "lOw": "low"}
	incident := map[string]string{"major": "high", "MAJOR": "high", "minor": "low", "Minor": "low",
		"sev1": "critical", "SEV2": "high", "sev3": "medium", "Sev4": "low"}
	triage := map[string]string{"red": "critical", "Orange": "high", "YELLOW": "medium", "green": "low",
		"1": "critical", "2": "high", "3": "medium", " 4 ": "low"}
	priority := map[string]string{"p1": "critical", "P2": "high", "p3": "medium", "P4": "low"}
	allSynonyms := []map[string]string{incident, triage, priority}
	for _, tc := range []struct {
		vertical string
		accepts  map[string]string
		numeric  bool
	}{
		{"healthcare", triage, true},
		{"emergency", priority, false},
		{"telecom", incident, false},
		{"banking", incident, false},
		{"gov", incident, false},
		{"logistics", incident, false},
		{"delivery", incident, false},
		{"mining", nil, false}, // a custom vertical: the generic parser
	} {
		t.Run(tc.vertical, func(t *testing.T) {
			parse := func(raw string) (string, error) {
				got, err := engine.ParsePayload(tc.vertical, json.RawMessage(`{"severity": `+raw+`}`))
				return got.Severity, err
			}
			for in, want := range levels {
				if got, err := parse(`"` + in + `"`); err != nil || got != want {
					t.Errorf("%q → %q, %v; want %q", in, got, err, want)
				}
			}
			for in, want := range tc.accepts {
				if got, err := parse(`"` + in + `"`); err != nil || got != want {
					t.Errorf("%q → %q, %v; want %q", in, got, err, want)
				}
			}
			for _, other := range allSynonyms {
				for in := range other {
					if _, ok := tc.accepts[in]; ok {
						continue
					}
					if _, ok := tc.accepts[strings.ToLower(strings.TrimSpace(in))]; ok {
						continue
					}
					_, err := parse(`"` + in + `"`)
					wantPayloadErr(t, err, "payload.severity")
				}
			}
			for _, in := range []string{`"urgent"`, `"sev5"`, `"p0"`, `"5"`, `"0"`, `""`, `"hi gh"`, `true`, `{}`, `[]`} {
				_, err := parse(in)
				wantPayloadErr(t, err, "payload.severity")
			}
			for i, want := range []string{"critical", "high", "medium", "low"} {
				raw := string(rune('1' + i))
				got, err := parse(raw)
				if !tc.numeric {
					wantPayloadErr(t, err, "payload.severity")
					continue
				}
				if err != nil || got != want {
					t.Errorf("%s → %q, %v; want %q", raw, got, err, want)
				}
			}
			if tc.numeric {
				if got, err := parse(`2.0`); err != nil || got != "high" {
					t.Errorf("2.0 → %q, %v", got, err)
				}
				for _, in := range []string{`0`, `5`, `1.5`, `-1`, `1e400`} {
					_, err := parse(in)
					wantPayloadErr(t, err, "payload.severity")
				}
			}
		})
	}
}

func TestParsePayloadSeverityErrorListsAccepted(t *testing.T) {
	_, err := engine.ParsePayload("healthcare", json.RawMessage(`{"severity": "purple"}`))
	wantPayloadErr(t, err, "payload.severity")
	msg := err.(*engine.Error).Msg
	for _, v := range []string{"critical", "low", "red", "green", "1", "4"} {
		if !strings.Contains(msg, v) {
			t.Errorf("message %q does not list %q", msg, v)
		}
	}
}

func TestParsePayloadAll(t *testing.T) {
	got, err := engine.ParsePayload("healthcare", json.RawMessage(benchPayload))
	if err != nil {
		t.Fatal(err)
	}
	if got.Lat == nil || *got.Lat != 45.76404 || *got.Lng != 4.83566 || got.Severity != "high" ||
		!slices.Equal(got.RequiredEquipment, []string{"defibrillator", "oxygen", "stretcher"}) {
		t.Fatalf("%+v", got)
	}
}

func TestParsers(t *testing.T) {
	t.Run("Standard", func(t *testing.T) {
		got := engine.Parsers(nil)
		want := slices.Sorted(slices.Values(engine.StandardVerticals))
		if len(got) != len(want) {
			t.Fatalf("%d parsers, want %d: %+v", len(got), len(want), got)
		}
		for i, p := range got {
			if p.Vertical != want[i] || p.Name != want[i]+".v1" || p.Description == "" {
				t.Errorf("parser %d: %+v, want %s.v1", i, p, want[i])
			}
			if !slices.Equal(p.Severities[:4], []string{"critical", "high", "medium", "low"}) || len(p.Severities) <= 4 {
				t.Errorf("%s severities %v", p.Vertical, p.Severities)
			}
			if !slices.Contains(p.Location, "lat/lng") || !slices.Contains(p.Location, "location: GeoJSON Point") ||
				!slices.Contains(p.Fields, "required_equipment") || !slices.Contains(p.Fields, "severity") {
				t.Errorf("%s: %+v", p.Vertical, p)
			}
		}
	})
	t.Run("Custom", func(t *testing.T) {
		got := engine.Parsers([]string{"telecom", "mining", "agri", "mining", "healthcare"})
		var verticals []string
		for _, p := range got {
			verticals = append(verticals, p.Vertical)
		}
		want := []string{"agri", "banking", "delivery", "emergency", "gov", "healthcare", "logistics", "mining", "telecom"}
		if !slices.Equal(verticals, want) {
			t.Fatalf("verticals %v, want %v", verticals, want)
		}
		for _, p := range got {
			if p.Vertical == "agri" || p.Vertical == "mining" {
				if p.Name != "generic.v1" || !slices.Equal(p.Severities, []string{"critical", "high", "medium", "low"}) {
					t.Errorf("custom %+v", p)
				}
			}
		}
	})
	t.Run("CallersCannotChangeTheTable", func(t *testing.T) {
		engine.Parsers(nil)[0].Severities[0] = "changed"
		if engine.Parsers(nil)[0].Severities[0] != "critical" {
			t.Fatal("a caller changed the parser table")
		}
	})
	t.Run("SeveritiesAreAccepted", func(t *testing.T) {
		for _, p := range engine.Parsers([]string{"mining"}) {
			for _, s := range p.Severities {
				raw, _ := json.Marshal(map[string]string{"severity": s})
				if got, err := engine.ParsePayload(p.Vertical, raw); err != nil || got.Severity == "" {
					t.Errorf("%s lists %q but parses it to %q, %v", p.Vertical, s, got.Severity, err)
				}
			}
		}
	})
}

func FuzzParsePayload(f *testing.F) {
	for _, seed := range []string{benchPayload, `{}`, `null`, `[]`, `{"lat": 1, "lng": 2}`,
		`{"latitude": "1", "longitude": 2}`, `{"location": {"type": "Point", "coordinates": [1, 2, 3]}}`,
		`{"required_equipment": "a,B, c"}`, `{"severity": 3}`, `{"severity": "P1"}`} {
		f.Add("healthcare", []byte(seed))
		f.Add("emergency", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, vertical string, payload []byte) {
		got, err := engine.ParsePayload(vertical, payload)
		if err != nil {
			var e *engine.Error
			if !errors.As(err, &e) || e.Kind != engine.KindValidation || (e.Field != "payload" && !strings.HasPrefix(e.Field, "payload.")) {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if (got.Lat == nil) != (got.Lng == nil) {
			t.Fatalf("one coordinate: %+v", got)
		}
		if got.Lat != nil && !engine.ValidLatLng(*got.Lat, *got.Lng) {
			t.Fatalf("out of range: %v,%v", *got.Lat, *got.Lng)
		}
		if got.Severity != "" && !slices.Contains([]string{"critical", "high", "medium", "low"}, got.Severity) {
			t.Fatalf("severity %q", got.Severity)
		}
		eq := got.RequiredEquipment
		if eq != nil && len(eq) == 0 || len(eq) > 50 || !slices.IsSorted(eq) || len(slices.Compact(slices.Clone(eq))) != len(eq) {
			t.Fatalf("required_equipment %#v", eq)
		}
		for _, s := range eq {
			if s == "" || s != strings.ToLower(strings.TrimSpace(s)) {
				t.Fatalf("required_equipment item %q", s)
			}
		}
	})
}

// benchPayload is a realistic event payload of about 400 bytes.
const benchPayload = `{
  "patient_ref": "P-2026-004512",
  "reported_by": "ambulance-17",
  "description": "Fall from height at construction site, conscious, suspected fracture of the left leg",
  "lat": 45.76404,
  "lng": 4.83566,
  "address": "12 rue de la Republique, 69002 Lyon",
  "severity": "Orange",
  "required_equipment": ["Stretcher", "oxygen", "defibrillator"],
  "contact": {"name": "J. Martin", "phone": "+33612345678"},
  "tags": ["trauma", "outdoor"]
}`

func BenchmarkParsePayload(b *testing.B) {
	raw := json.RawMessage(benchPayload)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.ParsePayload("healthcare", raw); err != nil {
			b.Fatal(err)
		}
	}
}
