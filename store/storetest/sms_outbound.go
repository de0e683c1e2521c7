package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newSMSOutbound returns an SMS sent at(i), pending.
func newSMSOutbound(i int) *model.SMSOutbound {
	return &model.SMSOutbound{ID: model.NewIDAt(at(i)), To: "+33612345678", EventID: strp(model.NewID()),
		Encoding: "GSM-7", Segments: 1, Status: model.SMSPending, Attempts: 1, CreatedAt: model.At(at(i)), UpdatedAt: model.At(at(i))}
}

// testSMSOutbound: the record of each SMS sent, replaced by id, found by the gateway's id
// once it has one (per tenant), listed newest first.
func testSMSOutbound(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	var want []string // newest first
	var third *model.SMSOutbound
	f.update(func(tx model.Tx) error {
		for i := range 5 {
			m := newSMSOutbound(i)
			want = append([]string{m.ID}, want...)
			if err := tx.PutSMSOutbound(a.ID, m); err != nil {
				return err
			}
			if i == 2 {
				third = m
			}
		}
		// Another tenant's SMS with the same gateway id is its own.
		other := newSMSOutbound(9)
		other.Status, other.GatewayMessageID = model.SMSSent, "SM-2"
		return tx.PutSMSOutbound(b.ID, other)
	})
	f.view(func(tx model.Tx) error {
		_, err := tx.SMSOutboundByGateway(a.ID, "SM-2")
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	// Accepted: the gateway's id is indexed; the record is replaced, not added.
	f.update(func(tx model.Tx) error {
		third.Status, third.GatewayMessageID, third.Attempts = model.SMSSent, "SM-2", 2
		return tx.PutSMSOutbound(a.ID, third)
	})
	f.view(func(tx model.Tx) error {
		got, err := tx.SMSOutboundByGateway(a.ID, "SM-2")
		if err != nil || got.ID != third.ID || got.Status != model.SMSSent || got.Attempts != 2 || got.EventID == nil || *got.EventID != *third.EventID {
			t.Fatalf("SMSOutboundByGateway = %+v, %v", got, err)
		}
		if got, err := tx.SMSOutbound(a.ID, third.ID); err != nil || got.GatewayMessageID != "SM-2" || got.To != "+33612345678" || !got.CreatedAt.Equal(at(2)) {
			t.Fatalf("SMSOutbound = %+v, %v", got, err)
		}
		if got, err := tx.SMSOutboundByGateway(b.ID, "SM-2"); err != nil || got.ID == third.ID {
			t.Fatalf("bravo's SM-2 = %+v, %v", got, err)
		}
		for _, c := range []struct{ tenant, id string }{{a.ID, model.NewID()}, {a.ID, "nope"}, {b.ID, third.ID}} {
			_, err := tx.SMSOutbound(c.tenant, c.id)
			assertKind(t, err, model.KindNotFound)
		}
		for _, g := range []string{"", "SM-404", strings.Repeat("x", 300)} {
			_, err := tx.SMSOutboundByGateway(a.ID, g)
			assertKind(t, err, model.KindNotFound)
		}
		_, err = tx.SMSOutboundByGateway(model.NewID(), "SM-2")
		assertKind(t, err, model.KindNotFound)
		_, _, err = tx.SMSOutbounds(model.NewID(), model.Page{Limit: 2})
		assertKind(t, err, model.KindNotFound)
		_, _, err = tx.SMSOutbounds(a.ID, model.Page{Limit: 2, Cursor: "!!!"})
		assertKind(t, err, model.KindValidation)
		return nil
	})
	list := func(tx model.Tx, p model.Page) ([]model.SMSOutbound, string, error) { return tx.SMSOutbounds(a.ID, p) }
	got, sizes := walk(t, f, model.Page{Limit: 2}, 5, list)
	smsID := func(m model.SMSOutbound) string { return m.ID }
	if sizesOf(sizes) != "[2 2 1]" || ids(got, smsID) != ids(want, func(s string) string { return s }) {
		t.Fatalf("SMSOutbounds = %s in %v; want %v newest first", ids(got, smsID), sizes, want)
	}
	err := f.updateErr(func(tx model.Tx) error { return tx.PutSMSOutbound(model.NewID(), newSMSOutbound(1)) })
	assertKind(t, err, model.KindNotFound)
	err = f.updateErr(func(tx model.Tx) error {
		m := newSMSOutbound(1)
		m.GatewayMessageID = strings.Repeat("x", 300)
		return tx.PutSMSOutbound(a.ID, m)
	})
	assertKind(t, err, model.KindValidation)
}

// testSMSSentTo: the SMS accepted by the gateway are counted per recipient from their
// SentAt; pending ones, other recipients' and other tenants' are not.
func testSMSSentTo(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	f.update(func(tx model.Tx) error {
		for i := range 6 {
			m := newSMSOutbound(i)
			if i < 5 {
				sent := model.At(at(i * 60))
				m.Status, m.SentAt = model.SMSSent, &sent
			}
			if err := tx.PutSMSOutbound(a.ID, m); err != nil {
				return err
			}
			// The same record written again (a delivery report) counts once.
			if err := tx.PutSMSOutbound(a.ID, m); err != nil {
				return err
			}
		}
		other := newSMSOutbound(7)
		other.To = "+33699999999"
		sent := model.At(at(0))
		other.SentAt = &sent
		if err := tx.PutSMSOutbound(a.ID, other); err != nil {
			return err
		}
		bm := newSMSOutbound(8)
		bm.SentAt = &sent
		return tx.PutSMSOutbound(b.ID, bm)
	})
	f.view(func(tx model.Tx) error {
		for _, c := range []struct {
			since time.Time
			want  int
		}{{at(0), 5}, {at(60), 4}, {at(61), 3}, {at(240), 1}, {at(241), 0}} {
			if n, err := tx.CountSMSSentTo(a.ID, "+33612345678", c.since); err != nil || n != c.want {
				t.Errorf("CountSMSSentTo(since at(%v)) = %d, %v; want %d", c.since.Sub(at(0)), n, err, c.want)
			}
		}
		if n, err := tx.CountSMSSentTo(a.ID, "+3361234567", at(0)); err != nil || n != 0 {
			t.Errorf("a prefix of the number: %d, %v", n, err)
		}
		_, err := tx.CountSMSSentTo(model.NewID(), "+33612345678", at(0))
		assertKind(t, err, model.KindNotFound)
		return nil
	})
}
