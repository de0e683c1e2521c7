// Package modeltest holds the test helpers that every package speaking engine/model
// shares: assertions on *model.Error, the instant the test clocks start at and geometry
// fixtures.
//
// It is imported by _test.go files only; no production package may import it (the test
// TestLayering_TestHelpers in engine holds that). The other shared test helpers live
// beside what they help test: store/storetest opens stores, server/servertest builds HTTP
// requests (docs/decisions/0087-test-helpers-once.md).
package modeltest

import (
	"errors"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Epoch is the time every test clock starts at.
var Epoch = time.Date(2026, 6, 9, 10, 11, 12, 345_000_000, time.UTC)

// AssertKind fails unless err is a *model.Error of the given kind, and returns it.
func AssertKind(tb testing.TB, err error, kind model.Kind) *model.Error {
	tb.Helper()
	var e *model.Error
	if !errors.As(err, &e) {
		tb.Fatalf("error = %v (%T), want an *engine.Error of kind %s", err, err, kind)
	}
	if e.Kind != kind {
		tb.Fatalf("error kind = %s (%v), want %s", e.Kind, err, kind)
	}
	return e
}

// AssertInvalid fails unless err is a validation_error naming field.
func AssertInvalid(tb testing.TB, err error, field string) {
	tb.Helper()
	e := AssertKind(tb, err, model.KindValidation)
	if e.Field != field {
		tb.Fatalf("validation error field = %q (%v), want %q", e.Field, err, field)
	}
}

// Square returns a closed counter-clockwise square ring, [lng, lat] order.
func Square(lng0, lat0, side float64) [][]float64 {
	return [][]float64{{lng0, lat0}, {lng0 + side, lat0}, {lng0 + side, lat0 + side},
		{lng0, lat0 + side}, {lng0, lat0}}
}

// Polygon returns a GeoJSON polygon of the given rings.
func Polygon(rings ...[][]float64) *model.Polygon {
	return &model.Polygon{Type: "Polygon", Coordinates: rings}
}
