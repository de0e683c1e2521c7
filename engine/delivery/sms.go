package delivery

import (
	"errors"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// smsRecipientLimits cap the SMS a phone gets, like GoAlert's: at most 5 in any 15
// minutes and 11 in any hour, counted from the time the gateway accepted each. An SMS of a
// critical event (its FR1 line says C) is exempt. docs/decisions/0110-sms-recipient-limits.md.
var smsRecipientLimits = []struct {
	n   int
	per time.Duration
}{{5, 15 * time.Minute}, {11, time.Hour}}

// smsHeldError is the outcome of an SMS held back by its recipient's rate limit: the
// message ends without a call, and its record is held.
type smsHeldError struct{ msg string }

func (e *smsHeldError) Error() string { return e.msg }

// smsHold returns why the SMS o must be held back now (nil: it may go): its recipient
// got a limit's count of SMS within the limit's window, and it is not critical.
func smsHold(tx Tx, o *model.OutboxEntry, now time.Time) (*smsHeldError, error) {
	if smsCritical(o.Text) {
		return nil, nil
	}
	for _, l := range smsRecipientLimits {
		n, err := tx.CountSMSSentTo(o.TenantID, o.To, now.Add(-l.per))
		if err != nil {
			return nil, err
		}
		if n >= l.n {
			return &smsHeldError{fmt.Sprintf("held back: this number got %d SMS within %s (at most %d; critical events are exempt)",
				n, l.per, l.n)}, nil
		}
	}
	return nil, nil
}

// smsCritical reports whether text is the FR1 line, the mission SMS or a crew SMS of a
// critical event.
func smsCritical(text string) bool {
	if m, err := smscodec.DecodeMissionSMS(text); err == nil {
		return m.Priority == model.PriorityCritical
	}
	if m, err := smscodec.DecodeSMS(text); err == nil {
		return m.Priority == model.PriorityCritical
	}
	if m, err := smscodec.DecodeCrewSMS(text); err == nil {
		return m.Priority == model.PriorityCritical
	}
	return false
}

// newSMSRecord writes the pending record of an SMS outbox message, in its transaction.
func newSMSRecord(tx Tx, o *model.OutboxEntry) error {
	enc, n := smscodec.Segments(o.Text)
	return tx.PutSMSOutbound(o.TenantID, &model.SMSOutbound{ID: o.ID, To: o.To, EventID: optional(o.EventID),
		MissionID: optional(o.MissionID), Encoding: enc, Segments: n, Status: model.SMSPending,
		CreatedAt: o.CreatedAt, UpdatedAt: o.CreatedAt})
}

// settleSMSRecord writes an attempt's outcome on the SMS's record. A delivery report that
// came first (the gateway may report before the outcome is written) is kept.
func settleSMSRecord(tx Tx, o *model.OutboxEntry, res model.SendResult, ok, settled bool, now model.Time) error {
	m, err := tx.SMSOutbound(o.TenantID, o.ID)
	if model.IsKind(err, model.KindNotFound) {
		if err := newSMSRecord(tx, o); err != nil {
			return err
		}
		m, err = tx.SMSOutbound(o.TenantID, o.ID)
	}
	if err != nil {
		return err
	}
	m.Attempts, m.UpdatedAt = o.Attempts, now
	switch {
	case ok:
		m.GatewayMessageID, m.Error, m.SentAt = res.MessageID, "", &now
		if m.Status == model.SMSPending {
			m.Status = model.SMSSent
		}
	case settled:
		m.Status, m.Error = model.SMSFailed, o.LastError
		var held *smsHeldError
		if errors.As(res.Err, &held) {
			m.Status = model.SMSHeld
		}
	default:
		m.Error = o.LastError
	}
	return tx.PutSMSOutbound(o.TenantID, m)
}

// optional is nil for an empty id.
func optional(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}
