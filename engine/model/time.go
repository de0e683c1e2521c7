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
//
// Now is the wall clock: what records say and what other machines read. It steps when
// the node's clock is set by hand. Mono is elapsed time on a clock that never steps, from
// an arbitrary origin: in-memory timers (delivery retries, reinforcement checks,
// lock-outs and key grace while the node runs) run on it, so a step of the wall clock
// neither fires them early nor holds them back (docs/decisions/0128-timers-clock-steps.md).
type Clock interface {
	Now() time.Time
	Mono() time.Duration
}

// SystemClock is the real clock.
type SystemClock struct{}

// monoOrigin is the origin of SystemClock's Mono: time.Now carries the system's monotonic
// reading, which time.Since reads.
var monoOrigin = time.Now()

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// Mono returns the monotonic time elapsed since the process started.
func (SystemClock) Mono() time.Duration { return time.Since(monoOrigin) }

// FakeClock is a Clock that moves only when told. It is safe for concurrent use. Advance
// and Set model time passing (both readings move); Step models a wall clock set by hand
// (the monotonic reading stays).
type FakeClock struct {
	mu   sync.Mutex
	now  time.Time
	mono time.Duration
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's wall time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Mono returns the clock's monotonic reading.
func (c *FakeClock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Advance lets d pass: both readings move forward by d. A negative d is a mistake of the
// test (monotonic time never runs back; Step sets the wall clock back) and panics.
func (c *FakeClock) Advance(d time.Duration) {
	if d < 0 {
		panic("FakeClock.Advance: negative duration; use Step to set the wall clock back")
	}
	c.mu.Lock()
	c.now, c.mono = c.now.Add(d), c.mono+d
	c.mu.Unlock()
}

// Set moves the clock to t as time passing would: the monotonic reading moves by as much
// when t is later; when t is earlier, only the wall clock moves (a step back).
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	if d := t.Sub(c.now); d > 0 {
		c.mono += d
	}
	c.now = t
	c.mu.Unlock()
}

// Step sets the wall clock forward (d > 0) or back (d < 0) by d without time passing:
// the monotonic reading stays, as on a node whose clock is set right by hand.
func (c *FakeClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
