package postgres

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// maxGatewayID bounds a gateway's message id.
const maxGatewayID = 256

func (t *tx) PutSMSOutbound(tenantID string, m *model.SMSOutbound) error {
	tn, id, err := t.ids(tenantID, m.ID, "sms")
	if err != nil {
		return err
	}
	if len(m.GatewayMessageID) > maxGatewayID {
		return model.Invalid("gateway_message_id", "a gateway's message id is longer than %d bytes", maxGatewayID)
	}
	doc, err := jsonOf(m)
	if err != nil {
		return err
	}
	var gw *string
	if m.GatewayMessageID != "" {
		gw = &m.GatewayMessageID
	}
	var sent *time.Time
	if m.SentAt != nil {
		sent = &m.SentAt.Time
	}
	return t.put(`INSERT INTO sms_outbound (tenant_id, id, gateway_id, to_phone, sent_at, doc) SELECT $1, $2, $3, $4, $5, $6`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET gateway_id = excluded.gateway_id, sent_at = excluded.sent_at, doc = excluded.doc`,
		tn, id, gw, m.To, sent, doc)
}

func (t *tx) CountSMSSentTo(tenantID, to string, since time.Time) (int, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, err
	}
	var n int
	_, err = t.scan(`SELECT count(*) FROM sms_outbound WHERE tenant_id = $1 AND to_phone = $2 AND sent_at >= $3`,
		[]any{tn, to, since}, &n)
	return n, err
}

func (t *tx) SMSOutbound(tenantID, id string) (*model.SMSOutbound, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	sid, ok := uid(id)
	if !ok {
		return nil, model.NotFound("sms")
	}
	return getDoc[model.SMSOutbound](t, "sms", "SELECT doc FROM sms_outbound WHERE tenant_id = $1 AND id = $2", tn, sid)
}

func (t *tx) SMSOutboundByGateway(tenantID, gatewayID string) (*model.SMSOutbound, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	if gatewayID == "" || len(gatewayID) > maxGatewayID {
		return nil, model.NotFound("sms")
	}
	// The newest record holding the id: a gateway that hands an id out again (SMS Gateway
	// for Android takes the node's) names the latest message.
	return getDoc[model.SMSOutbound](t, "sms", `SELECT doc FROM sms_outbound WHERE tenant_id = $1 AND gateway_id = $2
		ORDER BY id DESC LIMIT 1`, tn, gatewayID)
}

func (t *tx) SMSOutbounds(tenantID string, p model.Page) ([]model.SMSOutbound, string, error) {
	return newest[model.SMSOutbound](t, "sms_outbound", tenantID, p)
}
