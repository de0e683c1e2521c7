package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// CheckJSON returns an invalid_json error naming the first problem of a request body, or
// nil.
func CheckJSON(b []byte) error {
	if p := scanStrict(b, ""); p != nil {
		return model.Errorf(model.KindInvalidJSON, "the body %s", p.msg)
	}
	return nil
}

// CheckJSONEnvelope is CheckJSON for a body whose items are judged alone: a problem inside
// an element of the array that is the member items of the top-level object is left to
// CheckJSONItem, which the reader of each item runs.
func CheckJSONEnvelope(b []byte, items string) error {
	if p := scanStrict(b, items); p != nil {
		return model.Errorf(model.KindInvalidJSON, "the body %s", p.msg)
	}
	return nil
}

// CheckJSONItem returns a validation_error naming the first problem of one item of a bulk
// body, or nil. Its field is the item's member that holds the problem, or whole when the
// problem is in none (a key of the item itself).
func CheckJSONItem(b []byte, whole string) error {
	if p := scanStrict(b, ""); p != nil {
		f := p.field
		if f == "" {
			f = whole
		}
		return model.Invalid(f, "the item %s", p.msg)
	}
	return nil
}

// maxStrictDepth is encoding/json's own nesting limit: deeper is its error to report.
const maxStrictDepth = 10000

// linearKeys is the number of keys of an object compared one by one; the keys of a
// larger object go into a map.
const linearKeys = 16

// strictProblem is what the scan found: the rest of a sentence whose subject is the body
// or the item, and the top-level member it is in ("" for none).
type strictProblem struct {
	msg, field string
}

// strictFrame is an open object or array.
type strictFrame struct {
	object bool
	// keys is where the object's keys start in strictScanner.keys (for an array, where the
	// keys of its parent end); seen holds them once there are more than linearKeys.
	keys int
	seen map[string]struct{}
	// index is the array element being read.
	index int
}

// strictKey is a key of an open object: its characters in the text (quotes excluded),
// and its decoded value when it holds escapes.
type strictKey struct {
	start, end int
	decoded    string
	escaped    bool
}

type strictScanner struct {
	b []byte
	i int
	// items, when set, names the top-level member whose array elements are not checked.
	items string
	stack []strictFrame
	keys  []strictKey
}

// strictScanners keeps scanners with their stacks, so that a check allocates nothing.
var strictScanners = sync.Pool{New: func() any {
	return &strictScanner{stack: make([]strictFrame, 0, 8), keys: make([]strictKey, 0, 32)}
}}

// scanStrict returns the first problem of b (none inside the elements of the top-level
// member items, when set).
func scanStrict(b []byte, items string) *strictProblem {
	sc := strictScanners.Get().(*strictScanner)
	sc.b, sc.i, sc.items = b, 0, items
	sc.stack, sc.keys = sc.stack[:0], sc.keys[:0]
	p := sc.run()
	sc.b = nil
	clear(sc.stack[:cap(sc.stack)])                 // the maps of wide objects,
	clear(sc.keys[:cap(sc.keys)])                   // the decoded keys: nothing of a body is kept
	if cap(sc.stack) <= 64 && cap(sc.keys) <= 256 { // a deep or wide body's stacks are not kept
		strictScanners.Put(sc)
	}
	return p
}

// The states of the scan: what comes next.
const (
	wantValue = iota
	wantKey   // the first key of an object, or a key after a comma
	afterValue
)

