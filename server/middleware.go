package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// reqState is what the middleware learns of a request, for the handlers and the log.
type reqState struct {
	id        string
	principal *model.Principal
	errKind   model.Kind
	// route holds the metrics of the matched route (nil: no route matched).
	route *routeMetrics
}

type stateKey struct{}

func state(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}

// requestID returns the id of the request ("" outside the middleware).
func requestID(r *http.Request) string {
	if st := state(r); st != nil {
		return st.id
	}
	return ""
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets streaming handlers flush through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// hsts is the Strict-Transport-Security of every answer the node serves over TLS: a year,
// for this host name only (docs/decisions/0133-hsts.md). Over plain
// HTTP (--plain-http, behind a TLS proxy) there is none: the proxy decides its own.
const hsts = "max-age=31536000"

// noStore marks an answer that carries a secret: no cache, shared or private, keeps it;
// Pragma for the HTTP/1.0 caches that know no
// Cache-Control (docs/decisions/0132-secret-answers.md).
func noStore(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

// withRequest is the outer middleware: request id, panic recovery and the access log, in
// that order of effect (recover → request id → access log). The log never holds a
// header, a query string or a body, so no key, token or password reaches it. Every answer
// gets X-Content-Type-Options: nosniff (a browser never reads a JSON answer as a page or a
// script), and, over TLS, Strict-Transport-Security.
func (s *Server) withRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{id: model.NewID()}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		h := w.Header()
		h.Set("X-Request-Id", st.id)
		h["X-Content-Type-Options"] = valNosniff // sharedValue
		if r.TLS != nil {
			h.Set("Strict-Transport-Security", hsts)
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", st.id, "panic", v)
				if sw.status == 0 {
					s.writeError(sw, r, model.Internal(nil))
				}
			}
			took := time.Since(start)
			rm := st.route
			if rm == nil {
				rm = s.metrics.unmatched
			}
			rm.observe(sw.status, took)
			attrs := []slog.Attr{
				slog.String("request_id", st.id), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Int("status", sw.status),
				slog.Duration("duration", took), slog.String("remote", r.RemoteAddr),
			}
			if p := st.principal; p != nil {
				attrs = append(attrs, slog.String("tenant_id", p.TenantID))
				if p.UserID != "" {
					attrs = append(attrs, slog.String("user_id", p.UserID))
				} else {
					attrs = append(attrs, slog.String("key_id", p.KeyID))
				}
			}
			if st.errKind != "" {
				attrs = append(attrs, slog.String("error", string(st.errKind)))
			}
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}
