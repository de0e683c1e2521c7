package engine_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func fptr(v float64) *float64 { return &v }

// refDistanceKm is an independent reference for the great-circle distance: the chord
// between the two unit vectors, turned into an arc.
func refDistanceKm(lat1, lng1, lat2, lng2 float64) float64 {
	vec := func(lat, lng float64) [3]float64 {
		la, ln := lat*math.Pi/180, lng*math.Pi/180
		return [3]float64{math.Cos(la) * math.Cos(ln), math.Cos(la) * math.Sin(ln), math.Sin(la)}
	}
	a, b := vec(lat1, lng1), vec(lat2, lng2)
	chord := math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
	return 2 * 6371.0088 * math.Asin(chord/2)
}

// kmNorth returns the latitude km north of lat along a meridian.
func kmNorth(lat, km float64) float64 { return lat + km/(6371.0088*math.Pi/180) }

func member(lat, lng float64) model.Member {
	return model.Member{ID: "m", Name: "m", Lat: fptr(lat), Lng: fptr(lng)}
}

// scoreTeam is an available healthcare team with the given members and equipment.
func scoreTeam(id, name string, eq []string, members ...model.Member) model.Team {
	return model.Team{ID: id, Name: name, Status: engine.TeamAvailable, Verticals: []string{"healthcare"},
		Equipment: eq, Members: members}
}

const (
	evLat, evLng = 45.0, 5.0
	lyonLat      = 45.7640
	lyonLng      = 4.8357
	parisLat     = 48.8566
	parisLng     = 2.3522
)

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestRankTeams_Distance(t *testing.T) {
	ref := refDistanceKm(lyonLat, lyonLng, parisLat, parisLng)
	if !approx(ref, 392, 2) {
		t.Fatalf("reference Lyon → Paris %.2f km, want about 392", ref)
	}
	tm := scoreTeam("t1", "Paris", nil, member(parisLat, parisLng))
	got := engine.RankTeams([]model.Team{tm}, model.ScoreTarget{Vertical: "healthcare", Lat: fptr(lyonLat), Lng: fptr(lyonLng)}, 0.1)
	d := got[0].Factors.DistanceKm
	if d == nil || math.Abs(*d-ref)/ref > 0.005 {
		t.Fatalf("distance %v, want %.3f within 0.5 %%", d, ref)
	}
	if want := model.DistanceKm(lyonLat, lyonLng, parisLat, parisLng); !approx(*d, want, 1e-6) {
		t.Fatalf("distance %.6f, DistanceKm says %.6f", *d, want)
	}
	if want := 1 / (1 + *d/10); !approx(got[0].Factors.Proximity, want, 1e-12) {
		t.Fatalf("proximity %v, want %v", got[0].Factors.Proximity, want)
	}
}

