package model

import (
	"context"
	"time"
)

// Sender makes the calls of the delivery engine to the world outside the node. The
// scheduler calls it after commit, never inside a transaction, and times each call
// itself through the engine's Clock (the duration_ms of the attempt log).
type Sender interface {
	// SendWebhook POSTs one signed webhook message.
	SendWebhook(ctx context.Context, m WebhookMessage) SendResult
	// SendSMS hands one SMS to the gateway; ErrNoSMSGateway-like results are reported
	// through SendResult.Err.
	SendSMS(ctx context.Context, m OutboundSMS) SendResult
	// SMSAvailable reports whether an SMS gateway is configured.
	SMSAvailable() bool
}

// WebhookMessage is one attempt of a webhook message: the same ID (webhook-id) on every
// attempt, signed with the subscription's secret.
type WebhookMessage struct {
	URL string
	// ID is the webhook-id header, the same on every attempt of one message.
	ID string
	// Timestamp is the webhook-timestamp of this attempt.
	Timestamp time.Time
	// Secret is the subscription's whsec_ secret.
	Secret string
	// Body is the JSON envelope {event, payload, tenant_id, occurred_at}.
	Body []byte
}

// OutboundSMS is one attempt of an SMS: the same ID (the outbox entry's) on every attempt.
type OutboundSMS struct {
	// TenantID is the tenant the message is sent for (a gateway's status callback names it).
	TenantID string
	// ID is the message's id on the node.
	ID string
	// To is the recipient's number (E.164); Body the text.
	To, Body string
}

// SendResult is the outcome of one call.
type SendResult struct {
	// StatusCode is the HTTP status received, 0 when no response came.
	StatusCode int
	// RetryAfter is the delay the receiver asked for (Retry-After on a 429 or 503).
	RetryAfter time.Duration
	// Err describes a failure to get a response (refused address, timeout, TLS…).
	Err error
	// Permanent marks a failure that no retry can mend (an SMS gateway refusing the
	// number or the text): the message ends without further attempts.
	Permanent bool
	// MessageID is the id the SMS gateway gave the message it accepted, empty otherwise.
	MessageID string
	// Detail is what the gateway said about a failure (its error code and message), for
	// the attempt's error text.
	Detail string
}

// OK reports whether the call succeeded: a 2xx answer.
func (r SendResult) OK() bool { return r.Err == nil && r.StatusCode >= 200 && r.StatusCode < 300 }

// Gone reports a 410 answer, which disables a webhook subscription.
func (r SendResult) Gone() bool { return r.Err == nil && r.StatusCode == 410 }

// SMSHealth is what a Sender may say of its SMS gateway's reachability.
type SMSHealth interface {
	// SMSGatewayState is up, down or unknown.
	SMSGatewayState() string
}

// NoSender is the Sender of a node that delivers nothing: every call fails. It keeps
// admin commands and tests that do not deliver free of network access.
type NoSender struct{}

// SendWebhook fails.
func (NoSender) SendWebhook(context.Context, WebhookMessage) SendResult {
	return SendResult{Err: errNoSender}
}

// SendSMS fails.
func (NoSender) SendSMS(context.Context, OutboundSMS) SendResult {
	return SendResult{Err: errNoSender}
}

// SMSAvailable is false.
func (NoSender) SMSAvailable() bool { return false }

var errNoSender = Errorf(KindUnavailable, "this node has no sender")
