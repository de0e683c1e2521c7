package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// TimeLayout is the wire format of every timestamp: RFC 3339, UTC, exactly three
// fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a timestamp that encodes as TimeLayout. A nil *Time encodes as null.
type Time struct{ time.Time }

// At truncates t to milliseconds in UTC.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// TimePtr returns a pointer to At(t).
func TimePtr(t time.Time) *Time { v := At(t); return &v }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts any RFC 3339 timestamp and keeps it in UTC.
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("timestamp must be a string")
	}
	s := string(b[1 : len(b)-1])
	if bytes.IndexByte(b, '\\') >= 0 { // an escaped character: read the string's value
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("timestamp must be a string")
		}
	}
	v, err := ParseTime(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTime parses an RFC 3339 timestamp. Its instant in UTC must fall in the years 0000
// to 9999: an offset can move a timestamp of year 0000 or 9999 out of them, and TimeLayout
// cannot write such a year back in a form that parses (a stored record would no longer
// decode).
func ParseTime(s string) (Time, error) {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Time{}, fmt.Errorf("not an RFC 3339 timestamp")
	}
	if y := v.UTC().Year(); y < 0 || y > 9999 {
		return Time{}, fmt.Errorf("not an RFC 3339 timestamp: its UTC year is outside 0000-9999")
	}
	return At(v), nil
}

// Clock tells the time. The engine takes it so that tests move time by hand.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// FakeClock is a Clock that moves only when told. It is safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
