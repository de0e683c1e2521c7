package server

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

// TestSyncBatch_RenderAccepted: the hand-written answer is render's, byte for byte.
func TestSyncBatch_RenderAccepted(t *testing.T) {
	at := engine.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))
	for _, a := range []engine.EventAccepted{
		{EventID: engine.NewID(), Status: engine.EventPending, ChannelSelected: engine.ChannelREST, CreatedAt: at},
		{EventID: engine.NewID(), Status: engine.EventQueuedOffline, ChannelSelected: engine.ChannelQueued, CreatedAt: at},
		{EventID: engine.NewID(), Status: engine.EventPending, ChannelSelected: engine.ChannelSMS, CreatedAt: at, RequiresManual: true},
		{EventID: engine.NewID(), Status: engine.EventPending, ChannelSelected: engine.ChannelREST, CreatedAt: at,
			PayloadWarnings: []string{`payload.severity is not a gov.v1 severity (accepted: "<x>" & more); ignored`}},
		{EventID: engine.NewID(), Status: engine.EventPending, ChannelSelected: engine.ChannelREST, CreatedAt: at, PayloadWarnings: []string{}},
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
