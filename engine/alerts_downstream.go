package engine

import (
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/alerts"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DownLagAfter is how long a site's link may stay up without a pull that leaves the site
// at its central node's downstream log's end before downstream_lagging
// (docs/decisions/0210-downstream-lag-alert.md): a caught-up site hears from its central
// node at least every DownPollWait, and 100,000 changes come down in well under a minute.
const DownLagAfter = 2 * time.Minute

// downstreamSubject is the subject of the downstream_lagging alert: one link a tenant.
const downstreamSubject = "downstream"

// watchDownstream raises downstream_lagging when a tenant's link is up (neither failing
// nor paused) and its last pull that caught up is DownLagAfter old, and closes it once a
// pull caught up, or the link is paused or removed. A link down keeps the alert as it is:
// upstream_down tells why, and whether the site caught up is known at the next pull.
func (e *Engine) watchDownstream(tx model.Tx, tenantID string) error {
	c, err := tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	if err != nil {
		return err
	}
	if c.Paused {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	if c.LastError != "" || c.Down.CaughtUpAt == nil {
		return nil
	}
	lag := e.clock.Now().Sub(c.Down.CaughtUpAt.Time)
	if lag < DownLagAfter {
		return alerts.Close(e.Book, tx, tenantID, model.AlertDownstreamLagging, downstreamSubject)
	}
	msg := fmt.Sprintf("The central node's changes are not reaching this site: not caught up for %d minutes", int(lag/time.Minute))
	if behind := c.Down.End - c.Down.Cursor; behind > 0 {
		msg += fmt.Sprintf(", %d changes behind", behind)
	}
	_, err = alerts.Raise(e.Book, tx, tenantID, model.AlertInput{Kind: model.AlertDownstreamLagging, Subject: downstreamSubject,
		Priority: model.PriorityHigh, Message: msg + " while the link is up"})
	return err
}
