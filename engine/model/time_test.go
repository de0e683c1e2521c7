package model_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

func TestTime_MarshalJSON(t *testing.T) {
	paris := time.FixedZone("CEST", 2*3600)
	t.Run("OK", func(t *testing.T) {
		v := model.At(time.Date(2026, 6, 9, 12, 11, 12, 345_678_901, paris))
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), `"2026-06-09T10:11:12.345Z"`; got != want {
			t.Fatalf("Marshal = %s, want %s", got, want)
		}
	})
	t.Run("ThreeDigitsAlways", func(t *testing.T) {
		b, _ := json.Marshal(model.At(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		if got, want := string(b), `"2026-01-02T03:04:05.000Z"`; got != want {
			t.Fatalf("Marshal = %s, want %s", got, want)
		}
	})
	t.Run("UntruncatedTruncates", func(t *testing.T) {
		// A Time built without At still prints three digits, cut (not rounded), in UTC.
		v := model.Time{Time: time.Date(2026, 6, 9, 12, 11, 12, 345_999_999, paris)}
		b, _ := json.Marshal(v)
		if got, want := string(b), `"2026-06-09T10:11:12.345Z"`; got != want {
			t.Fatalf("Marshal = %s, want %s", got, want)
		}
	})
	t.Run("NilIsNull", func(t *testing.T) {
		type rec struct {
			At    model.Time  `json:"at"`
			Set   *model.Time `json:"set"`
			Unset *model.Time `json:"unset"`
		}
		b, err := json.Marshal(rec{At: model.At(modeltest.Epoch), Set: model.TimePtr(modeltest.Epoch)})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"at":"2026-06-09T10:11:12.345Z","set":"2026-06-09T10:11:12.345Z","unset":null}`
		if string(b) != want {
			t.Fatalf("Marshal = %s, want %s", b, want)
		}
	})
}

func TestTime_UnmarshalJSON(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		var v model.Time
		if err := json.Unmarshal([]byte(`"2026-06-09T12:11:12.345678+02:00"`), &v); err != nil {
			t.Fatal(err)
		}
		if want := model.At(modeltest.Epoch); !v.Equal(want.Time) || v.Location() != time.UTC {
			t.Fatalf("Unmarshal = %v, want %v in UTC", v, want)
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		in := model.TimePtr(time.Date(2030, 12, 31, 23, 59, 59, 999_000_000, time.UTC))
		b, _ := json.Marshal(in)
		var out *model.Time
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if out == nil || !out.Equal(in.Time) {
			t.Fatalf("round trip = %v, want %v", out, in)
		}
	})
	t.Run("Null", func(t *testing.T) {
		var p *model.Time
		if err := json.Unmarshal([]byte(`null`), &p); err != nil || p != nil {
			t.Fatalf("Unmarshal(null) into *Time = %v, %v; want nil, nil", p, err)
		}
		v := model.At(modeltest.Epoch)
		if err := json.Unmarshal([]byte(`null`), &v); err != nil || !v.Equal(modeltest.Epoch) {
			t.Fatalf("Unmarshal(null) into Time = %v, %v; want it unchanged", v, err)
		}
	})
	t.Run("ErrNotAString", func(t *testing.T) {
		var v model.Time
		if err := json.Unmarshal([]byte(`1781000000`), &v); err == nil {
			t.Fatal("a number decoded as a timestamp")
		}
	})
	t.Run("ErrNotRFC3339", func(t *testing.T) {
		for _, s := range []string{`"2026-06-09"`, `"2026-06-09 10:11:12Z"`, `"yesterday"`, `""`} {
			var v model.Time
			if err := json.Unmarshal([]byte(s), &v); err == nil {
				t.Errorf("Unmarshal(%s) succeeded", s)
			}
		}
	})
}

func TestAt(t *testing.T) {
	v := model.At(time.Date(2026, 6, 9, 10, 11, 12, 345_999_999, time.FixedZone("X", -5*3600)))
	if v.Nanosecond() != 345_000_000 || v.Location() != time.UTC || v.Hour() != 15 {
		t.Fatalf("At = %v, want 15:11:12.345 UTC", v)
	}
	if p := model.TimePtr(v.Time); p == nil || !p.Equal(v.Time) {
		t.Fatalf("TimePtr = %v", p)
	}
}

func TestParseTime(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		v, err := model.ParseTime("2026-06-09T10:11:12.3456Z")
		if err != nil || !v.Equal(modeltest.Epoch) {
			t.Fatalf("ParseTime = %v, %v", v, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		if _, err := model.ParseTime("09/06/2026"); err == nil {
			t.Fatal("ParseTime accepted a non-RFC 3339 date")
		}
	})
}

func TestFakeClock(t *testing.T) {
	c := model.NewFakeClock(modeltest.Epoch)
	if !c.Now().Equal(modeltest.Epoch) {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Advance(90 * time.Second)
	if got := c.Now().Sub(modeltest.Epoch); got != 90*time.Second {
		t.Fatalf("after Advance: %v", got)
	}
	if c.Mono() != 90*time.Second {
		t.Fatalf("Mono after Advance: %v", c.Mono())
	}
	later := modeltest.Epoch.Add(48 * time.Hour)
	c.Set(later)
	if !c.Now().Equal(later) || c.Mono() != 48*time.Hour {
		t.Fatalf("after Set: %v, Mono %v", c.Now(), c.Mono())
	}
	// A wall clock set by hand: the monotonic reading stays.
	c.Step(-time.Hour)
	c.Step(24 * time.Hour)
	if !c.Now().Equal(later.Add(23*time.Hour)) || c.Mono() != 48*time.Hour {
		t.Fatalf("after Step: %v, Mono %v", c.Now(), c.Mono())
	}
	c.Set(later) // back: the wall clock alone
	if !c.Now().Equal(later) || c.Mono() != 48*time.Hour {
		t.Fatalf("after Set back: %v, Mono %v", c.Now(), c.Mono())
	}
	var _ model.Clock = c
	var _ model.Clock = model.SystemClock{}
	if d := time.Since(model.SystemClock{}.Now()); d < 0 || d > time.Minute {
		t.Fatalf("SystemClock is off by %v", d)
	}
	if a, b := (model.SystemClock{}).Mono(), (model.SystemClock{}).Mono(); a < 0 || b < a {
		t.Fatalf("SystemClock.Mono runs back: %v then %v", a, b)
	}
}
