package engine

import (
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
)

// downstreamSubject is the subject of the downstream_lagging alert: one link a tenant.
const downstreamSubject = "downstream"

// watchDownstream follows a tenant's downstream lag at the watch: pulls that stopped
// coming are seen there (downstreamHealth).
func (e *Engine) watchDownstream(tx model.Tx, tenantID string) error {
	c, err := tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	if err != nil {
		return err
	}
	return e.downstreamHealth(tx, tenantID, c)
}

// downstreamHealth raises downstream_lagging when a tenant's link c is up (neither
// failing nor paused) and its last pull that caught up with the central log is
// opt.Upstream.LagAlert old, and closes it once a pull caught up or the link is paused
// (docs/decisions/0210-downstream-lag-alert.md). A link down keeps the alert as it is:
// upstream_down tells why, and whether the site caught up is known at the next pull. It
// runs in the transaction that applies a pull, and at the watch.
func (e *Engine) downstreamHealth(tx upstream.Tx, tenantID string, c *model.UpstreamConfig) error {
	if c.Paused {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	if c.LastError != "" || c.Down.CaughtUpAt == nil {
		return nil
	}
	lag := e.clock.Now().Sub(c.Down.CaughtUpAt.Time)
	if lag < e.lagAlert {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	msg := fmt.Sprintf("The central node's changes are not reaching this site: not caught up for %s", lag.Round(time.Second))
	if behind := c.Down.End - c.Down.Cursor; behind > 0 {
		msg += fmt.Sprintf(", %d changes behind", behind)
	}
	_, err := alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertDownstreamLagging, Subject: downstreamSubject,
		Priority: model.PriorityHigh, Message: msg + " while the link is up"})
	return err
}
