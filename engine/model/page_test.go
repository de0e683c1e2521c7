package model_test

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestPage_Full(t *testing.T) {
	for _, c := range []struct {
		page          model.Page
		n, size, next int
		full          bool
		name          string
	}{
		{model.Page{Limit: 2}, 1, 10, 10, false, "below the limit"},
		{model.Page{Limit: 2}, 2, 10, 10, true, "at the limit"},
		{model.Page{}, 1000, 1 << 30, 1 << 30, false, "no limit, no cap"},
		{model.Page{Limit: 50, MaxBytes: 100}, 3, 60, 40, false, "fills the cap exactly"},
		{model.Page{Limit: 50, MaxBytes: 100}, 3, 60, 41, true, "would pass the cap"},
		{model.Page{Limit: 50, MaxBytes: 100}, 0, 0, 500, false, "the first item always fits"},
		{model.Page{Limit: 50, MaxBytes: 100}, 1, 500, 1, true, "after an item over the cap"},
	} {
		if got := c.page.Full(c.n, c.size, c.next); got != c.full {
			t.Errorf("%s: Full(%d, %d, %d) = %v", c.name, c.n, c.size, c.next, got)
		}
	}
}
