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
	if raw[0] != eventReplyV2 || len(raw) >= 12+len(in.RequestID)+len(in.Body) {
		t.Errorf("not packed: %x", raw)
	}
	// The unpacked form of older files still reads.
	v1 := append([]byte{eventReplyV1}, raw[1:12]...)
	v1 = append(append(v1, in.RequestID...), in.Body...)
	if out, err := decodeEventReply(v1); err != nil || string(out.Body) != string(in.Body) || out.RequestID != in.RequestID {
		t.Fatalf("version 1: %+v %v", out, err)
	}
	for _, bad := range [][]byte{nil, {1, 0}, append([]byte{9}, raw[1:]...), raw[:12], append(raw[:12:12], 0xFE, 7)} {
		if _, err := decodeEventReply(bad); err == nil {
			t.Fatalf("decoded a malformed record %x", bad)
		}
	}
}
