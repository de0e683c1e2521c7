package model_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestTeamScore_AppendJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"SAMU Lyon 1", `quote " and \ backslash`, "<script>&", "é\u2028", "\x01ctl", ""}
	for i := range 2000 {
		s := model.TeamScore{TeamID: model.NewID(), TeamName: names[i%len(names)], Score: r.Float64(),
			Eligible: i%2 == 0, Factors: model.ScoreFactors{Vertical: float64(i % 2), Availability: 1,
				Proximity: 1 / (1 + r.Float64()*1e3), Equipment: r.Float64() * 1e-8}}
		if i%3 == 0 {
			d := r.Float64() * 20000
			s.Factors.DistanceKm = &d
		}
		s.Factors.PositionSource = []string{engine.PositionMember, engine.PositionZoneCentroid,
			engine.PositionUnknown, engine.PositionNoEvent}[i%4]
		if !s.Eligible {
			s.Reason = names[i%len(names)]
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON\n got %s\nwant %s", got, want)
		}
	}
}
