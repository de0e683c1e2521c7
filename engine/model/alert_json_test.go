package model_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestAlert_AppendJSONMatchesMarshal(t *testing.T) {
	at := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	str := func(s string) *string { return &s }
	for _, a := range []model.Alert{
		{},
		{ID: model.NewID(), Kind: model.AlertEventUndispatched, Key: "event_undispatched:x", Priority: "high",
			Message: "High event not dispatched: <fire> & \"smoke\" \u2028 日本", EventID: str(model.NewID()), Status: "open",
			RaisedAt: at, UpdatedAt: at},
		{ID: model.NewID(), Kind: model.AlertMissionUnacknowledged, Key: "k", Priority: "critical", Message: "m",
			EventID: str("e"), MissionID: str("m"), TeamID: str("t"), Status: "closed", RaisedAt: at, AckedAt: &at,
			AckedBy: str("u"), ClosedAt: &at, EscalatedAt: &at, UpdatedAt: at},
	} {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSON([]byte("kept")); !bytes.Equal(got, append([]byte("kept"), want...)) {
			t.Fatalf("\n got %s\nwant kept%s", got, want)
		}
	}
}
