package server

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestSyncBatch_RenderAccepted: the hand-written answer is render's, byte for byte.
func TestSyncBatch_RenderAccepted(t *testing.T) {
	at := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	for _, a := range []model.EventAccepted{
		{EventID: model.NewID(), Status: model.EventPending, ChannelSelected: model.ChannelREST, CreatedAt: at},
		{EventID: model.NewID(), Status: model.EventQueuedOffline, ChannelSelected: model.ChannelQueued, CreatedAt: at},
		{EventID: model.NewID(), Status: model.EventPending, ChannelSelected: model.ChannelSMS, CreatedAt: at, RequiresManual: true},
		{EventID: model.NewID(), Status: model.EventPending, ChannelSelected: model.ChannelREST, CreatedAt: at,
			PayloadWarnings: []string{`payload.severity is not a gov.v1 severity (accepted: "<x>" & more); ignored`}},
		{EventID: model.NewID(), Status: model.EventPending, ChannelSelected: model.ChannelREST, CreatedAt: at, PayloadWarnings: []string{}},
	} {
		got, err := renderAccepted(a, "req-1\"x")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := render(a, "req-1\"x")
		if string(got) != string(want) {
			t.Fatalf("renderAccepted:\n%s\nrender:\n%s", got, want)
		}
	}
}