// run scans the text and returns its first problem.
func (sc *strictScanner) run() *strictProblem {
	b := sc.b
	state := wantValue
	for {
		sc.skipSpace()
		if sc.i >= len(b) {
			return nil // the end: complete, or cut short (the decoder's to report)
		}
		c := b[sc.i]
		switch state {
		case wantValue:
			switch c {
			case '{', '[':
				if len(sc.stack) >= maxStrictDepth {
					return nil
				}
				sc.stack = append(sc.stack, strictFrame{object: c == '{', keys: len(sc.keys)})
				sc.i++
				sc.skipSpace()
				switch {
				case sc.i < len(b) && b[sc.i] == c+2: // '{'+2 is '}', '['+2 is ']'
					sc.pop()
					sc.i++
					state = afterValue
				case c == '{':
					state = wantKey
				}
			case '"':
				end, _, p := sc.scanString(false)
				if p != nil || end < 0 {
					return p
				}
				sc.i, state = end, afterValue
			default:
				if !sc.scanLiteral() {
					return nil
				}
				state = afterValue
			}
		case wantKey:
			if c != '"' {
				return nil
			}
			start := sc.i
			end, escaped, p := sc.scanString(true)
			if p != nil || end < 0 {
				return p
			}
			if p := sc.addKey(start, end, escaped); p != nil {
				return p
			}
			sc.i = end
			sc.skipSpace()
			if sc.i >= len(b) || b[sc.i] != ':' {
				return nil
			}
			sc.i++
			state = wantValue
		case afterValue:
			if len(sc.stack) == 0 {
				return nil // data after the value: the decoder's to report
			}
			top := &sc.stack[len(sc.stack)-1]
			switch {
			case c == ',':
				sc.i++
				if top.object {
					state = wantKey
				} else {
					top.index++
					state = wantValue
				}
			case top.object && c == '}', !top.object && c == ']':
				sc.pop()
				sc.i++
			default:
				return nil
			}
		}
	}
}

func (sc *strictScanner) skipSpace() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// pop closes the innermost object or array.
func (sc *strictScanner) pop() {
	top := &sc.stack[len(sc.stack)-1]
	if top.object {
		sc.keys = sc.keys[:top.keys]
	}
	sc.stack = sc.stack[:len(sc.stack)-1]
}

// scanLiteral skips a number, true, false or null; false when the text holds none there.
func (sc *strictScanner) scanLiteral() bool {
	rest := sc.b[sc.i:]
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(rest) >= len(lit) && string(rest[:len(lit)]) == lit {
			sc.i += len(lit)
			return true
		}
	}
	// A number: its grammar is the decoder's to check; a run of the characters of numbers
	// finds where it ends.
	n := 0
	for n < len(rest) && (rest[n] >= '0' && rest[n] <= '9' || rest[n] == '-' || rest[n] == '+' ||
		rest[n] == '.' || rest[n] == 'e' || rest[n] == 'E') {
		n++
	}
	sc.i += n
	return n > 0
}

// scanString reads the string that opens at sc.i. It returns the offset after its closing
// quote, whether it holds escapes, and its problem (invalid UTF-8, an unpaired
// surrogate); end is -1 when the string is not JSON (a control character, a bad escape,
// no closing quote). A problem inside an unchecked item is skipped.
func (sc *strictScanner) scanString(key bool) (end int, escaped bool, p *strictProblem) {
	b := sc.b
	j := sc.i + 1
	for j < len(b) {
		for j < len(b) && plainStringByte[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		c := b[j]
		switch {
		case c == '"':
			return j + 1, escaped, nil
		case c < 0x20:
			return -1, false, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(b) {
				return -1, false, nil
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
				continue
			case 'u':
			default:
				return -1, false, nil
			}
			r, ok := hex4(b, j+2)
			if !ok {
				return -1, false, nil
			}
			if r < 0xd800 || r > 0xdfff {
				j += 6
				continue
			}
			if r <= 0xdbff && j+7 < len(b) && b[j+6] == '\\' && b[j+7] == 'u' {
				lo, ok := hex4(b, j+8)
				if !ok {
					return -1, false, nil
				}
				if lo >= 0xdc00 && lo <= 0xdfff {
					j += 12
					continue
				}
			}
			if p := sc.problem(key, "holds %s at byte offset %d%s, a UTF-16 surrogate that does not pair: not a character",
				b[j:j+6], j); p != nil {
				return 0, false, p
			}
			j += 6
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				if p := sc.problem(key, "is not valid UTF-8: byte 0x%02x at byte offset %d%s", c, j); p != nil {
					return 0, false, p
				}
			}
			j += size
		}
	}
	return -1, false, nil
}

// plainStringByte holds the bytes that a string holds as they are: ASCII but the quote, the
// backslash and the control characters.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// problem makes the problem of a string being read (a key when key is set), or nil
// inside an unchecked item. format ends with a %s verb for the location.
func (sc *strictScanner) problem(key bool, format string, args ...any) *strictProblem {
	if sc.inItem() {
		return nil
	}
	where := sc.pointer(!key)
	if where != "" {
		where = " (in " + where + ")"
	}
	p := &strictProblem{msg: fmt.Sprintf(format, append(args, where)...)}
	if len(sc.stack) > 1 || !key {
		p.field = sc.member()
	}
	return p
}

