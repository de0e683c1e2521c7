package alerts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	fits := strings.Repeat("é", maxMessage) // twice as many bytes as runes
	if got := clip("  " + fits + "\n"); got != fits {
		t.Fatalf("a message of %d runes was changed: %d runes", maxMessage, utf8.RuneCountInString(got))
	}
	long := fits + "x"
	got := clip(long)
	if utf8.RuneCountInString(got) != maxMessage || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Fatalf("a message of %d runes clipped to %q (%d runes)", maxMessage+1, got, utf8.RuneCountInString(got))
	}
	if got := clip("short"); got != "short" {
		t.Fatalf("clip(short) = %q", got)
	}
}
