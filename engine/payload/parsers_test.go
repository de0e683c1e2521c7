package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/payload"
)

// wantPayloadErr checks that err is a validation_error naming field.
func wantPayloadErr(t *testing.T, err error, field string) {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v, want a validation_error on %s", err, field)
	}
	if e.Kind != model.KindValidation || e.Field != field || e.Msg == "" {
		t.Fatalf("error kind %q field %q msg %q, want validation_error on %s", e.Kind, e.Field, e.Msg, field)
	}
}

// wantWarnings checks that a parse succeeded with one warning per field of fields, in
// order, each naming its field first and ending in "ignored".
func wantWarnings(t *testing.T, got payload.ParsedPayload, err error, fields ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v, want warnings on %v", err, fields)
	}
	if len(got.Warnings) != len(fields) {
		t.Fatalf("warnings %q, want one on each of %v", got.Warnings, fields)
	}
	for i, w := range got.Warnings {
		if !strings.HasPrefix(w, fields[i]+" ") || !strings.HasSuffix(w, "ignored") {
			t.Fatalf("warning %q, want a sentence on %s ending in ignored", w, fields[i])
		}
	}
}

func TestParsePayloadNoPayload(t *testing.T) {
	for _, raw := range []string{"", "null", "  null ", "{}", `{"note": "nothing we read"}`,
		`{"lat": null, "lng": null, "location": null, "required_equipment": null, "severity": null}`} {
		got, err := payload.Parse("healthcare", json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got.Lat != nil || got.Lng != nil || got.RequiredEquipment != nil || got.Severity != "" || got.Warnings != nil {
			t.Fatalf("%q: %+v, want nothing", raw, got)
		}
	}
	if got, err := payload.Parse("healthcare", nil); err != nil || got.Lat != nil {
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
		{"LatLngNumericStrings", `{"lat": "45.7", "lng": " -4.8 "}`, 45.7, -4.8},
		{"LatLngStringExponent", `{"lat": "4.5e1", "lng": "-0"}`, 45, 0},
		{"LatitudeLongitudeStrings", `{"latitude": "48.8566", "longitude": 2.3522}`, 48.8566, 2.3522},
		{"LaterFormsNotRead", `{"lat": 1, "lng": 2, "location": "Lyon gare", "geometry": {"type": "LineString"}}`, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := payload.Parse("emergency", json.RawMessage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if got.Lat == nil || got.Lng == nil || *got.Lat != tc.lat || *got.Lng != tc.lng {
				t.Fatalf("position %v,%v, want %v,%v", got.Lat, got.Lng, tc.lat, tc.lng)
			}
			if got.Warnings != nil {
				t.Fatalf("warnings %q", got.Warnings)
			}
		})
	}
}

// TestParsePayloadNotObject: the one payload refused is one that is not a JSON object.
func TestParsePayloadNotObject(t *testing.T) {
	for _, tc := range []struct{ name, payload string }{
		{"Array", `[1, 2]`},
		{"EmptyArray", `[]`},
		{"String", `"lat=45"`},
		{"Number", `42`},
		{"True", `true`},
		{"False", `false`},
		{"Truncated", `{"lat": 45`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := payload.Parse("telecom", json.RawMessage(tc.payload))
			wantPayloadErr(t, err, "payload")
			if got.Lat != nil || got.RequiredEquipment != nil || got.Severity != "" || got.Warnings != nil {
				t.Fatalf("an error came with a result: %+v", got)
			}
		})
	}
}

