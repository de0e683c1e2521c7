package model

import "unicode/utf8"

// CheckText refuses the text that is never stored in an identifier, a name, a type or a
// key (docs/rules.md, HTTP; docs/decisions/0131-text-never-stored.md): invalid
// UTF-8, the C0 controls (U+0000–U+001F, tab and line feed included), DEL
// and the C1 controls (U+007F–U+009F), the line and paragraph separators (U+2028,
// U+2029), the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069) and the Unicode noncharacters (U+FDD0–U+FDEF and the last two code
// points of every plane). The error is a validation_error on field naming the code point,
// never quoting the value. Any other text passes, in any script, with its marks, emoji and
// joiners; the left-to-right and right-to-left marks (U+200E, U+200F, U+061C) too. Free
// text (notes, feedback, an event's payload, an SMS) is not held to it.
func CheckText(field, s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return Invalid(field, "%s is not valid UTF-8", field)
		}
		if what := refusedRune(r); what != "" {
			return Invalid(field, "%s holds %s (U+%04X), which identifiers, names, types and keys may not hold", field, what, r)
		}
		i += size
	}
	return nil
}

// refusedRune names the class of r when CheckText refuses it, else "".
func refusedRune(r rune) string {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return "a control character"
	case r == 0x2028, r == 0x2029:
		return "a line or paragraph separator"
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return "a bidirectional control"
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
		return "a noncharacter"
	}
	return ""
}

// CheckName checks an optional identifier or name: at most max characters, and text
// CheckText accepts.
func CheckName(field, s string, max int) error {
	if err := CheckLength(field, s, max); err != nil {
		return err
	}
	return CheckText(field, s)
}
