package server

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/fieldrelay/fieldrelay/engine"
)

// statusOf maps each error kind to its HTTP status: the one place where engine errors
// become statuses (API.md, Errors).
var statusOf = map[engine.Kind]int{
	engine.KindValidation:           http.StatusBadRequest,
	engine.KindInvalidJSON:          http.StatusBadRequest,
	engine.KindUnauthorized:         http.StatusUnauthorized,
	engine.KindTokenExpired:         http.StatusUnauthorized,
	engine.KindInvalidCredentials:   http.StatusUnauthorized,
	engine.KindForbidden:            http.StatusForbidden,
	engine.KindAPIKeyRequired:       http.StatusForbidden,
	engine.KindTenantSuspended:      http.StatusForbidden,
	engine.KindAccountSuspended:     http.StatusForbidden,
	engine.KindNotFound:             http.StatusNotFound,
	engine.KindMethodNotAllowed:     http.StatusMethodNotAllowed,
	engine.KindInvalidTransition:    http.StatusConflict,
	engine.KindMissionClosed:        http.StatusConflict,
	engine.KindTeamUnavailable:      http.StatusConflict,
	engine.KindTeamEmpty:            http.StatusConflict,
	engine.KindEventClosed:          http.StatusConflict,
	engine.KindConflict:             http.StatusConflict,
	engine.KindPayloadTooLarge:      http.StatusRequestEntityTooLarge,
	engine.KindUnsupportedMediaType: http.StatusUnsupportedMediaType,
	engine.KindIdempotencyReused:    http.StatusUnprocessableEntity,
	engine.KindAccountLocked:        http.StatusLocked,
	engine.KindRateLimited:          http.StatusTooManyRequests,
	engine.KindInternal:             http.StatusInternalServerError,
	engine.KindUnavailable:          http.StatusServiceUnavailable,

	engine.KindMalformedRequest:   http.StatusBadRequest,
	engine.KindHeadersTooLarge:    http.StatusRequestHeaderFieldsTooLarge,
	engine.KindExpectationFailed:  http.StatusExpectationFailed,
	engine.KindNotImplemented:     http.StatusNotImplemented,
	engine.KindVersionUnsupported: http.StatusHTTPVersionNotSupported,
}

// errorBody is the error envelope of the contract.
type errorBody struct {
	Error     engine.Kind `json:"error"`
	Message   string      `json:"message"`
	Field     string      `json:"field,omitempty"`
	RequestID string      `json:"request_id"`
}

// writeError answers err in the contract's envelope. Anything that is not an
// *engine.Error is internal: the client sees "internal error", the log sees the chain.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *engine.Error
	if !errors.As(err, &e) {
		e = engine.Internal(err)
	}
	status, ok := statusOf[e.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	msg := e.Msg
	if status == http.StatusInternalServerError {
		msg = "internal error"
		s.log.Error("request failed", "request_id", requestID(r), "err", err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	st := state(r)
	if st != nil {
		st.errKind = e.Kind
	}
	writeJSON(w, r, status, errorBody{Error: e.Kind, Message: msg, Field: e.Field, RequestID: requestID(r)})
}
