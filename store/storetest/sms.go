package storetest

import (
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newSMSInbound returns an SMS received at(i).
func newSMSInbound(i int) *model.SMSInbound {
	return &model.SMSInbound{ID: model.NewIDAt(at(i)), From: "+33612345678", Body: "FR1 ACK K7Q",
		ReceivedAt: model.At(at(i)), Outcome: "applied", Verb: "ACK", Code: "K7Q", KeyID: model.NewID()}
}

func testMissionCodes(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	m1, m2 := model.NewID(), model.NewID()
	f.update(func(tx model.Tx) error {
		if err := tx.PutMissionCode(a.ID, "K7Q", m1); err != nil {
			return err
		}
		if err := tx.PutMissionCode(a.ID, "K7Q", m1); err != nil { // again, by its holder
			return err
		}
		if err := tx.PutMissionCode(a.ID, "A2B", m2); err != nil {
			return err
		}
		return tx.PutMissionCode(b.ID, "K7Q", m2) // codes are per tenant
	})
	f.view(func(tx model.Tx) error {
		for _, c := range []struct{ tenant, code, want string }{{a.ID, "K7Q", m1}, {a.ID, "A2B", m2}, {b.ID, "K7Q", m2}} {
			if got, err := tx.MissionByCode(c.tenant, c.code); err != nil || got != c.want {
				t.Errorf("MissionByCode(%s) = %q, %v; want %s", c.code, got, err, c.want)
			}
		}
		for _, code := range []string{"ZZZ", ""} {
			_, err := tx.MissionByCode(a.ID, code)
			assertKind(t, err, model.KindNotFound)
		}
		_, err := tx.MissionByCode(model.NewID(), "K7Q")
		assertKind(t, err, model.KindNotFound)
		got, err := tx.CodedMissions(a.ID)
		slices.Sort(got)
		want := []string{m1, m2}
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("CodedMissions = %v, %v; want %v in any order", got, err, want)
		}
		_, err = tx.CodedMissions(model.NewID())
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	err := f.updateErr(func(tx model.Tx) error { return tx.PutMissionCode(a.ID, "K7Q", m2) })
	assertKind(t, err, model.KindConflict)
	err = f.updateErr(func(tx model.Tx) error { return tx.PutMissionCode(model.NewID(), "K7Q", m2) })
	assertKind(t, err, model.KindNotFound)
	// Deleting by another mission, or a free code, leaves things as they are.
	f.update(func(tx model.Tx) error {
		if err := tx.DeleteMissionCode(a.ID, "K7Q", m2); err != nil {
			return err
		}
		if err := tx.DeleteMissionCode(a.ID, "ZZZ", m1); err != nil {
			return err
		}
		return tx.DeleteMissionCode(a.ID, "", m1)
	})
	f.view(func(tx model.Tx) error {
		if got, err := tx.MissionByCode(a.ID, "K7Q"); err != nil || got != m1 {
			t.Fatalf("a code deleted by another mission = %q, %v", got, err)
		}
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.DeleteMissionCode(a.ID, "K7Q", m1) })
	f.view(func(tx model.Tx) error {
		_, err := tx.MissionByCode(a.ID, "K7Q")
		assertKind(t, err, model.KindNotFound)
		if got, err := tx.CodedMissions(a.ID); err != nil || !slices.Equal(got, []string{m2}) {
			t.Fatalf("CodedMissions after a delete = %v, %v", got, err)
		}
		if got, err := tx.MissionByCode(b.ID, "K7Q"); err != nil || got != m2 {
			t.Fatalf("another tenant's code = %q, %v", got, err)
		}
		return nil
	})
	// A released code is free for another mission.
	f.update(func(tx model.Tx) error { return tx.PutMissionCode(a.ID, "K7Q", m2) })
}

func testSMSInbound(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	var want []string // newest first
	f.update(func(tx model.Tx) error {
		for i := range 5 {
			m := newSMSInbound(i)
			if i == 2 {
				m.MissionID, m.Error, m.Message = strp(model.NewID()), model.KindConflict, "taken"
			}
			want = append([]string{m.ID}, want...)
			if err := tx.PutSMSInbound(a.ID, m); err != nil {
				return err
			}
		}
		return tx.PutSMSInbound(b.ID, newSMSInbound(9))
	})
	list := func(tx model.Tx, p model.Page) ([]model.SMSInbound, string, error) { return tx.SMSInbounds(a.ID, p) }
	smsID := func(m model.SMSInbound) string { return m.ID }
	got, sizes := walk(t, f, model.Page{Limit: 2}, 5, list)
	if sizesOf(sizes) != "[2 2 1]" || ids(got, smsID) != ids(want, func(s string) string { return s }) {
		t.Fatalf("SMSInbounds = %s in %v; want %v newest first", ids(got, smsID), sizes, want)
	}
	m := got[2]
	if m.From != "+33612345678" || m.Body != "FR1 ACK K7Q" || m.MissionID == nil || m.Error != model.KindConflict ||
		m.Message != "taken" || m.Verb != "ACK" || !m.ReceivedAt.Equal(at(2)) {
		t.Fatalf("SMSInbound = %+v", m)
	}
	f.view(func(tx model.Tx) error {
		_, _, err := tx.SMSInbounds(a.ID, model.Page{Limit: 2, Cursor: "!!!"})
		assertKind(t, err, model.KindValidation)
		_, _, err = tx.SMSInbounds(model.NewID(), model.Page{Limit: 2})
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	err := f.updateErr(func(tx model.Tx) error { return tx.PutSMSInbound(model.NewID(), newSMSInbound(1)) })
	assertKind(t, err, model.KindNotFound)
}
