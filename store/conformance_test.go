package store_test

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/storetest"
)

// TestConformance runs the contract every store keeps (store/storetest) on the bbolt store.
func TestConformance(t *testing.T) {
	storetest.Conformance(t, func(t *testing.T) model.Store { return storetest.MustOpenDB(t) })
}