func TestRankTeams_Factors(t *testing.T) {
	at := func(km float64) model.Member { return member(kmNorth(evLat, km), evLng) }
	// Zone "north" has its centroid 30 km north of the event; "gone" names no zone.
	centroids := func(code string) (model.LatLng, bool) {
		if code == "north" {
			return model.LatLng{Lat: kmNorth(evLat, 30), Lng: evLng}, true
		}
		return model.LatLng{}, false
	}
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng), ZoneCentroid: centroids}
	inZone := func(code string, members ...model.Member) model.Team {
		tm := scoreTeam("a", "A", nil, members...)
		tm.ZoneCode = code
		return tm
	}
	noFix := model.Member{Name: "no fix"}
	const (
		fromMember, centroid, unknown, noEvent = engine.PositionMember, engine.PositionZoneCentroid,
			engine.PositionUnknown, engine.PositionNoEvent
	)
	for _, tc := range []struct {
		name   string
		team   model.Team
		target model.ScoreTarget
		want   model.ScoreFactors // DistanceKm: nil, or any non-nil for "known"
		score  float64
		reason string // when not eligible at 0.2
	}{
		{"on the spot", scoreTeam("a", "A", nil, at(0)), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 1, ""},
		{"30 km", scoreTeam("a", "A", nil, at(30)), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0.25, DistanceKm: fptr(30), Equipment: 1, PositionSource: fromMember}, 0.25, ""},
		{"nearest member counts", scoreTeam("a", "A", nil, at(90), noFix, at(10), at(50)), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0.5, DistanceKm: fptr(10), Equipment: 1, PositionSource: fromMember}, 0.5, ""},
		{"below the threshold", scoreTeam("a", "A", nil, at(50)), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1.0 / 6, DistanceKm: fptr(50), Equipment: 1, PositionSource: fromMember}, 1.0 / 6,
			engine.ReasonBelowThreshold},
		{"vertical mismatch", func() model.Team {
			tm := scoreTeam("a", "A", nil, at(0))
			tm.Verticals = []string{"logistics", "gov"}
			return tm
		}(), target, model.ScoreFactors{Vertical: 0, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 0,
			engine.ReasonVertical},
		{"on mission", func() model.Team {
			tm := scoreTeam("a", "A", nil, at(0))
			tm.Status = engine.TeamOnMission
			return tm
		}(), target, model.ScoreFactors{Vertical: 1, Availability: 0, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 0,
			engine.ReasonOnMission},
		{"off duty", func() model.Team {
			tm := scoreTeam("a", "A", nil, at(0))
			tm.Status = engine.TeamOffDuty
			return tm
		}(), target, model.ScoreFactors{Vertical: 1, Availability: 0, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 0,
			engine.ReasonOffDuty},
		// No member has a position: the centroid of the team's zone, else proximity 0.
		{"no member position, zone centroid", inZone("north", noFix), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0.25, DistanceKm: fptr(30), Equipment: 1, PositionSource: centroid}, 0.25, ""},
		{"no member position, no zone", scoreTeam("a", "A", nil, noFix), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0, Equipment: 1, PositionSource: unknown}, 0,
			engine.ReasonNoPosition},
		{"no member position, zone unknown", inZone("gone", noFix), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0, Equipment: 1, PositionSource: unknown}, 0,
			engine.ReasonNoPosition},
		{"no member position, no centroids given", inZone("north", noFix),
			model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng)},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0, Equipment: 1, PositionSource: unknown}, 0,
			engine.ReasonNoPosition},
		// A team with no members is never eligible: nobody would receive the mission.
		{"no members", scoreTeam("a", "A", nil), target,
			model.ScoreFactors{Vertical: 1, Availability: 0, Proximity: 0, Equipment: 1, PositionSource: unknown}, 0,
			engine.ReasonNoMembers},
		{"no members, zone centroid", inZone("north"), target,
			model.ScoreFactors{Vertical: 1, Availability: 0, Proximity: 0.25, DistanceKm: fptr(30), Equipment: 1, PositionSource: centroid}, 0,
			engine.ReasonNoMembers},
		{"no members, no event position", scoreTeam("a", "A", nil), model.ScoreTarget{Vertical: "healthcare"},
			model.ScoreFactors{Vertical: 1, Availability: 0, Proximity: 0.5, Equipment: 1, PositionSource: noEvent}, 0,
			engine.ReasonNoMembers},
		// No event position: 0.5 for every team, whatever it knows of its own.
		{"no event position", scoreTeam("a", "A", nil, at(0)), model.ScoreTarget{Vertical: "healthcare"},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0.5, Equipment: 1, PositionSource: noEvent}, 0.5, ""},
		{"no event position, no member position", scoreTeam("a", "A", nil, noFix), model.ScoreTarget{Vertical: "healthcare"},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 0.5, Equipment: 1, PositionSource: noEvent}, 0.5, ""},
		{"half the equipment, any case", scoreTeam("a", "A", []string{"Defibrillator", "rope"}, at(0)),
			model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng), RequiredEquipment: []string{"defibrillator", "stretcher"}},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 0.5, PositionSource: fromMember}, 0.5, ""},
		{"required list not normalised", scoreTeam("a", "A", []string{"defibrillator"}, at(0)),
			model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng), RequiredEquipment: []string{" Stretcher", "DEFIBRILLATOR", "defibrillator ", "stretcher"}},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 0.5, PositionSource: fromMember}, 0.5, ""},
		{"all the equipment", scoreTeam("a", "A", []string{"stretcher", "defibrillator"}, at(0)),
			model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng), RequiredEquipment: []string{"defibrillator", "stretcher"}},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 1, ""},
		{"none held", scoreTeam("a", "A", nil, at(0)),
			model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng), RequiredEquipment: []string{"boat"}},
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 0, PositionSource: fromMember}, 0,
			engine.ReasonNoEquipment},
		{"none asked", scoreTeam("a", "A", nil, at(0)), target,
			model.ScoreFactors{Vertical: 1, Availability: 1, Proximity: 1, DistanceKm: fptr(0), Equipment: 1, PositionSource: fromMember}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := engine.RankTeams([]model.Team{tc.team}, tc.target, 0.2)
			if len(got) != 1 {
				t.Fatalf("%d scores", len(got))
			}
			f := got[0].Factors
			if f.Vertical != tc.want.Vertical || f.Availability != tc.want.Availability ||
				!approx(f.Proximity, tc.want.Proximity, 1e-9) || f.Equipment != tc.want.Equipment ||
				f.PositionSource != tc.want.PositionSource {
				t.Fatalf("factors %+v, want %+v", f, tc.want)
			}
			if (f.DistanceKm == nil) != (tc.want.DistanceKm == nil) ||
				f.DistanceKm != nil && !approx(*f.DistanceKm, *tc.want.DistanceKm, 1e-6) {
				t.Fatalf("distance %v, want %v", f.DistanceKm, tc.want.DistanceKm)
			}
			if !approx(got[0].Score, tc.score, 1e-9) {
				t.Fatalf("score %v, want %v", got[0].Score, tc.score)
			}
			if got[0].Eligible != (tc.score >= 0.2) {
				t.Fatalf("eligible %v at score %v, threshold 0.2", got[0].Eligible, got[0].Score)
			}
			if got[0].Reason != tc.reason {
				t.Fatalf("reason %q, want %q", got[0].Reason, tc.reason)
			}
			if got[0].TeamID != "a" || got[0].TeamName != "A" {
				t.Fatalf("team %q %q", got[0].TeamID, got[0].TeamName)
			}
		})
	}
}

