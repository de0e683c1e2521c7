package model

import (
	"bytes"
	"encoding/json"
)

// AppendJSON appends the envelope's JSON to b: the document json.Marshal makes, with an
// event's payload written by Event.AppendJSON, without reflection (the body of every
// event.created message is made in the transaction that stores the event), and any other
// payload by json.Marshal. An event's payload is valid JSON (checked when the event came
// in): it is copied, or compacted and escaped as json.Marshal does when that changes it.
func (w *WebhookEnvelope) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"event":`...)
	b = appendString(b, w.Event)
	b = append(b, `,"payload":`...)
	if ev, ok := w.Payload.(*Event); ok && ev != nil {
		c := *ev
		if len(c.Payload) > 0 && !marshalsAsIs(c.Payload) {
			// json.Marshal writes a json.RawMessage compacted and HTML-escaped; the event
			// holds its payload as it came.
			var compact, escaped bytes.Buffer
			if err := json.Compact(&compact, c.Payload); err != nil {
				return b, err
			}
			json.HTMLEscape(&escaped, compact.Bytes())
			c.Payload = escaped.Bytes()
		}
		b = c.AppendJSON(b)
	} else {
		raw, err := json.Marshal(w.Payload)
		if err != nil {
			return b, err
		}
		b = append(b, raw...)
	}
	b = append(b, `,"tenant_id":`...)
	b = appendString(b, w.TenantID)
	b = append(b, `,"occurred_at":"`...)
	b = w.OccurredAt.UTC().AppendFormat(b, TimeLayout)
	return append(b, `"}`...), nil
}

// marshalsAsIs says whether json.Marshal writes the valid JSON raw as it is: no
// whitespace outside its strings, and none of the characters it escapes for HTML (<, >, &,
// U+2028, U+2029). One pass, without the scanner json.Compact runs.
func marshalsAsIs(raw []byte) bool {
	inString, escaped := false, false
	for i, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
