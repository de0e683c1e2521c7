package model

// States of an SMS the node sends (SMSOutbound.Status).
const (
	// SMSPending: not accepted by the gateway yet; attempts go on.
	SMSPending = "pending"
	// SMSSent: the gateway accepted it (its id is GatewayMessageID).
	SMSSent = "sent"
	// SMSDelivered: the gateway reported the recipient's phone got it.
	SMSDelivered = "delivered"
	// SMSFailed: the gateway refused it for good, the attempts ran out, or the gateway
	// reported it undelivered.
	SMSFailed = "failed"
	// SMSHeld: not sent, held back by the recipient's rate limit.
	SMSHeld = "held"
)

// SMSOutbound is the record of one SMS the node sends: an outbox message (same id) to one
// phone, written with each attempt's outcome and moved by the gateway's delivery reports.
// It outlives its outbox entry.
type SMSOutbound struct {
	ID        string  `json:"id"`
	To        string  `json:"to"`
	EventID   *string `json:"event_id"`
	MissionID *string `json:"mission_id"`
	// Encoding (GSM-7 or UCS-2) and Segments are how the text goes out; usage counts the
	// segments of accepted messages.
	Encoding string `json:"encoding"`
	Segments int    `json:"segments"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// GatewayMessageID is the id the gateway gave the message when it accepted it.
	GatewayMessageID string `json:"gateway_message_id,omitempty"`
	// Error is the last failure: an attempt's, or the gateway's delivery report.
	Error     string `json:"error,omitempty"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
	// SentAt is when the gateway accepted it: the recipient's rate limit counts these.
	SentAt      *Time `json:"sent_at"`
	DeliveredAt *Time `json:"delivered_at"`
}

// SMSDeliveryReport is what a gateway's delivery report says about a message it accepted.
type SMSDeliveryReport struct {
	// GatewayMessageID names the message as the gateway does (or the node's id, which
	// SMS Gateway for Android takes as its own).
	GatewayMessageID string
	// Status is SMSDelivered or SMSFailed.
	Status string
	// Reason says why a message failed (the gateway's words).
	Reason string
}
