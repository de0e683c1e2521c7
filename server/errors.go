package server

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// statusOf maps each error kind to its HTTP status: the one place where engine errors
// become statuses (docs/rules.md, Errors).
var statusOf = map[model.Kind]int{
	model.KindValidation:           http.StatusBadRequest,
	model.KindInvalidJSON:          http.StatusBadRequest,
	model.KindUnauthorized:         http.StatusUnauthorized,
	model.KindTokenExpired:         http.StatusUnauthorized,
	model.KindInvalidCredentials:   http.StatusUnauthorized,
	model.KindForbidden:            http.StatusForbidden,
	model.KindAPIKeyRequired:       http.StatusForbidden,
	model.KindTenantSuspended:      http.StatusForbidden,
	model.KindAccountSuspended:     http.StatusForbidden,
	model.KindNotFound:             http.StatusNotFound,
	model.KindMethodNotAllowed:     http.StatusMethodNotAllowed,
	model.KindInvalidTransition:    http.StatusConflict,
	model.KindMissionClosed:        http.StatusConflict,
	model.KindTeamUnavailable:      http.StatusConflict,
	model.KindTeamEmpty:            http.StatusConflict,
	model.KindEventClosed:          http.StatusConflict,
	model.KindConflict:             http.StatusConflict,
	model.KindPayloadTooLarge:      http.StatusRequestEntityTooLarge,
	model.KindUnsupportedMediaType: http.StatusUnsupportedMediaType,
	model.KindIdempotencyReused:    http.StatusUnprocessableEntity,
	model.KindAccountLocked:        http.StatusLocked,
	model.KindRateLimited:          http.StatusTooManyRequests,
	model.KindInternal:             http.StatusInternalServerError,
	model.KindUnavailable:          http.StatusServiceUnavailable,

	model.KindMalformedRequest:   http.StatusBadRequest,
	model.KindHeadersTooLarge:    http.StatusRequestHeaderFieldsTooLarge,
	model.KindExpectationFailed:  http.StatusExpectationFailed,
	model.KindNotImplemented:     http.StatusNotImplemented,
	model.KindVersionUnsupported: http.StatusHTTPVersionNotSupported,
}

// errorBody is the error envelope of the contract.
type errorBody struct {
	Error     model.Kind `json:"error"`
	Message   string     `json:"message"`
	Field     string     `json:"field,omitempty"`
	RequestID string     `json:"request_id"`
}

// writeError answers err in the contract's envelope. Anything that is not an
// *engine.Error is internal: the client sees "internal error", the log sees the chain.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *model.Error
	if !errors.As(err, &e) {
		e = model.Internal(err)
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
