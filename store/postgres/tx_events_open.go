package postgres

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Open events and search of GET /v1/events (docs/decisions/0170-open-events.md,
// docs/decisions/0171-event-search.md).

// openRank is model.OpenRank in SQL, word for word the expression of the events_open index
// (migrations/0006_events_open.sql).
const openRank = `(CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 WHEN 'low' THEN 3 ELSE 4 END)`

// eventChunk is how many rows one query of a filtered walk reads: the words of q are only
// narrowed in SQL (a substring of the lowercased record), and matched exactly in Go.
const eventChunk = 256

// eventFilterSQL is the WHERE of the typed filters, on $2 to $10, and of the query's words
// ($10, a text[] or NULL), each a substring of the lowercased record (jsonb: escapes read).
const eventFilterSQL = `tenant_id = $1
	AND ($2 = '' OR zone_code = $2) AND ($3 = '' OR vertical = $3) AND ($4 = '' OR status = $4)
	AND ($5 = '' OR priority = $5) AND ($6 = '' OR type = $6) AND ($7 = '' OR origin = $7)
	AND ($8::timestamptz IS NULL OR created_at >= $8) AND ($9::timestamptz IS NULL OR created_at <= $9)
	AND ($10::text[] IS NULL OR NOT EXISTS (SELECT 1 FROM unnest($10::text[]) w WHERE strpos(lower(doc::jsonb::text), w) = 0))`

func eventFilterArgs(tn string, f model.EventFilter) []any {
	// Only the words in ASCII narrow in SQL: lower() leaves other letters as they are
	// under the C locale, and the Go match decides them.
	var words []string
	for _, w := range model.QueryWords(f.Query) {
		if isASCII(w) {
			words = append(words, w)
		}
	}
	return []any{tn, f.ZoneCode, f.Vertical, f.Status, f.Priority, f.Type, f.Origin, f.Since, f.Until, words}
}

// openCursor is rank (1 byte) | event id (16 bytes), as the bbolt store's open key.
func encodeOpenCursor(rank int, id string) string {
	u := uuid.MustParse(id)
	return base64.RawURLEncoding.EncodeToString(append([]byte{byte(rank)}, u[:]...))
}

func decodeOpenCursor(c string) (*int, *string, error) {
	if c == "" {
		return nil, nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 17 {
		return nil, nil, model.Invalid("cursor", "cursor is not valid")
	}
	rank, id := int(b[0]), uuid.UUID(b[1:]).String()
	return &rank, &id, nil
}

// filteredEvents lists the events of f in chunks of eventChunk rows: in dispatcher order
// from the events_open index when f.Open, else newest first; every row is checked by
// f's Matcher, which alone decides the words of q.
func (t *tx) filteredEvents(tn string, f model.EventFilter, p model.Page) ([]model.Event, string, error) {
	var rank *int
	var after *string
	var err error
	if f.Open {
		rank, after, err = decodeOpenCursor(p.Cursor)
	} else {
		after, err = decodeCursor(p.Cursor)
	}
	if err != nil {
		return nil, "", err
	}
	match := f.Matcher()
	out := []model.Event{}
	size, lastRank := 0, 0
	var last string
	for {
		args := eventFilterArgs(tn, f)
		var sql string
		if f.Open {
			sql = `SELECT id, doc, ` + openRank + ` FROM events WHERE ` + eventFilterSQL + ` AND status <> 'closed'
				AND ($11::int IS NULL OR (` + openRank + `, id) > ($11::int, $12::uuid))
				ORDER BY ` + openRank + `, id LIMIT $13`
			args = append(args, rank, after, eventChunk)
		} else {
			sql = `SELECT id, doc, 0 FROM events WHERE ` + eventFilterSQL + `
				AND ($11::uuid IS NULL OR id < $11) ORDER BY id DESC LIMIT $12`
			args = append(args, after, eventChunk)
		}
		rows, full := 0, false
		err := t.each(sql, args, func(r pgx.Rows) (bool, error) {
			var id string
			var raw []byte
			var rk int
			if err := r.Scan(&id, &raw, &rk); err != nil {
				return false, err
			}
			rows++
			rank, after = &rk, &id
			var ev model.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return false, fmt.Errorf("postgres: decoding an event: %w", err)
			}
			if !match(&ev) {
				return true, nil
			}
			if p.Full(len(out), size, len(raw)) {
				full = true
				return false, nil
			}
			out = append(out, ev)
			last, lastRank, size = id, rk, size+len(raw)
			return true, nil
		})
		switch {
		case err != nil:
			return nil, "", err
		case full && f.Open:
			return out, encodeOpenCursor(lastRank, last), nil
		case full:
			return out, encodeCursor(last), nil
		case rows < eventChunk:
			return out, "", nil
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
