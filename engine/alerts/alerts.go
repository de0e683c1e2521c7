// Package alerts holds the alerts the whole control room shares
// (docs/decisions/0172-shared-alerts.md): raised and closed by the node in the transaction
// of their cause (Raise, Close), listed and acknowledged by users, every change sent to
// the stream so that each console sees the others' acknowledgements.
//
// A Book is built from the store, the clock and what it needs of the engine as functions
// (the write frame, the stream). It never sees the engine: engine/layering_test.go holds
// it. The engine embeds it, so that its use cases are the Engine's.
package alerts

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Stream names of an alert's changes; the data is the Alert.
const (
	StreamRaised = "alert.raised"
	StreamAcked  = "alert.acked"
	StreamClosed = "alert.closed"
	// StreamEscalated: the alert was sent by SMS to the supervisors on duty.
	StreamEscalated = "alert.escalated"
)

// maxMessage bounds an alert's words, in characters.
const maxMessage = 300

// Tx is what the alerts read and write of a transaction.
type Tx interface {
	model.TxCommit
	model.AlertsTx
}

// Publish sends a change of a tenant to its stream once tx commits.
type Publish func(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error

// Book runs the use cases of alerts.
type Book struct {
	store   model.Store
	clock   model.Clock
	frame   writes.Frame
	publish Publish
}

// New returns the Book of an engine.
func New(store model.Store, clock model.Clock, frame writes.Frame, publish Publish) *Book {
	return &Book{store: store, clock: clock, frame: frame, publish: publish}
}

// Raise opens the alert of a cause within tx, the transaction of the cause: one open alert
// per kind and subject, so that raising it again returns the open one unchanged.
func Raise(b *Book, tx Tx, tenantID string, in model.AlertInput) (*model.Alert, error) {
	key := model.AlertKey(in.Kind, in.Subject)
	if a, err := tx.OpenAlert(tenantID, key); err != nil || a != nil {
		return a, err
	}
	return raise(b, tx, tenantID, key, in)
}

// RaiseNew is Raise for a subject created in tx (an event being taken): no alert of it
// can be open yet, so none is looked up, a read less on the ingest path
// (docs/decisions/0231-group-reads.md).
func RaiseNew(b *Book, tx Tx, tenantID string, in model.AlertInput) (*model.Alert, error) {
	return raise(b, tx, tenantID, model.AlertKey(in.Kind, in.Subject), in)
}

// raise opens the alert of key, none being open.
func raise(b *Book, tx Tx, tenantID, key string, in model.AlertInput) (*model.Alert, error) {
	now := model.At(b.clock.Now())
	a := &model.Alert{ID: model.NewIDAt(now.Time), Kind: in.Kind, Key: key, Priority: in.Priority,
		Message: clip(in.Message), EventID: opt(in.EventID), MissionID: opt(in.MissionID), TeamID: opt(in.TeamID),
		Status: model.AlertOpen, RaisedAt: now, UpdatedAt: now}
	if err := tx.PutAlert(tenantID, a); err != nil {
		return nil, err
	}
	return a, b.publish(tx, tenantID, StreamRaised, model.PermEventsRead, "", a)
}

// Close closes the open alert of a kind and subject within tx, the transaction in which its
// cause ended; nothing when none is open.
func Close(b *Book, tx Tx, tenantID, kind, subject string) error {
	a, err := tx.OpenAlert(tenantID, model.AlertKey(kind, subject))
	if err != nil || a == nil {
		return err
	}
	now := model.At(b.clock.Now())
	a.Status, a.ClosedAt, a.UpdatedAt = model.AlertClosed, &now, now
	if err := tx.PutAlert(tenantID, a); err != nil {
		return err
	}
	return b.publish(tx, tenantID, StreamClosed, model.PermEventsRead, "", a)
}

// Escalated records within tx that an open alert was sent to the supervisors on duty.
func Escalated(b *Book, tx Tx, tenantID string, a *model.Alert) error {
	now := model.At(b.clock.Now())
	a.EscalatedAt, a.UpdatedAt = &now, now
	if err := tx.PutAlert(tenantID, a); err != nil {
		return err
	}
	return b.publish(tx, tenantID, StreamEscalated, model.PermEventsRead, "", a)
}

// Alerts lists p's tenant's alerts, open ones by default, newest first (GET /v1/alerts;
// events:read).
func (b *Book) Alerts(ctx context.Context, p model.Principal, f model.AlertFilter, pg model.Page) ([]model.Alert, string, error) {
	if err := p.Require(model.PermEventsRead); err != nil {
		return nil, "", err
	}
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	var out []model.Alert
	var next string
	err := b.store.View(ctx, func(tx model.Tx) (err error) {
		out, next, err = tx.Alerts(p.TenantID, f, pg)
		return err
	})
	return out, next, err
}

// Ack records who took an alert and when (POST /v1/alerts/{id}/ack; dispatch:assign). An
// alert already acknowledged keeps its first acknowledgement and is answered as it is; a
// closed one can still be acknowledged (its cause ended before anyone took it).
func (b *Book) Ack(ctx context.Context, p model.Principal, id string, w *model.Write) (*model.Alert, error) {
	if err := p.Require(model.PermDispatchAssign); err != nil {
		return nil, err
	}
	return writes.Do(ctx, b.frame, p.TenantID, w, func(tx model.Tx) (*model.Alert, error) {
		a, err := tx.Alert(p.TenantID, id)
		if err != nil || a.AckedAt != nil {
			return a, err
		}
		now := model.At(b.clock.Now())
		who := p.ActorID()
		a.AckedAt, a.AckedBy, a.UpdatedAt = &now, &who, now
		closes := a.Status == model.AlertOpen && model.ClosedByAck(a.Kind)
		if closes {
			a.Status, a.ClosedAt = model.AlertClosed, &now
		}
		if err := tx.PutAlert(p.TenantID, a); err != nil {
			return nil, err
		}
		if err := b.publish(tx, p.TenantID, StreamAcked, model.PermEventsRead, "", a); err != nil || !closes {
			return a, err
		}
		return a, b.publish(tx, p.TenantID, StreamClosed, model.PermEventsRead, "", a)
	})
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage || utf8.RuneCountInString(s) <= maxMessage {
		return s // no copy of the runes of a message that fits (most)
	}
	r := []rune(s)
	return string(r[:maxMessage-1]) + "…"
}
