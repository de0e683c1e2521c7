package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Fuzz targets of the engine's codecs and rules. Each asserts a property (a round trip,
// idempotence, an invariant), not only the absence of a panic. `make fuzz` runs each for
// FUZZTIME; `go test` runs their seeds and testdata/fuzz/ corpora.

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-06-09T10:11:12.345Z", "2026-06-09T10:11:12Z", "2026-06-09T12:11:12.3456789+02:00",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
		"2026-13-01T00:00:00Z", "2026-06-09 10:11:12Z", "", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := model.ParseTime(s)
		if err != nil {
			return
		}
		if tm.Location() != time.UTC || !tm.Equal(tm.Truncate(time.Millisecond)) {
			t.Fatalf("ParseTime(%q) = %v: not UTC milliseconds", s, tm)
		}
		// What is accepted is written back in the contract's layout, and reads back the same:
		// a stored timestamp must always decode again.
		b, err := json.Marshal(tm)
		if err != nil {
			t.Fatalf("ParseTime(%q) = %v, which does not marshal: %v", s, tm, err)
		}
		var back model.Time
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tm.Time) {
			t.Fatalf("ParseTime(%q) = %v, written %s, reads back %v, %v", s, tm, b, back, err)
		}
		if again, _ := json.Marshal(back); string(again) != string(b) {
			t.Fatalf("%s re-marshals to %s", b, again)
		}
	})
}

func FuzzTimeUnmarshalJSON(f *testing.F) {
	for _, s := range []string{`"2026-06-09T10:11:12.345Z"`, `"\u0032026-06-09T10:11:12Z"`, `null`, `12`, `"x"`, `""`,
		`"2026-06-09T10:11:12Z\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A JSON string decodes as a Time exactly when its value (escapes read) is a
		// timestamp ParseTime accepts, and to the same instant.
		var s string
		if json.Unmarshal(b, &s) != nil || string(bytes.TrimSpace(b)) == "null" {
			return // null leaves a Time as it was
		}
		var tm model.Time
		err := json.Unmarshal(b, &tm)
		want, werr := model.ParseTime(s)
		if (err == nil) != (werr == nil) || err == nil && !tm.Equal(want.Time) {
			t.Fatalf("Time.UnmarshalJSON(%s) = %v, %v; ParseTime(%q) = %v, %v", b, tm, err, s, want, werr)
		}
	})
}

func FuzzNormalizePhone(f *testing.F) {
	for _, s := range []string{"+33 6 12 34 56 78", "0033612345678", "33612345678", "(+33) 6-12.34", "+", "", "++33612345678",
		"+33612345678\u00a0", " 0 0 33612345678", "٣٣٦١٢٣٤٥٦٧٨"} {
		f.Add(s)
	}
	e164 := regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := engine.NormalizePhone(s)
		if !ok {
			return
		}
		if !e164.MatchString(n) {
			t.Fatalf("NormalizePhone(%q) = %q, not E.164", s, n)
		}
		// Idempotent: a normalized number normalizes to itself.
		if again, ok := engine.NormalizePhone(n); !ok || again != n {
			t.Fatalf("NormalizePhone(%q) = %q, then %q, %v", s, n, again, ok)
		}
	})
}

func FuzzPolygonJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"Polygon","coordinates":[[[4.8,45.7],[4.9,45.7],[4.9,45.8],[4.8,45.8],[4.8,45.7]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[4,4],[6,4],[6,6],[4,6],[4,4]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[10,0],[0,10],[10,10],[0,0]]]}`, // a bow tie
		`{"type":"Polygon","coordinates":[[[179,0],[-179,0],[-179,1],[179,1],[179,0]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[0,0],[0,0],[0,0]]]}`,
		`{"type":"Polygon","coordinates":[[[0,0,5],[1,0],[1,1],[0,0]]]}`,
		`{"type":"Polygon","coordinates":[[[0],[1,0],[1,1],[0]]]}`,
		`{"type":"Polygon","coordinates":[]}`, `{"type":"Point","coordinates":[1,2]}`, `null`, `{}`,
	} {
		f.Add([]byte(s), 0.5, 0.5)
	}
	f.Fuzz(func(t *testing.T, raw []byte, lat, lng float64) {
		var p model.Polygon
		if json.Unmarshal(raw, &p) != nil {
			return
		}
		// Contains never panics, even on a polygon that does not validate.
		_ = p.Contains(lat, lng)
		if p.Validate("boundary") != nil {
			return
		}
		checkPolygon(t, &p, lat, lng)
	})
}