func TestRankTeams_Threshold(t *testing.T) {
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng)}
	for _, tc := range []struct {
		km        float64
		threshold float64
		eligible  bool
	}{
		// docs/rules.md, Dispatch score: 0.10 within ~90 km, 0.20 within ~40 km, 0.40 within ~15 km.
		{30, 0.20, true}, {30, 0.40, false}, {30, 0.10, true},
		{80, 0.10, true}, {100, 0.10, false}, {80, 0.20, false},
		{35, 0.20, true}, {45, 0.20, false},
		{10, 0.40, true}, {20, 0.40, false},
	} {
		tm := scoreTeam("a", "A", nil, member(kmNorth(evLat, tc.km), evLng))
		if got := engine.RankTeams([]model.Team{tm}, target, tc.threshold)[0]; got.Eligible != tc.eligible {
			t.Errorf("%v km at %.2f: score %.4f eligible %v, want %v", tc.km, tc.threshold, got.Score, got.Eligible, tc.eligible)
		}
	}
	// A zero score is never eligible, even at a zero threshold.
	off := scoreTeam("a", "A", nil)
	off.Status = engine.TeamOnMission
	if got := engine.RankTeams([]model.Team{off}, target, 0)[0]; got.Eligible {
		t.Fatalf("a zero score is eligible: %+v", got)
	}
	noPosition := model.ScoreTarget{Vertical: "healthcare"}
	if got := engine.RankTeams([]model.Team{scoreTeam("a", "A", nil, member(evLat, evLng))}, noPosition, 0)[0]; !got.Eligible {
		t.Fatalf("0.5 at threshold 0 not eligible: %+v", got)
	}
	// A team with no members is not eligible, even at a zero threshold.
	if got := engine.RankTeams([]model.Team{scoreTeam("a", "A", nil)}, noPosition, 0)[0]; got.Eligible {
		t.Fatalf("a team with no members is eligible: %+v", got)
	}
}

// TestRankTeams_UnknownPositionNeverBeatsAStaffedTeam: the bug of issue 15 item 2. A team
// with no members, or none with a position, scored 0.5 (as near as 10 km), passed the
// 0.40 threshold and beat a staffed team 12 km away.
func TestRankTeams_UnknownPositionNeverBeatsAStaffedTeam(t *testing.T) {
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng)}
	staffed := scoreTeam("id-staffed", "Staffed", nil, member(kmNorth(evLat, 12), evLng))
	for name, tm := range map[string]model.Team{
		"NoMembers":        scoreTeam("id-empty", "Empty", nil),
		"NoMemberPosition": scoreTeam("id-nofix", "No fix", nil, model.Member{Name: "no fix"}),
	} {
		t.Run(name, func(t *testing.T) {
			for _, threshold := range []float64{0.40, 0.20, 0.10, 0} {
				got := engine.RankTeams([]model.Team{tm, staffed}, target, threshold)
				if got[0].TeamID != "id-staffed" || got[1].Eligible || got[1].Reason == "" ||
					got[1].Factors.PositionSource != engine.PositionUnknown {
					t.Fatalf("at %.2f: %+v", threshold, got)
				}
			}
			// Alone, it is still never eligible: auto-dispatch asks for a supervisor.
			if got := engine.RankTeams([]model.Team{tm}, target, 0.10)[0]; got.Eligible {
				t.Fatalf("eligible alone: %+v", got)
			}
		})
	}
}

