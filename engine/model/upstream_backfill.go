package model

import (
	"bytes"

	"github.com/google/uuid"
)

// UpstreamBackfill is where the backfill of a link stands: the records a tenant held
// before its upstream was set are put in the change log, kind by kind (events, then
// dispatches, then missions), each oldest first, a few hundred per transaction, so that
// they reach the upstream in the same exactly-once stream as the changes.
type UpstreamBackfill struct {
	// Kind is the kind being walked; "" once every record has been put in the log.
	Kind string `json:"kind"`
	// After is the id of the last record of Kind put in the log ("" when none yet).
	After string `json:"after,omitempty"`
	// Queued counts the records put in the log; Through is the log sequence of the last.
	Queued  int64 `json:"queued"`
	Through int64 `json:"through"`
	// StartedAt is when the link was set; WalkedAt when the last record was put in the
	// log.
	StartedAt Time  `json:"started_at"`
	WalkedAt  *Time `json:"walked_at,omitempty"`
}

// backfillOrder is the order the kinds are walked in: a dispatch names its event, a
// mission its event and team, so each comes after what it refers to.
var backfillOrder = []string{ChangeEvent, ChangeDispatch, ChangeMission}

// NewUpstreamBackfill starts a backfill at the first event.
func NewUpstreamBackfill(now Time) *UpstreamBackfill {
	return &UpstreamBackfill{Kind: backfillOrder[0], StartedAt: now}
}

// Walking reports whether records remain to be put in the log.
func (b *UpstreamBackfill) Walking() bool { return b != nil && b.Kind != "" }

// NextKind moves the walk to the next kind ("" after missions).
func (b *UpstreamBackfill) NextKind() {
	i := rank(b.Kind)
	b.After = ""
	if i+1 < len(backfillOrder) {
		b.Kind = backfillOrder[i+1]
		return
	}
	b.Kind = ""
}

// Covers reports whether the record of kind kind and id id lies in the part of the
// history already put in the log: a change of it must then be logged. A record the walk
// has not reached yet needs no entry of its own: the walk will log it as it stands then.
func (b *UpstreamBackfill) Covers(kind, id string) bool {
	if !b.Walking() {
		return true
	}
	r, w := rank(kind), rank(b.Kind)
	if r == len(backfillOrder) {
		return true // a kind the walk does not send (a dispatch request's decision): logged
	}
	if r != w {
		return r < w
	}
	if b.After == "" {
		return false
	}
	a, err1 := uuid.Parse(b.After)
	u, err2 := uuid.Parse(id)
	if err1 != nil || err2 != nil {
		return true // not a record the walk can place: logged, as without a backfill
	}
	return bytes.Compare(u[:], a[:]) <= 0
}

func rank(kind string) int {
	for i, k := range backfillOrder {
		if k == kind {
			return i
		}
	}
	return len(backfillOrder)
}

// UpstreamBackfillStatus is the backfill part of GET /v1/tenant/upstream/status. State
// is walking while records remain to be put in the log, sending until the upstream has
// applied the last of them, done after.
type UpstreamBackfillStatus struct {
	State     string  `json:"state"`
	Kind      *string `json:"kind"`
	Queued    int64   `json:"queued"`
	Through   int64   `json:"through"`
	StartedAt Time    `json:"started_at"`
	WalkedAt  *Time   `json:"walked_at"`
}

// Backfill states of UpstreamBackfillStatus.
const (
	BackfillWalking = "walking"
	BackfillSending = "sending"
	BackfillDone    = "done"
)

// Status renders the backfill of a link whose upstream applied the log through acked.
func (b *UpstreamBackfill) Status(acked int64) *UpstreamBackfillStatus {
	if b == nil {
		return nil
	}
	s := &UpstreamBackfillStatus{State: BackfillDone, Queued: b.Queued, Through: b.Through, StartedAt: b.StartedAt,
		WalkedAt: b.WalkedAt}
	switch {
	case b.Walking():
		s.State, s.Kind = BackfillWalking, PtrTo(b.Kind)
	case acked < b.Through:
		s.State = BackfillSending
	}
	return s
}
