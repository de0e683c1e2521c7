package model_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// TestCheckText: every class of refused code point, at its edges, in any place of a value,
// is a validation_error on the field that names the code point and does not quote the
// value; text in any script, with marks, emoji and joiners, passes.
func TestCheckText(t *testing.T) {
	refused := []struct {
		class string
		runes []rune
	}{
		{"C0 control", []rune{0x00, 0x01, '\t', '\n', '\r', 0x1b, 0x1f}},
		{"DEL and C1 control", []rune{0x7f, 0x80, 0x85, 0x9f}},
		{"line and paragraph separator", []rune{0x2028, 0x2029}},
		{"bidi embedding and override", []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e}},
		{"bidi isolate", []rune{0x2066, 0x2067, 0x2068, 0x2069}},
		{"noncharacter", []rune{0xfdd0, 0xfdef, 0xfffe, 0xffff, 0x1fffe, 0x1ffff, 0x10fffe, 0x10ffff}},
	}
	for _, tc := range refused {
		for _, r := range tc.runes {
			for _, s := range []string{string(r), "a" + string(r), string(r) + "b", "Zürich" + string(r) + "Nord"} {
				t.Run(fmt.Sprintf("%s/%U/%q", tc.class, r, s), func(t *testing.T) {
					err := model.CheckText("name", s)
					modeltest.AssertInvalid(t, err, "name")
					if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%U", r)) || strings.Contains(msg, "Zürich") {
						t.Fatalf("message %q: want the code point named and the value not quoted", msg)
					}
				})
			}
		}
	}
	for _, s := range []string{"\xff", "ok\xc3", "\xed\xa0\x80" /* an encoded surrogate */} {
		t.Run(fmt.Sprintf("invalid UTF-8/%q", s), func(t *testing.T) {
			modeltest.AssertInvalid(t, model.CheckText("type", s), "type")
		})
	}
	for _, s := range []string{
		"", "FIRE_ALARM", "Zürich", "東京", "Αθήνα", "القاهرة", "תל אביב", "नई दिल्ली",
		"🚑", "👩‍🚒 crew" /* zero-width joiner */, "🇫🇷", "e\u0301" /* combining acute */, "a\u00a0b", "x y",
		"\u200e\u200f\u061c" /* the marks */, "\ufeff", "\ufffd", "\ufdcf\ufdf0", "\uffef", "\U0001fffd", "\U000e0001",
		"\ue000" /* private use */, "~!@#$%^&*()|;'\"<>", "tab-free",
	} {
		t.Run(fmt.Sprintf("accepted/%q", s), func(t *testing.T) {
			if err := model.CheckText("name", s); err != nil {
				t.Fatalf("CheckText(%q) = %v", s, err)
			}
		})
	}
}

// TestCheckName: CheckName is CheckLength then CheckText; RequireText (names) and
// NormalizeEmail hold the same rule.
func TestCheckName(t *testing.T) {
	if err := model.CheckName("name", "abc", 3); err != nil {
		t.Fatal(err)
	}
	modeltest.AssertInvalid(t, model.CheckName("name", "abcd", 3), "name")
	modeltest.AssertInvalid(t, model.CheckName("name", "a\x00", 3), "name")
	if s, err := model.RequireText("name", "  Zürich ", 200); err != nil || s != "Zürich" {
		t.Fatalf("RequireText = %q, %v", s, err)
	}
	for _, s := range []string{"a\x00b", "a\uffffb", "a\u202eb", "a\tb"} {
		_, err := model.RequireText("name", s, 200)
		modeltest.AssertInvalid(t, err, "name")
		_, err = model.NormalizeEmail("email", "ops"+s+"@example.org")
		modeltest.AssertInvalid(t, err, "email")
	}
	if s, err := model.NormalizeEmail("email", "Jürgen@Example.org"); err != nil || s != "jürgen@example.org" {
		t.Fatalf("NormalizeEmail = %q, %v", s, err)
	}
}
