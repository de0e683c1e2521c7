package model

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// listOrder is the order of a list the engine pages in memory: by a unique string key,
// descending or ascending. valid checks a key read back from a cursor.
type ListOrder[T any] struct {
	Key   func(*T) string
	desc  bool
	Valid func(string) bool
}

// byIDNewestFirst orders records newest first by id (UUIDv7, so by creation time), as
// docs/rules.md asks of every list of records (Lists).
func ByIDNewestFirst[T any](id func(*T) string) ListOrder[T] {
	return ListOrder[T]{Key: id, desc: true, Valid: ValidID}
}

// pageList is the page of a list the engine holds in memory (teams, zones, webhooks, API
// keys, parsers) after page.Cursor, in order o; keep filters items out before paging (nil
// keeps all). It ends as Page.Full says (a zero Limit and MaxBytes read them all). The
// cursor is the last item's key, base64url; one that does not decode to a valid key is a
// validation_error on `cursor`. items is sorted in place.
func PageList[T any](items []T, o ListOrder[T], keep func(*T) bool, page Page) ([]T, string, error) {
	var after string
	if page.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(page.Cursor)
		if err != nil || len(b) == 0 || !o.Valid(string(b)) {
			return nil, "", Invalid("cursor", "cursor is not valid")
		}
		after = string(b)
	}
	cmp := func(a, b T) int { return strings.Compare(o.Key(&a), o.Key(&b)) }
	if o.desc {
		cmp = func(a, b T) int { return strings.Compare(o.Key(&b), o.Key(&a)) }
	}
	slices.SortFunc(items, cmp)
	out := make([]T, 0, min(len(items), max(page.Limit, 0)))
	size := 0
	for i := range items {
		it := &items[i]
		if after != "" {
			if c := strings.Compare(o.Key(it), after); c == 0 || (c > 0) == o.desc {
				continue
			}
		}
		if keep != nil && !keep(it) {
			continue
		}
		next := 0
		if page.MaxBytes > 0 {
			next = JSONSize(it)
		}
		if page.Full(len(out), size, next) {
			return out, base64.RawURLEncoding.EncodeToString([]byte(o.Key(&out[len(out)-1]))), nil
		}
		out = append(out, *it)
		size += next
	}
	return out, "", nil
}

// jsonSize is the length of v's JSON, for Page.Full; 0 when it does not encode (the
// answer's own encoding reports that).
func JSONSize(v any) int {
	if a, ok := v.(interface{ AppendJSON([]byte) []byte }); ok {
		return len(a.AppendJSON(nil))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
