package store

import (
	"bytes"
	"fmt"
	"testing"
)

func TestPackJSON(t *testing.T) {
	rid := "01a2193a-0fc8-724e-bd7a-d834caa2369f"
	reply := `{"event_id":"01a2193a-0fca-7001-a0f0-c37090f00ec1","status":"pending","channel_selected":"rest_full",` +
		`"created_at":"2026-11-26T18:59:25.258Z","request_id":"` + rid + `"}`
	var batch bytes.Buffer
	batch.WriteString(`{"batch_id":"01a2193a-0fca-7000-9f5d-298c93139d91","device_id":"t","captured_at":"2026-11-26T18:59:25.000Z","items":[`)
	for i := range 50 {
		fmt.Fprintf(&batch, `{"index":%d,"idempotency_key":"field-3b241101-e2bb-4255-8caf-4136c566a%03d","status":"accepted","event_id":"01a2193a-0fca-7001-a0f0-c37090f00%03d","error":null},`, i, i, i)
	}
	batch.WriteString(`{"index":50,"idempotency_key":"x","status":"rejected","event_id":null,"error":{"code":"validation_error","message":"é ☃ \u2028","field":"type"}}]}`)
	for name, in := range map[string]string{
		"reply": rid + reply, "batch": batch.String(), "empty": "",
		"near misses": `01A2193A-0FCA-7001-A0F0-C37090F00EC1 01a2193a-0fca-7001-a0f0-c37090f00ec 2026-02-30T00:00:00.000Z ` +
			`2026-11-26T18:59:25.25Z 2026-11-26T18:59:25.258+01:00 "field- {"index": "}`,
		"times":               `"0001-01-01T00:00:00.000Z" "9999-12-31T23:59:59.999Z" "1969-12-31T23:59:59.999Z"`,
		"truncated fragments": `{"inde ,"idempotency_ke`,
	} {
		t.Run(name, func(t *testing.T) {
			packed, ok := packJSON(nil, []byte(in))
			if !ok {
				t.Fatal("not packed")
			}
			out, err := unpackJSON(nil, packed)
			if err != nil || string(out) != in {
				t.Fatalf("unpacked %q (%v), want %q", out, err, in)
			}
			t.Logf("%d → %d bytes", len(in), len(packed))
		})
	}
	if packed, _ := packJSON(nil, []byte(rid+reply)); len(packed) > 90 {
		t.Errorf("a stored event reply packs to %d bytes", len(packed))
	}
	for _, bad := range [][]byte{{'a', 0xFF}, {0xC0}, {0xC1, 'x'}, []byte("\xf5")} {
		if _, ok := packJSON(nil, bad); ok {
			t.Errorf("%q packed", bad)
		}
	}
	for _, bad := range [][]byte{{packUUID, 1, 2}, {packUUIDRef, 0}, {packTime}, {packFragment, 250}, {packFragment}} {
		if _, err := unpackJSON(nil, bad); err == nil {
			t.Errorf("%q unpacked", bad)
		}
	}
}

// FuzzPackJSON: whatever the text, unpacking what was packed gives it back.
func FuzzPackJSON(f *testing.F) {
	f.Add([]byte(`{"event_id":"01a2193a-0fca-7001-a0f0-c37090f00ec1","created_at":"2026-11-26T18:59:25.258Z"}`))
	f.Add([]byte(`{"index":1,"idempotency_key":"field-3b241101-e2bb-4255-8caf-4136c566a962","status":"accepted"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		packed, ok := packJSON(nil, in)
		if !ok {
			return
		}
		out, err := unpackJSON(nil, packed)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("unpacked %q (%v), want %q", out, err, in)
		}
	})
}
