package sms

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// The record of each SMS the node sends (model.SMSOutbound): written pending with its
// outbox message, moved by each attempt's outcome (sent with the gateway's id, pending
// while retried, failed when the message ends without acceptance) and by the gateway's
// delivery reports (delivered, failed). docs/decisions/0123-sms-outbound-record.md.

// ReportSMSDelivery applies a gateway's delivery report (its webhook, in the gateway's
// name: p holds sms:inbound) to the SMS it names, found by the gateway's id or, for a
// gateway that took the node's id as its own (SMS Gateway for Android), by that: a sent
// (or still pending) SMS becomes delivered or failed. A report about an SMS that is
// delivered, failed or held already changes nothing (gateways report more than once). An SMS
// the tenant did not send is not_found.
func (e *Gateway) ReportSMSDelivery(ctx context.Context, p model.Principal, r model.SMSDeliveryReport) (*model.SMSOutbound, error) {
	if err := p.Require(model.PermSMSInbound); err != nil {
		return nil, err
	}
	if r.Status != model.SMSDelivered && r.Status != model.SMSFailed {
		return nil, model.Invalid("status", "a delivery report is %s or %s", model.SMSDelivered, model.SMSFailed)
	}
	var out *model.SMSOutbound
	err := e.store.Update(ctx, func(tx model.Tx) error {
		m, err := tx.SMSOutboundByGateway(p.TenantID, r.GatewayMessageID)
		if model.IsKind(err, model.KindNotFound) && model.ValidID(r.GatewayMessageID) {
			m, err = tx.SMSOutbound(p.TenantID, r.GatewayMessageID)
		}
		if err != nil {
			return err
		}
		out = m
		if m.Status == model.SMSDelivered || m.Status == model.SMSFailed || m.Status == model.SMSHeld {
			return nil
		}
		now := model.At(e.clock.Now())
		m.Status, m.UpdatedAt = r.Status, now
		if r.Status == model.SMSDelivered {
			m.DeliveredAt, m.Error = &now, ""
		} else {
			m.Error = "the gateway reported it undelivered"
			if r.Reason != "" {
				m.Error += ": " + smscodec.Truncate(r.Reason, 200)
			}
		}
		return tx.PutSMSOutbound(p.TenantID, m)
	})
	return out, err
}

// SMSOutbounds lists the SMS the principal's tenant sent, newest first (GET
// /v1/sms/outbound, events:read).
func (e *Gateway) SMSOutbounds(ctx context.Context, p model.Principal, page model.Page) ([]model.SMSOutbound, string, error) {
	if err := p.Require(model.PermEventsRead); err != nil {
		return nil, "", err
	}
	var out []model.SMSOutbound
	var next string
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		out, next, err = tx.SMSOutbounds(p.TenantID, page)
		return err
	})
	return out, next, err
}
