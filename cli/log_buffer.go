package cli

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logBuffer gathers the node's log lines and writes them together, at the latest `every`
// after the first of them came: a write system call for each request's line was about a
// tenth of the CPU an event costs (docs/decisions/0251-log-lines-written-together.md). A
// line at WARN or above is written at once with the lines before it (urgentHandler), so an
// error is in the log when it is logged; a kill -9 loses at most the lines of the last
// interval. Flush (which Main.Close calls) writes what is held.
type logBuffer struct {
	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	after func(time.Duration, func()) stopper // time.AfterFunc; a test's fake
	buf   []byte
	timer stopper // armed while buf holds lines
}

// stopper is the part of *time.Timer the buffer uses.
type stopper interface{ Stop() bool }

// maxHeldLog is the most bytes held: a burst of lines past it is written at once.
const maxHeldLog = 64 << 10

func newLogBuffer(w io.Writer, every time.Duration) *logBuffer {
	return &logBuffer{w: w, every: every,
		after: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

// Write holds p (one log line: slog's handlers write a record with one Write).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > maxHeldLog {
		b.flushLocked()
	}
	b.buf = append(b.buf, p...)
	if b.timer == nil {
		b.timer = b.after(b.every, b.Flush)
	}
	return len(p), nil
}

// Flush writes the lines held.
func (b *logBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *logBuffer) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 {
		return
	}
	// A log that cannot be written has nowhere to say so.
	_, _ = b.w.Write(b.buf)
	if cap(b.buf) > maxHeldLog {
		b.buf = nil
		return
	}
	b.buf = b.buf[:0]
}

// urgentHandler flushes its buffer after each record at WARN or above.
type urgentHandler struct {
	slog.Handler
	buf *logBuffer
}

func (h urgentHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.buf.Flush()
	}
	return err
}

func (h urgentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgentHandler{h.Handler.WithAttrs(attrs), h.buf}
}

func (h urgentHandler) WithGroup(name string) slog.Handler {
	return urgentHandler{h.Handler.WithGroup(name), h.buf}
}

// newNodeLog returns the node's JSON log on w: lines held up to every (logBuffer), or
// written one by one when every is 0. flush writes what is held (a no-op then).
func newNodeLog(w io.Writer, every time.Duration) (log *slog.Logger, flush func()) {
	if every <= 0 {
		return slog.New(slog.NewJSONHandler(w, nil)), func() {}
	}
	b := newLogBuffer(w, every)
	return slog.New(urgentHandler{slog.NewJSONHandler(b, nil), b}), b.Flush
}
