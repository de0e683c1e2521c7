// Package sms is the node's SMS gateway as the tenants see it: the SMS it receives
// (a team member's reply that moves a mission), the principal a gateway's webhook acts
// as, its signing key and health, and the record of each SMS sent with the gateway's
// delivery reports.
//
// A Gateway is built from its parts (Parts): the store, the clock, the sender, and what
// it needs of the engine as functions (the write frame, a mission's move, the node's
// secrets, record ids). It never sees the engine: engine/layering_test.go holds it. The
// engine embeds it, so that its use cases are the Engine's.
package sms

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// MoveSource is the source of a mission's move made by an SMS reply.
const MoveSource = "sms"

// Parts are what a Gateway is built from.
type Parts struct {
	Store  model.Store
	Clock  model.Clock
	Sender model.Sender
	// Frame is the engine's write frame.
	Frame writes.Frame
	// NewID makes the time-ordered id of a record.
	NewID func(at time.Time) string
	// Secret returns an installation secret, made on first use.
	Secret func(ctx context.Context, name string) ([]byte, error)
	// MoveMission moves a mission as p within tx, the move's source given (the engine's
	// mission status use case), and returns the mission as moved.
	MoveMission func(tx model.Tx, p model.Principal, id string, in model.MissionStatusInput, source string) (*model.Mission, error)
	// PostMessage writes a member's message on a mission as p within tx, by author (the
	// engine's message use case).
	PostMessage func(tx model.Tx, p model.Principal, missionID, text string, author model.ChangeActor) error
}

// Gateway runs the use cases of the SMS gateway.
type Gateway struct {
	store       model.Store
	clock       model.Clock
	sender      model.Sender
	frame       writes.Frame
	newID       func(at time.Time) string
	secret      func(ctx context.Context, name string) ([]byte, error)
	moveMission func(tx model.Tx, p model.Principal, id string, in model.MissionStatusInput, source string) (*model.Mission, error)
	postMessage func(tx model.Tx, p model.Principal, missionID, text string, author model.ChangeActor) error
}

// New returns the Gateway of an engine.
func New(p Parts) *Gateway {
	return &Gateway{store: p.Store, clock: p.Clock, sender: p.Sender, frame: p.Frame, newID: p.NewID, secret: p.Secret,
		moveMission: p.MoveMission, postMessage: p.PostMessage}
}

// tenantBySlug reads the tenant of a slug.
func (e *Gateway) tenantBySlug(ctx context.Context, slug string) (*model.Tenant, error) {
	var t *model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = tx.TenantBySlug(slug)
		return err
	})
	return t, err
}

// putMission stores a mission moved by an SMS, a change for the upstream change log.
func putMission(tx model.Tx, tenantID string, m *model.Mission) error {
	if err := tx.PutMission(tenantID, m); err != nil {
		return err
	}
	writes.Changed(tx, tenantID, model.ChangeMission, m.ID)
	return nil
}
