package smscodec_test

import (
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

func TestSegments(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		enc        string
		n          int
	}{
		{"Empty", "", smscodec.EncodingGSM7, 1},
		{"GSM7One", strings.Repeat("a", 160), smscodec.EncodingGSM7, 1},
		{"GSM7Two", strings.Repeat("a", 161), smscodec.EncodingGSM7, 2},
		{"GSM7Three", strings.Repeat("a", 307), smscodec.EncodingGSM7, 3},
		// 80 pipes are 160 septets: one SMS; one more and the escape pairs fill parts of
		// 153 septets, never split (76 pairs a part).
		{"ExtensionOne", strings.Repeat("|", 80), smscodec.EncodingGSM7, 1},
		{"ExtensionNotSplit", strings.Repeat("|", 81), smscodec.EncodingGSM7, 2},
		{"ExtensionPairs", strings.Repeat("|", 153), smscodec.EncodingGSM7, 3},
		{"UCS2One", "é" + strings.Repeat("ж", 69), smscodec.EncodingUCS2, 1},
		{"UCS2Two", strings.Repeat("ж", 71), smscodec.EncodingUCS2, 2},
		{"UCS2Surrogates", strings.Repeat("🚒", 35), smscodec.EncodingUCS2, 1},
		{"UCS2SurrogatesNotSplit", strings.Repeat("🚒", 36), smscodec.EncodingUCS2, 2},
		// 134 units would fill two parts of 67 exactly, but a pair is never split.
		{"UCS2PairsPacked", "жж" + strings.Repeat("🚒", 66), smscodec.EncodingUCS2, 3},
		{"OneCharForcesUCS2", strings.Repeat("a", 70) + "ж", smscodec.EncodingUCS2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, n := smscodec.Segments(tc.text)
			if enc != tc.enc || n != tc.n {
				t.Fatalf("Segments = %s, %d; want %s, %d", enc, n, tc.enc, tc.n)
			}
		})
	}
}

// TestSegmentsMissionSMS: a mission SMS (line and reply line) stays one GSM-7 segment.
func TestSegmentsMissionSMS(t *testing.T) {
	lat, lng := -45.76404, -104.83566
	body, err := smscodec.EncodeMissionSMS("7KQ2M", "0190a1b2-c3d4-7e5f-8a9b-0c1d099a8057", "critical",
		strings.Repeat("T", 80), strings.Repeat("Z", 64), &lat, &lng)
	if err != nil {
		t.Fatal(err)
	}
	if enc, n := smscodec.Segments(body); enc != smscodec.EncodingGSM7 || n != 1 {
		t.Fatalf("mission SMS %q: %s, %d segments; want GSM-7, 1", body, enc, n)
	}
}
