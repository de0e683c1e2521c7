package store

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestEventReplyCodec(t *testing.T) {
	in := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"event_id":"x"}`),
		RequestID: model.NewID()}, CreatedAt: model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))}
	raw, err := encodeEventReply(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeEventReply(raw)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != in.Status || string(out.Body) != string(in.Body) || out.RequestID != in.RequestID || !out.CreatedAt.Equal(in.CreatedAt.Time) {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	for _, bad := range [][]byte{nil, {1, 0}, append([]byte{2}, raw[1:]...), raw[:12]} {
		if _, err := decodeEventReply(bad); err == nil {
			t.Fatalf("decoded a malformed record %x", bad)
		}
	}
}
