package model

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The search of GET /v1/events?q= (docs/decisions/0171-event-search.md): a word is a run of
// Unicode letters and digits; an event matches when every word of q begins a word of its
// type, zone_code, idempotency_key, device_id or of a string value anywhere in its payload
// (object keys and numbers are not searched), letter case aside. "gas lea" finds a "Gas
// leak"; "leak" does not find "gasleak".

// Bounds of q: more would only slow the scan, never narrow it usefully.
const (
	MaxQueryBytes = 200
	MaxQueryWords = 8
)

// QueryWords returns the words of q, lowercased; none for a q without a letter or digit.
func QueryWords(q string) []string {
	var out []string
	eachWord(q, func(w string) bool {
		out = append(out, strings.ToLower(w))
		return true
	})
	return out
}

func validQuery(q string) error {
	if q == "" {
		return nil
	}
	if len(q) > MaxQueryBytes {
		return Invalid("q", "q holds at most %d bytes", MaxQueryBytes)
	}
	switch n := len(QueryWords(q)); {
	case n == 0:
		return Invalid("q", "q must hold a word (letters or digits)")
	case n > MaxQueryWords:
		return Invalid("q", "q holds at most %d words", MaxQueryWords)
	}
	return nil
}

// matchWords reports whether every word of words (lowercased) begins a word of ev's text.
func matchWords(ev *Event, words []string) bool {
	for _, w := range words {
		if !eventHasWord(ev, w) {
			return false
		}
	}
	return true
}

func eventHasWord(ev *Event, w string) bool {
	if textHasWord(ev.Type, w) || textHasWord(ev.IdempotencyKey, w) ||
		(ev.ZoneCode != nil && textHasWord(*ev.ZoneCode, w)) || (ev.DeviceID != nil && textHasWord(*ev.DeviceID, w)) {
		return true
	}
	found := false
	payloadStrings(ev.Payload, func(s string) bool {
		found = textHasWord(s, w)
		return !found
	})
	return found
}

// textHasWord reports whether a word of text begins with w (lowercased).
func textHasWord(text, w string) bool {
	found := false
	eachWord(text, func(word string) bool {
		found = hasFoldedPrefix(word, w)
		return !found
	})
	return found
}

// hasFoldedPrefix reports whether word begins with prefix (lowercased), letter case aside.
func hasFoldedPrefix(word, prefix string) bool {
	for _, pr := range prefix {
		r, n := utf8.DecodeRuneInString(word)
		if n == 0 || unicode.ToLower(r) != pr {
			return false
		}
		word = word[n:]
	}
	return true
}

// eachWord calls fn with each word of s until fn returns false.
func eachWord(s string, fn func(string) bool) {
	start := -1
	for i, r := range s {
		in := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			if !fn(s[start:i]) {
				return
			}
			start = -1
		}
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// payloadStrings calls fn with each string value of a JSON document (at any depth, never
// an object's keys) until fn returns false. The payload was checked as JSON when the event
// came in; a malformed one yields what it holds up to the fault.
func payloadStrings(raw []byte, fn func(string) bool) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end, escaped := stringEnd(raw, i+1)
		if end < 0 {
			return
		}
		j := end + 1
		for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
			j++
		}
		if j < len(raw) && raw[j] == ':' { // an object's key
			i = end
			continue
		}
		s := string(raw[i+1 : end])
		if escaped {
			if err := json.Unmarshal(raw[i:end+1], &s); err != nil {
				return
			}
		}
		if !fn(s) {
			return
		}
		i = end
	}
}

// stringEnd returns the index of the quote that ends the JSON string starting at from, and
// whether it holds an escape; -1 when it does not end.
func stringEnd(raw []byte, from int) (int, bool) {
	escaped := false
	for j := from; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}
