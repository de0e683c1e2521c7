package model

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendMarshal appends the document json.Marshal makes of ev: AppendJSON's, with the
// payload compacted and escaped as json.Marshal does when that changes it (an event holds
// its payload as it came, valid JSON: checked when the event came in). The webhook body
// of an event and its change on the stream are written through it.
func (ev *Event) AppendMarshal(b []byte) ([]byte, error) {
	if len(ev.Payload) > 0 && !marshalsAsIs(ev.Payload) {
		var compact, escaped bytes.Buffer
		if err := json.Compact(&compact, ev.Payload); err != nil {
			return b, err
		}
		json.HTMLEscape(&escaped, compact.Bytes())
		c := *ev
		c.Payload = escaped.Bytes()
		ev = &c
	}
	return ev.AppendJSON(b), nil
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

// AppendJSON appends the event's JSON record to b: the same document json.Marshal makes,
// without reflection, and with the payload copied as it came (it was valid JSON when the
// request was decoded). The store writes every event through it: this is the hot path.
func (ev *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"event_id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, ev.Type)
	b = append(b, `,"priority":`...)
	b = appendString(b, ev.Priority)
	b = append(b, `,"vertical":`...)
	b = appendString(b, ev.Vertical)
	b = append(b, `,"idempotency_key":`...)
	b = appendString(b, ev.IdempotencyKey)
	b = append(b, `,"payload":`...)
	if len(ev.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, ev.Payload...)
	}
	b = append(b, `,"zone_code":`...)
	b = appendStringPtr(b, ev.ZoneCode)
	b = append(b, `,"lat":`...)
	b = appendFloatPtr(b, ev.Lat)
	b = append(b, `,"lng":`...)
	b = appendFloatPtr(b, ev.Lng)
	if ev.Severity != "" {
		b = append(b, `,"severity":`...)
		b = appendString(b, ev.Severity)
	}
	if len(ev.RequiredEquipment) > 0 {
		b = append(b, `,"required_equipment":`...)
		b = appendStrings(b, ev.RequiredEquipment)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, ev.Status)
	b = append(b, `,"channel_selected":`...)
	b = appendString(b, ev.ChannelSelected)
	b = append(b, `,"channels_attempted":`...)
	b = appendStrings(b, ev.ChannelsAttempted)
	b = append(b, `,"source":`...)
	b = appendString(b, ev.Source)
	b = append(b, `,"batch_id":`...)
	b = appendStringPtr(b, ev.BatchID)
	b = append(b, `,"device_id":`...)
	b = appendStringPtr(b, ev.DeviceID)
	b = append(b, `,"captured_at":`...)
	b = appendTimePtr(b, ev.CapturedAt)
	if ev.DeviceCapturedAt != nil {
		b = append(b, `,"device_captured_at":`...)
		b = AppendTime(b, *ev.DeviceCapturedAt)
	}
	b = append(b, `,"origin":`...)
	b = appendStringPtr(b, ev.Origin)
	b = append(b, `,"created_at":`...)
	b = AppendTime(b, ev.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = AppendTime(b, ev.UpdatedAt)
	b = append(b, `,"delivered_at":`...)
	b = appendTimePtr(b, ev.DeliveredAt)
	b = append(b, `,"closed_at":`...)
	b = appendTimePtr(b, ev.ClosedAt)
	if d := ev.Disposition; d != nil {
		b = append(b, `,"disposition":{"code":`...)
		b = appendString(b, d.Code)
		b = append(b, `,"note":`...)
		b = appendString(b, d.Note)
		b = append(b, `,"closed_by":`...)
		b = appendString(b, d.ClosedBy)
		b = append(b, `,"at":`...)
		b = AppendTime(b, d.At)
		b = append(b, '}')
	}
	b = append(b, `,"delivery":{"plan":`...)
	b = appendStrings(b, ev.Delivery.Plan)
	b = append(b, `,"started":`...)
	b = strconv.AppendInt(b, int64(ev.Delivery.Started), 10)
	b = append(b, `,"outstanding":`...)
	b = strconv.AppendInt(b, int64(ev.Delivery.Outstanding), 10)
	return append(b, "}}"...)
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendStrings appends a JSON array of strings; nil is null, as json.Marshal writes it.
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func AppendTime(b []byte, t Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"')
}

func appendTimePtr(b []byte, t *Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return AppendTime(b, *t)
}

// appendFloatPtr writes a number as encoding/json does.
func appendFloatPtr(b []byte, f *float64) []byte {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return append(b, "null"...)
	}
	v := *f
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string with the escapes of encoding/json: quotes,
// backslashes and control characters, <, > and & (HTML-safe), U+2028 and U+2029, and
// invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