func TestRankTeams_Order(t *testing.T) {
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(evLat), Lng: fptr(evLng),
		RequiredEquipment: []string{"rope", "boat"}}
	at := func(km float64) model.Member { return member(kmNorth(evLat, km), evLng) }
	both := []string{"rope", "boat"}
	teams := []model.Team{
		scoreTeam("id-far", "Far", both, at(50)),              // 1/6
		scoreTeam("id-best", "Best", both, at(5)),             // 2/3
		scoreTeam("id-half", "Half", []string{"rope"}, at(0)), // 0.5
		// No member with a position and no zone: proximity 0, below every team with a
		// known position, busy ones included.
		scoreTeam("id-unknown", "Unknown", both, model.Member{Name: "no fix"}),
		// Same score and distance: by name, then id.
		scoreTeam("id-z2", "Zed", both, at(50)),
		scoreTeam("id-z1", "Zed", both, at(50)),
		scoreTeam("id-alpha", "Alpha", both, at(50)),
	}
	// Zero scores tie: nearest first, unknown distance last.
	for _, b := range []model.Team{scoreTeam("id-busy-far", "Busy far", both, at(50)),
		scoreTeam("id-busy-unknown", "Busy unknown", both), scoreTeam("id-busy-near", "Busy near", both, at(0))} {
		b.Status = engine.TeamOnMission
		teams = append(teams, b)
	}
	input := fmt.Sprint(teams)
	got := engine.RankTeams(teams, target, 0.2)
	var order []string
	for _, s := range got {
		order = append(order, s.TeamID)
	}
	want := []string{"id-best", "id-half", "id-alpha", "id-far", "id-z1", "id-z2",
		"id-busy-near", "id-busy-far", "id-busy-unknown", "id-unknown"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for _, s := range got {
		wantEligible := s.Score >= 0.2 && s.Score > 0
		if s.Eligible != wantEligible {
			t.Fatalf("%s: score %v eligible %v", s.TeamID, s.Score, s.Eligible)
		}
	}
	if fmt.Sprint(teams) != input {
		t.Fatal("RankTeams changed its input")
	}
	if got := engine.RankTeams(nil, target, 0.2); got == nil || len(got) != 0 {
		t.Fatalf("no teams: %#v", got)
	}
}

// benchTeams builds n teams of 5 members around Lyon, most of them capable and equipped.
func benchTeams(n int) []model.Team {
	teams := make([]model.Team, n)
	for i := range teams {
		tm := model.Team{ID: fmt.Sprintf("team-%05d", i), Name: fmt.Sprintf("Team %d", i%300),
			Status: engine.TeamAvailable, Verticals: []string{"emergency", "healthcare"},
			Equipment: []string{"Stretcher", "Defibrillator", "Oxygen", "Rope"}}
		if i%7 == 0 {
			tm.Status = engine.TeamOnMission
		}
		for j := range 5 {
			lat := lyonLat + float64((i*13+j*7)%200-100)/100
			lng := lyonLng + float64((i*17+j*11)%200-100)/100
			tm.Members = append(tm.Members, model.Member{ID: fmt.Sprint(j), Name: "m", Lat: fptr(lat), Lng: fptr(lng)})
		}
		teams[i] = tm
	}
	return teams
}

func BenchmarkRankTeams1000(b *testing.B) {
	teams := benchTeams(1000)
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(lyonLat), Lng: fptr(lyonLng),
		RequiredEquipment: []string{"defibrillator", "oxygen", "stretcher"}}
	b.ReportAllocs()
	for b.Loop() {
		engine.RankTeams(teams, target, 0.2)
	}
}

// TestRankTeams_Allocs keeps the inner loop free of allocations: the answer, the
// distances and the sort only, whatever the number of teams (timing: BenchmarkRankTeams1000).
func TestRankTeams_Allocs(t *testing.T) {
	teams := benchTeams(1000)
	target := model.ScoreTarget{Vertical: "healthcare", Lat: fptr(lyonLat), Lng: fptr(lyonLng),
		RequiredEquipment: []string{"defibrillator", "oxygen", "stretcher"}}
	if a := testing.AllocsPerRun(10, func() { engine.RankTeams(teams, target, 0.2) }); a > 4 {
		t.Fatalf("%v allocations per call over 1,000 teams", a)
	}
}
