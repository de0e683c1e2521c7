package model

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Kind is the machine-readable class of an Error. Its value is the error code of the
// contract (docs/rules.md, Errors); server maps each kind to an HTTP status in one table.
type Kind string

// The error kinds of the contract.
const (
	KindValidation           Kind = "validation_error"
	KindInvalidJSON          Kind = "invalid_json"
	KindUnauthorized         Kind = "unauthorized"
	KindTokenExpired         Kind = "token_expired"
	KindInvalidCredentials   Kind = "invalid_credentials"
	KindForbidden            Kind = "forbidden"
	KindAPIKeyRequired       Kind = "api_key_required"
	KindTenantSuspended      Kind = "tenant_suspended"
	KindAccountSuspended     Kind = "account_suspended"
	KindNotFound             Kind = "not_found"
	KindMethodNotAllowed     Kind = "method_not_allowed"
	KindInvalidTransition    Kind = "invalid_transition"
	KindMissionClosed        Kind = "mission_closed"
	KindTeamUnavailable      Kind = "team_unavailable"
	KindTeamEmpty            Kind = "team_empty"
	KindEventClosed          Kind = "event_closed"
	KindConflict             Kind = "conflict"
	KindPayloadTooLarge      Kind = "payload_too_large"
	KindUnsupportedMediaType Kind = "unsupported_media_type"
	KindIdempotencyReused    Kind = "idempotency_key_reused"
	KindAccountLocked        Kind = "account_locked"
	KindRateLimited          Kind = "rate_limited"
	KindInternal             Kind = "internal_error"
	KindUnavailable          Kind = "unavailable"

	// Requests that cannot be read as HTTP, answered by the server's connection layer
	// before any route (docs/decisions/0083-answers-below-router.md).
	KindMalformedRequest   Kind = "malformed_request"
	KindHeadersTooLarge    Kind = "headers_too_large"
	KindExpectationFailed  Kind = "expectation_failed"
	KindNotImplemented     Kind = "not_implemented"
	KindVersionUnsupported Kind = "http_version_not_supported"
)

// Error is the one error type of the domain. Msg is safe to show to a client; Err is the
// cause, for the log only. RetryAfter, when set, tells the client when to try again.
type Error struct {
	Kind       Kind
	Field      string
	Msg        string
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error of the given kind with a formatted client-safe message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Invalid returns a validation_error naming the offending field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Kind: KindValidation, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// MaxQuoted is how many characters of a value Quote keeps.
const MaxQuoted = 64

// Quote is how an error message quotes a value it was given (a field, a query parameter,
// a path, a flag): Go-quoted, and cut to its first MaxQuoted characters followed by "…"
// when longer, so that an answer never echoes a huge input whole. Every message that
// quotes input goes through it (docs/decisions/0075-error-quotes-64-chars.md).
func Quote(s string) string {
	if len(s) <= MaxQuoted || utf8.RuneCountInString(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	n := 0
	for i := range s {
		if n == MaxQuoted {
			return strconv.Quote(s[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(s)
}

// NotFound returns a not_found error for a resource of the given name.
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Msg: what + " not found"}
}

// Internal wraps an unexpected error; its message never reaches a client.
func Internal(err error) *Error {
	return &Error{Kind: KindInternal, Msg: "internal error", Err: err}
}

// ErrorKind returns the kind of err: the Kind of the first *Error in its chain, or
// KindInternal for anything else.
func ErrorKind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// IsKind reports whether err carries the given kind.
func IsKind(err error, kind Kind) bool {
	return err != nil && ErrorKind(err) == kind
}
