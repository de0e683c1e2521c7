package postgres_test

import (
	"context"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// teamsOf lists tn's teams through db in a transaction of its own.
func teamsOf(t *testing.T, db model.Store, tn string) []model.Team {
	t.Helper()
	var out []model.Team
	if err := db.View(context.Background(), func(tx model.Tx) error {
		var err error
		out, err = tx.Teams(tn)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func newTeam(name string, lat float64) *model.Team {
	lng := 4.8
	return &model.Team{ID: model.NewID(), Name: name, Status: "available", Verticals: []string{"fire"},
		Equipment: []string{"ladder"}, Members: []model.Member{{ID: model.NewID(), Name: "m", Lat: &lat, Lng: &lng}}}
}

// Two handles on one database stand for two processes: a team written through one,
// including a position update (which does not bump the directory version), is listed
// as written through the other, whose own cache held the team before.
func TestTeamsSeeOtherProcesses(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	tn := model.NewID()
	t1, t2 := newTeam("one", 45.1), newTeam("two", 45.2)
	putTenant(t, a, tn, "active")
	update(t, a, func(tx model.Tx) error {
		if err := tx.PutTeam(tn, t1); err != nil {
			return err
		}
		return tx.PutTeam(tn, t2)
	})
	if got := teamsOf(t, a, tn); len(got) != 2 {
		t.Fatalf("%d teams, want 2", len(got))
	}
	teamsOf(t, a, tn) // served from a's cache now
	lat := 46.5
	t1.Members[0].Lat = &lat
	t2.Name = "renamed"
	t3 := newTeam("three", 45.3)
	update(t, b, func(tx model.Tx) error {
		if err := tx.PutTeamPositions(tn, t1); err != nil {
			return err
		}
		if err := tx.PutTeam(tn, t2); err != nil {
			return err
		}
		return tx.PutTeam(tn, t3)
	})
	got := map[string]model.Team{}
	for _, tm := range teamsOf(t, a, tn) {
		got[tm.ID] = tm
	}
	if len(got) != 3 || got[t3.ID].Name != "three" {
		t.Fatalf("teams seen through a: %+v", got)
	}
	if p := got[t1.ID].Members[0].Lat; p == nil || *p != 46.5 {
		t.Fatalf("position seen through a: %v, want 46.5", p)
	}
	if got[t2.ID].Name != "renamed" {
		t.Fatalf("name seen through a: %q, want renamed", got[t2.ID].Name)
	}
}

// The teams listed are the caller's to keep: changing them changes neither the next
// listing nor the one of another caller.
func TestTeamsAreCopies(t *testing.T) {
	db := open(t, pgtest.URL(t))
	tn := model.NewID()
	putTenant(t, db, tn, "active")
	update(t, db, func(tx model.Tx) error {
		return tx.PutTeam(tn, newTeam("one", 45.1))
	})
	teamsOf(t, db, tn)
	for range 2 {
		got := teamsOf(t, db, tn)
		if got[0].Name != "one" || got[0].Verticals[0] != "fire" || got[0].Equipment[0] != "ladder" ||
			*got[0].Members[0].Lat != 45.1 || got[0].Members[0].Name != "m" {
			t.Fatalf("listing changed by its previous caller: %+v", got[0])
		}
		got[0].Name, got[0].Verticals[0], got[0].Equipment[0] = "x", "x", "x"
		*got[0].Members[0].Lat, got[0].Members[0].Name = 0, "x"
	}
}

// A transaction that writes a team twice and reads the teams in between commits rows
// that keep one xmin: the version read in between must not be served afterwards.
func TestTeamsWrittenTwiceInOneTransaction(t *testing.T) {
	db := open(t, pgtest.URL(t))
	tn := model.NewID()
	tm := newTeam("first", 45.1)
	putTenant(t, db, tn, "active")
	update(t, db, func(tx model.Tx) error {
		if err := tx.PutTeam(tn, tm); err != nil {
			return err
		}
		if got, err := tx.Teams(tn); err != nil || len(got) != 1 || got[0].Name != "first" {
			t.Errorf("teams within the transaction: %+v, %v", got, err)
		}
		tm.Name = "second"
		return tx.PutTeam(tn, tm)
	})
	if got := teamsOf(t, db, tn); len(got) != 1 || got[0].Name != "second" {
		t.Fatalf("teams after the commit: %+v, want the one named second", got)
	}
}

// A cached team is served while its row keeps its xmin, and for an hour at most: an xmin
// comes round again after 2^32 transactions.
func TestTeamsCacheAgeBound(t *testing.T) {
	db := open(t, pgtest.URL(t))
	tn := model.NewID()
	putTenant(t, db, tn, "active")
	update(t, db, func(tx model.Tx) error {
		return tx.PutTeam(tn, newTeam("one", 45.1))
	})
	teamsOf(t, db, tn)
	db.RenameCachedTeams("cached")
	if got := teamsOf(t, db, tn); got[0].Name != "cached" {
		t.Fatalf("listing %q, want it served from the cache", got[0].Name)
	}
	postgres.SetTeamMaxAge(t, 0)
	if got := teamsOf(t, db, tn); got[0].Name != "one" {
		t.Fatalf("listing %q past the age bound, want the row's one", got[0].Name)
	}
}
