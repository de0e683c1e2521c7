package model

import "time"

// Bounds of the clock correction of devices and
// edge nodes (docs/decisions/0115-clock-drift.md).
const (
	// MaxClockOffset is the largest sender clock offset the node corrects; beyond it the
	// sender's clock is flagged as wrong and its times are taken as they come.
	MaxClockOffset = 24 * time.Hour
	// MinClockCorrection is the smallest offset corrected: below it the difference is
	// mostly the request's time in transit.
	MinClockCorrection = 2 * time.Second
)

// ClockOffset reads a sender's sent_at against the node's now and returns the correction
// to add to the sender's times (now - sent_at, zero when below MinClockCorrection), the
// offset measured (nil without sent_at), and whether it is flagged (beyond
// MaxClockOffset: no correction). A malformed sent_at is a validation_error.
func ClockOffset(sentAt *string, now time.Time) (correction time.Duration, measured *int64, flagged bool, err error) {
	if sentAt == nil {
		return 0, nil, false, nil
	}
	t, perr := ParseTime(*sentAt)
	if perr != nil {
		return 0, nil, false, Invalid("sent_at", "sent_at must be an RFC 3339 timestamp")
	}
	off := now.Sub(t.Time)
	ms := off.Milliseconds()
	switch {
	case off > MaxClockOffset || off < -MaxClockOffset:
		return 0, &ms, true, nil
	case off < MinClockCorrection && off > -MinClockCorrection:
		return 0, &ms, false, nil
	}
	return off, &ms, false, nil
}
