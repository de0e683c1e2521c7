package model_test

import (
	"reflect"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// CloneTeams copies as Team.Clone does: equal teams, nil and empty slices kept
// apart (they encode as null and []), nothing shared with the source, and an append to
// one copy's slice leaves its neighbour alone.
func TestCloneTeams(t *testing.T) {
	lat, lng, at := 45.1, 4.8, model.Time{}
	src := []model.Team{
		{ID: "a", Verticals: []string{"fire", "rescue"}, Equipment: []string{},
			Members: []model.Member{{ID: "m", Lat: &lat, Lng: &lng, LocationUpdatedAt: &at}, {ID: "n"}}},
		{ID: "b", Verticals: nil, Equipment: []string{"ladder"}, Members: []model.Member{}},
		{ID: "c"},
	}
	ptrs := []*model.Team{&src[0], nil, &src[1], &src[2]}
	got := model.CloneTeams(ptrs)
	if len(got) != 4 || !reflect.DeepEqual(got[1], model.Team{}) {
		t.Fatalf("copies: %+v", got)
	}
	for i, j := range []int{0, 2, 3} {
		if want := src[i].Clone(); !reflect.DeepEqual(got[j], want) {
			t.Fatalf("copy %d: %+v, want %+v", j, got[j], want)
		}
	}
	if got[0].Equipment == nil || got[2].Members == nil || got[2].Verticals != nil || got[3].Members != nil {
		t.Fatalf("nil and empty slices mixed up: %+v", got)
	}
	*got[0].Members[0].Lat, got[0].Verticals[0] = 0, "x"
	if lat != 45.1 || src[0].Verticals[0] != "fire" {
		t.Fatal("a copy shares its source's memory")
	}
	_ = append(got[0].Verticals, "y")
	_ = append(got[0].Members, model.Member{ID: "z"})
	if got[2].Equipment[0] != "ladder" || len(got[2].Members) != 0 {
		t.Fatalf("an append to one copy reached the next: %+v", got[2])
	}
}
