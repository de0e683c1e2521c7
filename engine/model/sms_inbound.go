package model

// SMSInboundInput is the body of POST /v1/sms/inbound: what the SMS gateway received.
type SMSInboundInput struct {
	From string `json:"from"`
	Body string `json:"body"`
}

// SMSInbound is one received SMS as kept in the tenant's inbound log, with what came of it.
type SMSInbound struct {
	ID string `json:"id"`
	// From is the sender's number in E.164 when it reads as one, else as received.
	From       string `json:"from"`
	Body       string `json:"body"`
	ReceivedAt Time   `json:"received_at"`
	Outcome    string `json:"outcome"`
	// Error and Message are the error answered, when the message was refused.
	Error   Kind   `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	// Verb and Code are the reply's, once it parses.
	Verb string `json:"verb,omitempty"`
	Code string `json:"code,omitempty"`
	// MissionID is the mission the code named, null when none.
	MissionID *string `json:"mission_id"`
	// MemberID is the team member whose phone sent it, when one did.
	MemberID string `json:"member_id,omitempty"`
	// Status is the mission's status after an applied reply.
	Status string `json:"status,omitempty"`
	// KeyID is the API key (the gateway's) that posted it.
	KeyID string `json:"key_id"`
}

// SMSInboundResult is the answer to an applied reply: the log record and the mission as
// it now stands.
type SMSInboundResult struct {
	SMSInbound
	Mission *Mission `json:"mission"`
}

// SMSReceipt is what receiving an inbound SMS renders: the record and, for a message
// refused, the refusal.
type SMSReceipt struct {
	Result  *SMSInboundResult
	Refusal *Error
}
