package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Outbound SMS: tbSMSOutbound maps the record's UUIDv7 (the outbox message's id, so the
// order of sending) to the SMSOutbound; tbSMSOutboundByGateway maps the gateway's message
// id to the record's 16-byte id.

// maxGatewayID bounds a gateway's message id as an index key.
const maxGatewayID = 256

func (t *tx) PutSMSOutbound(tenantID string, m *model.SMSOutbound) error {
	b, err := t.tbucket(tenantID, tbSMSOutbound)
	if err != nil {
		return err
	}
	k, err := idKey(m.ID)
	if err != nil {
		return err
	}
	if g := m.GatewayMessageID; g != "" {
		if len(g) > maxGatewayID {
			return model.Invalid("gateway_message_id", "a gateway's message id is longer than %d bytes", maxGatewayID)
		}
		gb, err := t.tbucket(tenantID, tbSMSOutboundByGateway)
		if err != nil {
			return err
		}
		if err := gb.Put([]byte(g), k); err != nil {
			return err
		}
	}
	if m.SentAt != nil {
		sb, err := t.tbucket(tenantID, tbSMSSentByTo)
		if err != nil {
			return err
		}
		key := append(sentToPrefix(m.To), binary.BigEndian.AppendUint64(nil, uint64(m.SentAt.UnixNano()))...)
		if err := sb.Put(append(key, k...), nil); err != nil {
			return err
		}
	}
	b.FillPercent = appendFill
	return putJSON(b, k, m)
}

// sentToPrefix is the prefix of a recipient's keys in tbSMSSentByTo.
func sentToPrefix(to string) []byte { return append([]byte(to), 0) }

func (t *tx) CountSMSSentTo(tenantID, to string, since time.Time) (int, error) {
	b, err := t.tbucket(tenantID, tbSMSSentByTo)
	if err != nil {
		return 0, err
	}
	prefix := sentToPrefix(to)
	c := b.Cursor()
	n := 0
	for k, _ := c.Seek(append(prefix, binary.BigEndian.AppendUint64(nil, uint64(since.UnixNano()))...)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n, nil
}

func (t *tx) SMSOutbound(tenantID, id string) (*model.SMSOutbound, error) {
	b, err := t.tbucket(tenantID, tbSMSOutbound)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("sms")
	}
	var m model.SMSOutbound
	found, err := getJSON(b, k, &m)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound("sms")
	}
	return &m, nil
}

func (t *tx) SMSOutboundByGateway(tenantID, gatewayID string) (*model.SMSOutbound, error) {
	b, err := t.tbucket(tenantID, tbSMSOutboundByGateway)
	if err != nil {
		return nil, err
	}
	if gatewayID == "" || len(gatewayID) > maxGatewayID {
		return nil, model.NotFound("sms")
	}
	v := b.Get([]byte(gatewayID))
	if len(v) != 16 {
		return nil, model.NotFound("sms")
	}
	return t.SMSOutbound(tenantID, idString(v))
}

func (t *tx) SMSOutbounds(tenantID string, p model.Page) ([]model.SMSOutbound, string, error) {
	b, err := t.tbucket(tenantID, tbSMSOutbound)
	if err != nil {
		return nil, "", err
	}
	out := []model.SMSOutbound{}
	next, err := listNewestFirst(b, p, 16, func(_, v []byte) error {
		var m model.SMSOutbound
		if err := json.Unmarshal(v, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, next, err
}