// member is the top-level member being read: the key of the top-level object whose value
// holds the scan ("" outside a top-level object).
func (sc *strictScanner) member() string {
	switch {
	case len(sc.stack) == 0 || !sc.stack[0].object:
		return ""
	case len(sc.stack) > 1:
		return sc.name(sc.keys[sc.stack[1].keys-1])
	default:
		return sc.name(sc.keys[len(sc.keys)-1])
	}
}

// inItem reports whether the scan is inside an element of the unchecked items.
func (sc *strictScanner) inItem() bool {
	return sc.items != "" && len(sc.stack) > 1 && sc.stack[0].object && !sc.stack[1].object &&
		sc.name(sc.keys[sc.stack[1].keys-1]) == sc.items
}

// addKey records the key of the innermost object at b[start:end] (quotes included), and
// refuses one the object holds already.
func (sc *strictScanner) addKey(start, end int, escaped bool) *strictProblem {
	k := strictKey{start: start + 1, end: end - 1, escaped: escaped}
	if escaped {
		// The string was checked: it decodes, and without replacement characters.
		var name string
		_ = json.Unmarshal(sc.b[start:end], &name)
		k.decoded = name
	}
	top := &sc.stack[len(sc.stack)-1]
	dup := false
	if top.seen != nil {
		name := sc.name(k)
		_, dup = top.seen[name]
		top.seen[name] = struct{}{}
	} else {
		for _, o := range sc.keys[top.keys:] {
			if sc.sameKey(o, k) {
				dup = true
				break
			}
		}
		if !dup && len(sc.keys)-top.keys >= linearKeys {
			top.seen = make(map[string]struct{}, 4*linearKeys)
			for _, o := range sc.keys[top.keys:] {
				top.seen[sc.name(o)] = struct{}{}
			}
			top.seen[sc.name(k)] = struct{}{}
		}
	}
	if dup && !sc.inItem() {
		name := sc.name(k)
		p := &strictProblem{field: name}
		if len(sc.stack) > 1 || !sc.stack[0].object {
			p.field = sc.member()
		}
		where := "one object"
		if ptr := sc.pointer(false); ptr != "" {
			where = "the object " + ptr
		}
		p.msg = fmt.Sprintf("has the key %s twice in %s (again at byte offset %d): a key may appear once in an object",
			quoteShort(name), where, start)
		return p
	}
	sc.keys = append(sc.keys, k)
	return nil
}

// name is the decoded value of a key.
func (sc *strictScanner) name(k strictKey) string {
	if k.escaped {
		return k.decoded
	}
	return string(sc.b[k.start:k.end])
}

func (sc *strictScanner) sameKey(a, k strictKey) bool {
	switch {
	case !a.escaped && !k.escaped:
		return bytes.Equal(sc.b[a.start:a.end], sc.b[k.start:k.end])
	case a.escaped && k.escaped:
		return a.decoded == k.decoded
	case a.escaped:
		return a.decoded == string(sc.b[k.start:k.end])
	default:
		return k.decoded == string(sc.b[a.start:a.end])
	}
}

// pointer is the JSON Pointer (RFC 6901) of the innermost open object or array, and with
// member of the value being read in it.
func (sc *strictScanner) pointer(member bool) string {
	var p strings.Builder
	seg := func(f *strictFrame, key strictKey) {
		p.WriteByte('/')
		if !f.object {
			p.WriteString(strconv.Itoa(f.index))
			return
		}
		p.WriteString(strings.ReplaceAll(strings.ReplaceAll(sc.name(key), "~", "~0"), "/", "~1"))
	}
	for d := 0; d+1 < len(sc.stack); d++ {
		// The member of an object being read is its last key before its child opened.
		var k strictKey
		if next := sc.stack[d+1].keys; next > 0 {
			k = sc.keys[next-1]
		}
		seg(&sc.stack[d], k)
	}
	if member && len(sc.stack) > 0 {
		var k strictKey
		if len(sc.keys) > 0 {
			k = sc.keys[len(sc.keys)-1]
		}
		seg(&sc.stack[len(sc.stack)-1], k)
	}
	s := p.String()
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// quoteShort quotes a key for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return strconv.Quote(s)
}