// FuzzPolygonRect builds valid polygons from numbers (random JSON rarely validates).
func FuzzPolygonRect(f *testing.F) {
	f.Add(45.7, 4.8, 0.1, 0.2, uint8(0), 45.75, 4.9)
	f.Add(-90.0, -180.0, 180.0, 360.0, uint8(1), 0.0, 0.0)
	f.Add(0.0, 0.0, 1e-9, 1e-9, uint8(2), 5e-10, 5e-10)
	f.Add(10.0, 10.0, 5.0, 5.0, uint8(3), 12.5, 12.5)
	f.Fuzz(func(t *testing.T, lat0, lng0, h, w float64, shape uint8, lat, lng float64) {
		lat1, lng1 := lat0+h, lng0+w
		var ring [][]float64
		switch shape % 4 {
		case 0: // a rectangle, counter-clockwise
			ring = [][]float64{{lng0, lat0}, {lng1, lat0}, {lng1, lat1}, {lng0, lat1}, {lng0, lat0}}
		case 1: // the same, clockwise
			ring = [][]float64{{lng0, lat0}, {lng0, lat1}, {lng1, lat1}, {lng1, lat0}, {lng0, lat0}}
		case 2: // a triangle
			ring = [][]float64{{lng0, lat0}, {lng1, lat0}, {lng0, lat1}, {lng0, lat0}}
		default: // a rectangle with a rectangular hole in its middle
			ring = [][]float64{{lng0, lat0}, {lng1, lat0}, {lng1, lat1}, {lng0, lat1}, {lng0, lat0}}
		}
		p := model.Polygon{Type: "Polygon", Coordinates: [][][]float64{ring}}
		if shape%4 == 3 {
			qa, qo, ra, ro := lat0+h/4, lng0+w/4, lat0+3*h/4, lng0+3*w/4
			p.Coordinates = append(p.Coordinates, [][]float64{{qo, qa}, {ro, qa}, {ro, ra}, {qo, ra}, {qo, qa}})
		}
		if p.Validate("boundary") != nil {
			return
		}
		checkPolygon(t, &p, lat, lng)
		c := p.Centroid()
		// A convex outer ring holds its centroid (rectangles and triangles are convex);
		// with a hole around it, it does not. Only for rings wide enough that rounding
		// cannot move the centroid onto an edge.
		if math.Abs(h) > 1e-6 && math.Abs(w) > 1e-6 {
			if in := p.Contains(c.Lat, c.Lng); in != (shape%4 != 3) {
				t.Fatalf("%v: Contains(centroid %v) = %v", p.Coordinates, c, in)
			}
		}
	})
}

// checkPolygon asserts the properties of a valid polygon: a finite centroid within its
// bounding box, and no point outside the bounding box (or not finite) inside.
func checkPolygon(t *testing.T, p *model.Polygon, lat, lng float64) {
	t.Helper()
	minLat, maxLat, minLng, maxLng := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pos := range p.Coordinates[0] {
		minLng, maxLng = min(minLng, pos[0]), max(maxLng, pos[0])
		minLat, maxLat = min(minLat, pos[1]), max(maxLat, pos[1])
	}
	c := p.Centroid()
	if math.IsNaN(c.Lat) || math.IsNaN(c.Lng) || math.IsInf(c.Lat, 0) || math.IsInf(c.Lng, 0) {
		t.Fatalf("%v: centroid %v is not finite", p.Coordinates, c)
	}
	// Far outside the outer ring's bounding box, nothing is inside.
	for _, q := range [][2]float64{{maxLat + 1, lng}, {minLat - 1, lng}, {lat, maxLng + 1}, {lat, minLng - 1},
		{math.NaN(), lng}, {lat, math.NaN()}, {math.Inf(1), math.Inf(-1)}} {
		if p.Contains(q[0], q[1]) {
			t.Fatalf("%v contains %v, outside its bounding box", p.Coordinates, q)
		}
	}
	if p.Contains(lat, lng) && (lat < minLat || lat > maxLat || lng < minLng || lng > maxLng) {
		t.Fatalf("%v contains %v,%v, outside its bounding box", p.Coordinates, lat, lng)
	}
	// A point in a hole is not in the polygon.
	for _, hole := range p.Coordinates[1:] {
		h := model.Polygon{Type: "Polygon", Coordinates: [][][]float64{hole}}
		if h.Contains(lat, lng) && p.Contains(lat, lng) {
			t.Fatalf("%v contains %v,%v, which is in its hole", p.Coordinates, lat, lng)
		}
	}
}

