package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestPageList_MaxBytes: the lists the engine pages in memory (here the teams) end a page
// before the item that would pass MaxBytes, with a cursor that resumes after it.
func TestPageList_MaxBytes(t *testing.T) {
	ctx := context.Background()
	n := newDeliveryNode(t, false, false) // has team Alpha
	mustDo(t, func() error {
		for i := range 4 {
			if _, err := n.e.CreateTeam(context.Background(), tenantAdmin(n.p.TenantID), model.TeamInput{Name: fmt.Sprintf("Team %d", i),
				Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "M"}}}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	all, next, err := n.e.Teams(ctx, n.p, model.TeamFilter{}, model.Page{Limit: 50})
	if err != nil || len(all) != 5 || next != "" {
		t.Fatalf("all teams: %d %q %v", len(all), next, err)
	}
	size := func(tm model.Team) int { b, _ := json.Marshal(tm); return len(b) }
	// Room for exactly the first two.
	page := model.Page{Limit: 50, MaxBytes: size(all[0]) + size(all[1])}
	var got []string
	var sizes []int
	for range 5 {
		teams, next, err := n.e.Teams(ctx, n.p, model.TeamFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(teams))
		for _, tm := range teams {
			got = append(got, tm.ID)
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	var want []string
	for _, tm := range all {
		want = append(want, tm.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || sizes[0] != 2 {
		t.Fatalf("pages of %v: %v, want %v", sizes, got, want)
	}
}
