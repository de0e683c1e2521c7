package model

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends the envelope's JSON to b: the document json.Marshal makes, with an
// event's payload written by Event.AppendMarshal, without reflection (the body of every
// event.created message is made in the transaction that stores the event), and any other
// payload by json.Marshal.
func (w *WebhookEnvelope) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"event":`...)
	b = appendString(b, w.Event)
	b = append(b, `,"payload":`...)
	if ev, ok := w.Payload.(*Event); ok && ev != nil {
		var err error
		if b, err = ev.AppendMarshal(b); err != nil {
			return b, err
		}
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