func FuzzNextMissionState(f *testing.F) {
	for _, from := range model.MissionStates {
		for _, to := range model.MissionStates {
			f.Add(from, to, true, false)
		}
	}
	f.Add("", "ACK", false, true)
	f.Add("ack", "ON_ROUTE", true, true)
	f.Add("ON_SITE", "COMPLETED ", false, false)
	order := func(s string) int { return slices.Index(model.MissionStates, s) }
	f.Fuzz(func(t *testing.T, from, to string, canManage, canReceive bool) {
		err := model.NextMissionState(from, to, canManage, canReceive)
		if err == nil {
			// Allowed: a permission, a known non-terminal state, one step forward or FAILED,
			// never a state the system alone sets, never backwards or in place.
			switch {
			case !canManage && !canReceive:
				t.Fatalf("%s → %s allowed without permission", from, to)
			case order(from) < 0 || order(to) < 0:
				t.Fatalf("%q → %q allowed: unknown state", from, to)
			case model.MissionFinished(from):
				t.Fatalf("%s → %s allowed: %s is terminal", from, to, from)
			case to == model.MissionCreated || to == model.MissionSent:
				t.Fatalf("%s → %s allowed: the system sets %s", from, to, to)
			case order(to) <= order(from):
				t.Fatalf("%s → %s allowed: backwards or in place", from, to)
			case to != model.MissionFailed && !slices.Contains(model.AllowedMissionMoves(from), to):
				t.Fatalf("%s → %s allowed but not listed by AllowedMissionMoves", from, to)
			}
			return
		}
		var e *model.Error
		if !errors.As(err, &e) {
			t.Fatalf("NextMissionState(%q, %q): %T %v", from, to, err, err)
		}
		switch {
		case !canManage && !canReceive:
			if e.Kind != model.KindForbidden {
				t.Fatalf("without permission: %v", err)
			}
		case order(to) < 0:
			AssertInvalid(t, err, "status")
		case model.MissionFinished(from):
			// Terminal states stay terminal, whatever is asked.
			if e.Kind != model.KindMissionClosed {
				t.Fatalf("%s → %s: %v, want mission_closed", from, to, err)
			}
		default:
			if e.Kind != model.KindInvalidTransition {
				t.Fatalf("%q → %s: %v, want invalid_transition", from, to, err)
			}
			if slices.Contains(model.AllowedMissionMoves(from), to) {
				t.Fatalf("%s → %s refused though listed as allowed", from, to)
			}
		}
	})
}

func FuzzAPIKeyFormat(f *testing.F) {
	for _, s := range []string{engine.NewAPIKey(), "fr_live_", "fr_live_" + strings.Repeat("a", 31),
		"fr_live_" + strings.Repeat("Z", 33), "fr_test_" + strings.Repeat("0", 32), "fr_live_" + strings.Repeat("é", 16),
		"fr_live_0123456789abcdefghijklmnopqrstu-"} {
		f.Add(s)
	}
	shape := regexp.MustCompile(`^fr_live_[0-9A-Za-z]{32}$`)
	fresh := engine.NewAPIKey()
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := engine.LooksLikeAPIKey(s), shape.MatchString(s); got != want {
			t.Fatalf("LooksLikeAPIKey(%q) = %v, want %v", s, got, want)
		}
		if engine.LooksLikeAPIKey(s) && model.HashToken(s) == model.HashToken(fresh) && s != fresh {
			t.Fatalf("%q and %q hash alike", s, fresh)
		}
		if k := engine.NewAPIKey(); !shape.MatchString(k) {
			t.Fatalf("NewAPIKey() = %q", k)
		}
	})
}
