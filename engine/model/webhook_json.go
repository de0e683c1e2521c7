package model

import (
	"bytes"
	"encoding/json"
	"strconv"
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
		if len(ev.Payload) > 0 && !marshalsAsIs(ev.Payload) {
			// json.Marshal writes a json.RawMessage compacted and HTML-escaped; the event
			// holds its payload as it came.
			var compact, escaped bytes.Buffer
			if err := json.Compact(&compact, ev.Payload); err != nil {
				return b, err
			}
			json.HTMLEscape(&escaped, compact.Bytes())
			c := *ev
			c.Payload = escaped.Bytes()
			ev = &c
		}
		b = ev.AppendJSON(b)
	} else {
		raw, err := json.Marshal(w.Payload)
		if err != nil {
			return b, err
		}
		b = append(b, raw...)
	}
	b = append(b, `,"tenant_id":`...)
	b = appendString(b, w.TenantID)
	b = append(b, `,"occurred_at":`...)
	b = AppendTime(b, w.OccurredAt)
	return append(b, '}'), nil
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

// AppendJSON appends the attempt's JSON to b: the document json.Marshal makes, without
// reflection (an attempt record is written for every message delivered, in the commit
// loop).
func (a *DeliveryAttempt) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, a.ID)
	b = append(b, `,"webhook_id":`...)
	b = appendString(b, a.WebhookID)
	b = append(b, `,"message_id":`...)
	b = appendString(b, a.MessageID)
	b = append(b, `,"event":`...)
	b = appendString(b, a.Event)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(a.Attempt), 10)
	b = append(b, `,"status":`...)
	b = appendString(b, a.Status)
	b = append(b, `,"status_code":`...)
	b = strconv.AppendInt(b, int64(a.StatusCode), 10)
	if a.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, a.Error)
	}
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, a.DurationMs, 10)
	b = append(b, `,"at":`...)
	b = AppendTime(b, a.At)
	b = append(b, `,"next_attempt_at":`...)
	b = appendTimePtr(b, a.NextAttemptAt)
	return append(b, '}')
}
