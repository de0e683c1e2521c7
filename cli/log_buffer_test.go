package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fakeTimer is a timer the test fires by hand.
type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { t.stopped = true; return true }

// heldLog is a logger on a logBuffer whose timers the test holds.
func heldLog(out *bytes.Buffer, every time.Duration) (*slog.Logger, *logBuffer, *[]*fakeTimer) {
	b := newLogBuffer(out, every)
	var timers []*fakeTimer
	b.after = func(d time.Duration, f func()) stopper {
		t := &fakeTimer{d: d, f: f}
		timers = append(timers, t)
		return t
	}
	return slog.New(urgentHandler{slog.NewJSONHandler(b, nil), b}), b, &timers
}

func TestLogBuffer_LinesHeldUntilTheInterval(t *testing.T) {
	var out bytes.Buffer
	log, _, timers := heldLog(&out, 100*time.Millisecond)
	log.Info("request", "n", 1)
	log.Info("request", "n", 2)
	if out.Len() != 0 {
		t.Fatalf("written before the interval: %q", out.String())
	}
	if len(*timers) != 1 || (*timers)[0].d != 100*time.Millisecond {
		t.Fatalf("timers = %+v, want one of 100ms for both lines", *timers)
	}
	(*timers)[0].f()
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Fatalf("after the interval %d lines written, want 2: %q", got, out.String())
	}
	log.Info("request", "n", 3)
	if len(*timers) != 2 {
		t.Fatalf("a line after a flush arms a new timer: %d timers", len(*timers))
	}
}

func TestLogBuffer_WarningWrittenAtOnceAfterTheLinesBefore(t *testing.T) {
	var out bytes.Buffer
	log, _, timers := heldLog(&out, 100*time.Millisecond)
	log.Info("request", "n", 1)
	log.With("area", "disk").Error("the data directory's disk is full")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"n":1`) || !strings.Contains(lines[1], `"level":"ERROR"`) {
		t.Fatalf("lines = %q, want the held line then the error", lines)
	}
	if !(*timers)[0].stopped {
		t.Fatal("the timer of the flushed lines still runs")
	}
	log.WithGroup("g").Warn("slow")
	if !strings.Contains(out.String(), `"msg":"slow"`) {
		t.Fatalf("a warning of a grouped logger was held: %q", out.String())
	}
}

func TestLogBuffer_BurstPastTheLimitWritten(t *testing.T) {
	var out bytes.Buffer
	_, b, _ := heldLog(&out, time.Second)
	line := []byte(strings.Repeat("x", 1000) + "\n")
	for range maxHeldLog / len(line) {
		_, _ = b.Write(line)
	}
	if out.Len() != 0 {
		t.Fatal("written before the limit")
	}
	_, _ = b.Write(line)
	if out.Len() != maxHeldLog/len(line)*len(line) {
		t.Fatalf("%d bytes written at the limit, want the %d held before the line", out.Len(), maxHeldLog/len(line)*len(line))
	}
	b.Flush()
	if out.Len() != (maxHeldLog/len(line)+1)*len(line) {
		t.Fatalf("%d bytes after Flush", out.Len())
	}
}

func TestNewNodeLog_ZeroWritesEachLine(t *testing.T) {
	var out bytes.Buffer
	log, flush := newNodeLog(&out, 0)
	log.Info("request")
	if !strings.Contains(out.String(), `"msg":"request"`) {
		t.Fatalf("held with --log-flush 0: %q", out.String())
	}
	flush()
	var held bytes.Buffer
	log, flush = newNodeLog(&held, time.Minute)
	log.Info("request")
	if held.Len() != 0 {
		t.Fatal("not held")
	}
	flush()
	if !strings.Contains(held.String(), `"msg":"request"`) {
		t.Fatalf("flush wrote %q", held.String())
	}
}
