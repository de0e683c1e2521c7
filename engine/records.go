package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// The records that upstream sync carries (events, dispatches, missions) are written
// through these: each stores the record and says so (writes.Changed), so that the change
// log's pre-commit hook appends it to the tenant's log when the tenant has an upstream.

// recordTx is what the writes of a record need of a transaction.
type recordTx interface {
	model.TxCommit
	PutEvent(tenantID string, ev *model.Event) error
	PutMission(tenantID string, m *model.Mission) error
	PutDispatch(tenantID string, d *model.Dispatch) error
}

// putEvent stores ev, a change for the upstream change log.
func putEvent(tx recordTx, tenantID string, ev *model.Event) error {
	if err := tx.PutEvent(tenantID, ev); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.ChangeEvent, ev.ID)
	return nil
}

// putMission stores m, a change for the upstream change log.
func putMission(tx recordTx, tenantID string, m *model.Mission) error {
	if err := tx.PutMission(tenantID, m); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.ChangeMission, m.ID)
	return nil
}

// putDispatch stores d, a change for the upstream change log.
func putDispatch(tx recordTx, tenantID string, d *model.Dispatch) error {
	if err := tx.PutDispatch(tenantID, d); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.ChangeDispatch, d.ID)
	return nil
}

// teamStatusMoved says that the status of t, just stored, moved: a change for the
// upstream change log when t is a copy of a central team, whose status is this site's
// (docs/decisions/0202-team-status-up.md).
func teamStatusMoved(tx model.TxCommit, tenantID string, t *model.Team) {
	if t.Origin != nil {
		writes.Changed(tx, tenantID, model.ChangeTeamStatus, t.ID)
	}
}