// TestParsePayloadWarnings: a field the parser reads, in a form it cannot use, never
// refuses the payload: it is ignored, with a warning naming it, and the rest is read.
func TestParsePayloadWarnings(t *testing.T) {
	type pos struct{ lat, lng float64 }
	for _, tc := range []struct {
		name, payload string
		warned        []string // the fields warned about, in order
		at            *pos     // the position read despite the warnings, if any
	}{
		{"LatNotNumber", `{"lat": "north", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LngNotNumber", `{"lat": 45.7, "lng": "4,8"}`, []string{"payload.lng"}, nil},
		{"LatLngBothBad", `{"lat": true, "lng": {}}`, []string{"payload.lat", "payload.lng"}, nil},
		{"LatObject", `{"lat": {}, "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatHex", `{"lat": "0x2D", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatInf", `{"lat": "Inf", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatWithSuffix", `{"lat": "45.7N", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatEmptyString", `{"lat": "", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatTooBig", `{"lat": 90.0001, "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatTooBigString", `{"lat": "95", "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatTooSmall", `{"lat": -91, "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatNinetyFive", `{"lat": 95, "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LngTooBig", `{"lat": 45, "lng": 180.5}`, []string{"payload.lng"}, nil},
		{"LatOverflow", `{"lat": 1e400, "lng": 4.8}`, []string{"payload.lat"}, nil},
		{"LatAlone", `{"lat": 45.7}`, []string{"payload.lat"}, nil},
		{"LngAlone", `{"lng": 4.8}`, []string{"payload.lng"}, nil},
		{"LngNull", `{"lat": 45.7, "lng": null}`, []string{"payload.lat"}, nil},
		{"LatitudeString", `{"latitude": "x", "longitude": 4.8}`, []string{"payload.latitude"}, nil},
		{"LongitudeRange", `{"latitude": 45.7, "longitude": -181}`, []string{"payload.longitude"}, nil},
		{"LatitudeAlone", `{"latitude": 45.7}`, []string{"payload.latitude"}, nil},

		{"LocationString", `{"location": "Lyon gare"}`, []string{"payload.location"}, nil},
		{"LocationArray", `{"location": [4.8, 45.7]}`, []string{"payload.location"}, nil},
		{"LocationNotPoint", `{"location": {"type": "Polygon", "coordinates": [4.8, 45.7]}}`, []string{"payload.location"}, nil},
		{"LocationNoType", `{"location": {"coordinates": [4.8, 45.7]}}`, []string{"payload.location"}, nil},
		{"LocationOneCoordinate", `{"location": {"type": "Point", "coordinates": [4.8]}}`, []string{"payload.location"}, nil},
		{"LocationFourCoordinates", `{"location": {"type": "Point", "coordinates": [4.8, 45.7, 1, 2]}}`, []string{"payload.location"}, nil},
		{"LocationStringCoordinates", `{"location": {"type": "Point", "coordinates": ["4.8", "45.7"]}}`, []string{"payload.location"}, nil},
		{"LocationNullCoordinates", `{"location": {"type": "Point", "coordinates": null}}`, []string{"payload.location"}, nil},
		{"LocationLatRange", `{"location": {"type": "Point", "coordinates": [4.8, 95]}}`, []string{"payload.location"}, nil},
		{"LocationLngRange", `{"location": {"type": "Point", "coordinates": [-200, 45]}}`, []string{"payload.location"}, nil},
		{"GeometryLineString", `{"geometry": {"type": "LineString"}}`, []string{"payload.geometry"}, nil},
		{"GeometryBad", `{"geometry": {"type": "Point", "coordinates": {"lat": 1}}}`, []string{"payload.geometry"}, nil},

		// An unusable form gives way to the next usable one.
		{"LatAloneThenLatitude", `{"lat": 45.7, "latitude": 1, "longitude": 2}`, []string{"payload.lat"}, &pos{1, 2}},
		{"BadLatThenLocation", `{"lat": 95, "lng": 4.8, "location": {"type": "Point", "coordinates": [4.8, 45.7]}}`,
			[]string{"payload.lat"}, &pos{45.7, 4.8}},
		{"LocationTextThenGeometry", `{"location": "Lyon gare", "geometry": {"type": "Point", "coordinates": [4.8, 45.7]}}`,
			[]string{"payload.location"}, &pos{45.7, 4.8}},
		{"EveryFormBad", `{"lat": "a", "lng": 1, "latitude": 1, "location": "x", "geometry": 3}`,
			[]string{"payload.lat", "payload.latitude", "payload.location", "payload.geometry"}, nil},

		{"EquipmentNumbers", `{"required_equipment": [1, 2]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentNumber", `{"required_equipment": 3}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentObject", `{"required_equipment": {"defibrillator": true}}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentBool", `{"required_equipment": true}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentNumberItem", `{"required_equipment": ["ladder", 2]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentNullItem", `{"required_equipment": ["ladder", null]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentNestedArray", `{"required_equipment": [["ladder"]]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentEmptyItem", `{"required_equipment": ["ladder", "  "]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentTooLongItem", `{"required_equipment": ["` + strings.Repeat("x", 65) + `"]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentTooLongPiece", `{"required_equipment": "ladder,` + strings.Repeat("é", 65) + `"}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentTooMany", `{"required_equipment": [` + strings.Repeat(`"a",`, 50) + `"b"]}`, []string{"payload.required_equipment"}, nil},
		{"EquipmentTooManyPieces", `{"required_equipment": "` + strings.Repeat(`a,`, 50) + `b"}`, []string{"payload.required_equipment"}, nil},

		{"SeverityUrgent", `{"severity": "urgent"}`, []string{"payload.severity"}, nil},
		{"SeverityNumber", `{"severity": 1}`, []string{"payload.severity"}, nil},
		{"SeverityBool", `{"severity": true}`, []string{"payload.severity"}, nil},
		{"SeverityArray", `{"severity": ["high"]}`, []string{"payload.severity"}, nil},
		{"SeverityEmpty", `{"severity": ""}`, []string{"payload.severity"}, nil},

		{"AllAtOnce", `{"lat": "45.7", "lng": 400, "required_equipment": [1], "severity": "urgent", "note": "kept"}`,
			[]string{"payload.lng", "payload.required_equipment", "payload.severity"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := payload.Parse("telecom", json.RawMessage(tc.payload))
			wantWarnings(t, got, err, tc.warned...)
			switch {
			case tc.at == nil && got.Lat != nil:
				t.Fatalf("position %v,%v read from an unusable form", *got.Lat, *got.Lng)
			case tc.at != nil && (got.Lat == nil || *got.Lat != tc.at.lat || *got.Lng != tc.at.lng):
				t.Fatalf("position %v,%v, want %v", got.Lat, got.Lng, *tc.at)
			}
			if got.RequiredEquipment != nil || got.Severity != "" {
				t.Fatalf("an ignored field came with a result: %+v", got)
			}
		})
	}
}

// TestParsePayloadWarningsKeepTheRest: a field ignored does not hide the usable ones.
func TestParsePayloadWarningsKeepTheRest(t *testing.T) {
	got, err := payload.Parse("healthcare", json.RawMessage(
		`{"lat": 45.7, "lng": 4.8, "required_equipment": "Ladder", "severity": "purple"}`))
	wantWarnings(t, got, err, "payload.severity")
	if got.Lat == nil || *got.Lat != 45.7 || !slices.Equal(got.RequiredEquipment, []string{"ladder"}) || got.Severity != "" {
		t.Fatalf("%+v", got)
	}
	got, err = payload.Parse("healthcare", json.RawMessage(`{"location": "Lyon gare", "required_equipment": 7, "severity": "red"}`))
	wantWarnings(t, got, err, "payload.location", "payload.required_equipment")
	if got.Lat != nil || got.RequiredEquipment != nil || got.Severity != "critical" {
		t.Fatalf("%+v", got)
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
			got, err := payload.Parse("logistics", json.RawMessage(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.RequiredEquipment, tc.want) || (tc.want == nil) != (got.RequiredEquipment == nil) {
				t.Fatalf("required_equipment %#v, want %#v", got.RequiredEquipment, tc.want)
			}
			if got.Warnings != nil {
				t.Fatalf("warnings %q", got.Warnings)
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
				got, err := payload.Parse(tc.vertical, json.RawMessage(`{"severity": `+raw+`}`))
				if err == nil && got.Warnings != nil {
					t.Errorf("%s → %q with warnings %q", raw, got.Severity, got.Warnings)
				}
				return got.Severity, err
			}
			// ignored checks that raw is not mapped: no severity, one warning on it.
			ignored := func(raw string) {
				t.Helper()
				got, err := payload.Parse(tc.vertical, json.RawMessage(`{"severity": `+raw+`}`))
				wantWarnings(t, got, err, "payload.severity")
				if got.Severity != "" {
					t.Errorf("%s → %q, want it ignored", raw, got.Severity)
				}
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
					ignored(`"` + in + `"`)
				}
			}
			for _, in := range []string{`"urgent"`, `"sev5"`, `"p0"`, `"5"`, `"0"`, `""`, `"hi gh"`, `true`, `{}`, `[]`} {
				ignored(in)
			}
			for i, want := range []string{"critical", "high", "medium", "low"} {
				raw := string(rune('1' + i))
				if !tc.numeric {
					ignored(raw)
					continue
				}
				got, err := parse(raw)
				if err != nil || got != want {
					t.Errorf("%s → %q, %v; want %q", raw, got, err, want)
				}
			}
			if tc.numeric {
				if got, err := parse(`2.0`); err != nil || got != "high" {
					t.Errorf("2.0 → %q, %v", got, err)
				}
				for _, in := range []string{`0`, `5`, `1.5`, `-1`, `1e400`} {
					ignored(in)
				}
			}
		})
	}
}

func TestParsePayloadSeverityWarningListsAccepted(t *testing.T) {
	got, err := payload.Parse("healthcare", json.RawMessage(`{"severity": "purple"}`))
	wantWarnings(t, got, err, "payload.severity")
	msg := got.Warnings[0]
	for _, v := range []string{"critical", "low", "red", "green", "1", "4"} {
		if !strings.Contains(msg, v) {
			t.Errorf("message %q does not list %q", msg, v)
		}
	}
}

func TestParsePayloadAll(t *testing.T) {
	got, err := payload.Parse("healthcare", json.RawMessage(benchPayload))
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
		got := payload.Parsers(nil)
		want := slices.Sorted(slices.Values(model.StandardVerticals))
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
		got := payload.Parsers([]string{"telecom", "mining", "agri", "mining", "healthcare"})
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
		payload.Parsers(nil)[0].Severities[0] = "changed"
		if payload.Parsers(nil)[0].Severities[0] != "critical" {
			t.Fatal("a caller changed the parser table")
		}
	})
	t.Run("SeveritiesAreAccepted", func(t *testing.T) {
		for _, p := range payload.Parsers([]string{"mining"}) {
			for _, s := range p.Severities {
				raw, _ := json.Marshal(map[string]string{"severity": s})
				if got, err := payload.Parse(p.Vertical, raw); err != nil || got.Severity == "" {
					t.Errorf("%s lists %q but parses it to %q, %v", p.Vertical, s, got.Severity, err)
				}
			}
		}
	})
}

// FuzzParsePayload: the payload is opaque. ParsePayload refuses exactly the payloads that
// are not a JSON object (on the field payload); any object is accepted, whatever its
// fields hold, with what it could read in range and normalised, and one warning per field
// ignored, naming that field (present in the payload) first and ending in "ignored".
func FuzzParsePayload(f *testing.F) {
	for _, seed := range []string{benchPayload, `{}`, `null`, `[]`, `"x"`, `1`, `true`, `{"lat": 1, "lng": 2}`,
		`{"latitude": "1", "longitude": 2}`, `{"location": {"type": "Point", "coordinates": [1, 2, 3]}}`,
		`{"required_equipment": "a,B, c"}`, `{"severity": 3}`, `{"severity": "P1"}`,
		`{"location": "Lyon gare"}`, `{"severity": "urgent"}`, `{"lat": "45.7", "lng": "4.8"}`, `{"lat": 95, "lng": 4.8}`,
		`{"lat": 45.7}`, `{"required_equipment": [1, 2]}`, `{"geometry": {"type": "LineString"}}`,
		`{"lat": "1e400", "lng": " 2 ", "latitude": 1, "geometry": {"type": "Point", "coordinates": [1, 95]}}`} {
		f.Add("healthcare", []byte(seed))
		f.Add("emergency", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, vertical string, body []byte) {
		got, err := payload.Parse(vertical, body)
		trimmed := bytes.TrimSpace(body)
		absent := len(trimmed) == 0 || string(trimmed) == "null"
		object := !absent && trimmed[0] == '{' && json.Valid(trimmed)
		if err != nil {
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != "payload" {
				t.Fatalf("error %#v", err)
			}
			if object {
				t.Fatalf("a JSON object refused: %v", err)
			}
			return
		}
		if !absent && !object {
			t.Fatalf("%q accepted, not being a JSON object", body)
		}
		if (got.Lat == nil) != (got.Lng == nil) {
			t.Fatalf("one coordinate: %+v", got)
		}
		if got.Lat != nil && !model.ValidLatLng(*got.Lat, *got.Lng) {
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
		if absent {
			if got.Warnings != nil {
				t.Fatalf("warnings without a payload: %q", got.Warnings)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &m); err != nil {
			t.Fatal(err)
		}
		if got.Warnings != nil && len(got.Warnings) == 0 || len(got.Warnings) > 7 {
			t.Fatalf("warnings %q", got.Warnings)
		}
		for _, w := range got.Warnings {
			name, _, _ := strings.Cut(w, " ")
			key, ok := strings.CutPrefix(name, "payload.")
			if raw, present := m[key]; !ok || !present || string(bytes.TrimSpace(raw)) == "null" ||
				!slices.Contains(payload.Parsers(nil)[0].Fields, key) || !strings.HasSuffix(w, "ignored") {
				t.Fatalf("warning %q does not name a field of %s the parser reads", w, trimmed)
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
		if _, err := payload.Parse("healthcare", raw); err != nil {
			b.Fatal(err)
		}
	}
}
