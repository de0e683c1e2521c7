package model

import "time"

// SMSTx holds the transaction methods of SMS replies (mission codes).
type SMSTx interface {
	// MissionByCode returns the id of the tenant's active mission holding a mission code;
	// KindNotFound when no active mission holds it.
	MissionByCode(tenantID, code string) (string, error)
	// PutMissionCode gives code to a mission; KindConflict when another mission holds it.
	PutMissionCode(tenantID, code, missionID string) error
	// DeleteMissionCode releases a code held by missionID; a code that is free or held
	// by another mission is left as it is (no error).
	DeleteMissionCode(tenantID, code, missionID string) error
	// CodedMissions returns the ids of the missions holding a code: the tenant's active
	// missions dispatched on this node, in no particular order.
	CodedMissions(tenantID string) ([]string, error)

	// PutSMSInbound appends a received SMS to the tenant's inbound log.
	PutSMSInbound(tenantID string, m *SMSInbound) error
	// SMSInbounds lists the tenant's inbound log, newest first; the string is the next
	// cursor ("" at the end).
	SMSInbounds(tenantID string, p Page) ([]SMSInbound, string, error)

	// PutSMSOutbound writes the record of an SMS the node sends (insert or replace by id),
	// and indexes it by its GatewayMessageID and by its recipient and SentAt when it has
	// them (neither changes once set).
	PutSMSOutbound(tenantID string, m *SMSOutbound) error
	// CountSMSSentTo counts the tenant's SMS to the number to that the gateway accepted at
	// or after since (SentAt): what a recipient's rate limit reads.
	CountSMSSentTo(tenantID, to string, since time.Time) (int, error)
	// SMSOutbound returns the record of an SMS; KindNotFound when there is none.
	SMSOutbound(tenantID, id string) (*SMSOutbound, error)
	// SMSOutboundByGateway returns the record of the SMS the gateway knows by gatewayID;
	// KindNotFound when there is none.
	SMSOutboundByGateway(tenantID, gatewayID string) (*SMSOutbound, error)
	// SMSOutbounds lists the tenant's sent SMS, newest first; the string is the next
	// cursor ("" at the end).
	SMSOutbounds(tenantID string, p Page) ([]SMSOutbound, string, error)
}
