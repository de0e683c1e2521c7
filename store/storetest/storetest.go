// Package storetest holds the test helpers that open a bbolt store for a test, and
// Conformance, the contract of model.Store and model.Tx that every store runs.
//
// It is imported by _test.go files only; no production package may import it (the test
// TestLayering_TestHelpers in engine holds that). See engine/model/modeltest for the
// error assertions and docs/decisions/0087-test-helpers-once.md.
package storetest

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/store"
)

// MustOpenDB opens a store in a fresh temporary directory, closed at the end of the test.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	return MustOpenDir(tb, tb.TempDir())
}

// MustOpenDir opens the store of dir, closed at the end of the test (closing twice is
// harmless).
func MustOpenDir(tb testing.TB, dir string) *store.DB {
	tb.Helper()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		tb.Fatalf("opening the store: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("closing the store: %v", err)
		}
	})
	return db
}
