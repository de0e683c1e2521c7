package engine

import (
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
func smsHold(tx model.Tx, o *model.OutboxEntry, now time.Time) (*smsHeldError, error) {
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

// smsCritical reports whether text is the FR1 line or the mission SMS of a critical event.
func smsCritical(text string) bool {
	if m, err := smscodec.DecodeMissionSMS(text); err == nil {
		return m.Priority == model.PriorityCritical
	}
	if m, err := smscodec.DecodeSMS(text); err == nil {
		return m.Priority == model.PriorityCritical
	}
	return false
}
