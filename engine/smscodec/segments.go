package smscodec

import "strings"

// Encodings of an SMS.
const (
	EncodingGSM7 = "GSM-7"
	EncodingUCS2 = "UCS-2"
)

// Segments returns how a text goes out as SMS: GSM-7 when every character is in the GSM
// 03.38 tables (an extension character takes two septets), else UCS-2; and how many
// segments it takes: one up to 160 septets (GSM-7) or 70 UTF-16 units (UCS-2), else
// concatenated parts of 153 septets or 67 units each (the rest of each part is the
// concatenation header), a character never split across two parts (an escape pair, a
// surrogate pair). Usage counts these segments (docs/decisions/0124-sms-segments.md).
// An empty text is one segment.
func Segments(text string) (encoding string, n int) {
	if septets, ok := gsm7Septets(text); ok {
		if septets <= 160 {
			return EncodingGSM7, 1
		}
		return EncodingGSM7, pack(text, 153, func(r rune) int {
			if strings.ContainsRune(gsm7Ext, r) {
				return 2
			}
			return 1
		})
	}
	units := 0
	for _, r := range text {
		units += utf16Units(r)
	}
	if units <= 70 {
		return EncodingUCS2, 1
	}
	return EncodingUCS2, pack(text, 67, utf16Units)
}

// pack counts the parts of at most size units that text fills, each character whole.
func pack(text string, size int, cost func(rune) int) int {
	parts, used := 1, 0
	for _, r := range text {
		c := cost(r)
		if used+c > size {
			parts, used = parts+1, 0
		}
		used += c
	}
	return parts
}

// utf16Units is how many UTF-16 code units r takes: two beyond the basic plane.
func utf16Units(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}
