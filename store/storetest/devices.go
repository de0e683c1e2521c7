package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newDevice returns a device registered at(i).
func newDevice(i int, hardwareID, teamID, zoneCode *string) *model.Device {
	return &model.Device{ID: model.NewIDAt(at(i)), Name: fmt.Sprintf("device %d", i), Platform: "android",
		TeamID: teamID, ZoneCode: zoneCode, HardwareID: hardwareID, RegisteredBy: model.NewID(), RegisteredAt: model.At(at(i))}
}

func testDevices(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		team := model.NewID()
		d := newDevice(1, strp("hw-1"), &team, strp("north"))
		d.Sync = model.DeviceSyncState{AppliedThrough: 3, HighestReceived: 5, Waiting: 1, QueueLast: 7, AckThrough: 6,
			LastSyncAt: model.TimePtr(at(2))}
		f.update(func(tx model.Tx) error { return tx.PutDevice(a.ID, d) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Device(a.ID, d.ID)
			if err != nil || got.Name != d.Name || got.TeamID == nil || *got.TeamID != team || got.ZoneCode == nil ||
				*got.ZoneCode != "north" || got.Sync.AppliedThrough != 3 || got.Sync.HighestReceived != 5 ||
				got.Sync.Waiting != 1 || got.Sync.QueueLast != 7 || got.Sync.AckThrough != 6 ||
				got.Sync.LastSyncAt == nil || !got.Sync.LastSyncAt.Equal(at(2)) || !got.RegisteredAt.Equal(at(1)) {
				t.Fatalf("Device = %+v, %v", got, err)
			}
			got, err = tx.DeviceByHardware(a.ID, "hw-1")
			if err != nil || got.ID != d.ID {
				t.Fatalf("DeviceByHardware = %+v, %v", got, err)
			}
			for _, c := range [][2]string{{b.ID, d.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), d.ID}} {
				_, err := tx.Device(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			for _, c := range [][2]string{{b.ID, "hw-1"}, {a.ID, "hw-2"}, {a.ID, ""}} {
				_, err := tx.DeviceByHardware(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			_, err = tx.DeviceByHardware(model.NewID(), "hw-1")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutDevice(model.NewID(), newDevice(2, nil, nil, nil)) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("List", func(t *testing.T) {
		// A tenant's devices, newest first, by pages; another tenant's are not there.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		f.update(func(tx model.Tx) error {
			for i := range 3 {
				if err := tx.PutDevice(a.ID, newDevice(i, nil, nil, nil)); err != nil {
					return err
				}
			}
			return tx.PutDevice(b.ID, newDevice(9, nil, nil, nil))
		})
		f.view(func(tx model.Tx) error {
			page, next, err := tx.Devices(a.ID, model.Page{Limit: 2})
			if err != nil || len(page) != 2 || next == "" || page[0].Name != "device 2" || page[1].Name != "device 1" {
				t.Fatalf("Devices = %+v, %q, %v", page, next, err)
			}
			page, next, err = tx.Devices(a.ID, model.Page{Limit: 2, Cursor: next})
			if err != nil || len(page) != 1 || next != "" || page[0].Name != "device 0" {
				t.Fatalf("Devices, page 2 = %+v, %q, %v", page, next, err)
			}
			_, _, err = tx.Devices(a.ID, model.Page{Limit: 2, Cursor: "bad"})
			assertKind(t, err, model.KindValidation)
			return nil
		})
	})
	t.Run("Hardware", func(t *testing.T) {
		// The hardware id is unique within a tenant and follows the device's record.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		d1, d2 := newDevice(1, strp("hw-1"), nil, nil), newDevice(2, nil, nil, nil)
		f.update(func(tx model.Tx) error {
			if err := tx.PutDevice(a.ID, d1); err != nil {
				return err
			}
			if err := tx.PutDevice(a.ID, d2); err != nil {
				return err
			}
			return tx.PutDevice(b.ID, newDevice(3, strp("hw-1"), nil, nil))
		})
		d2.HardwareID = strp("hw-1")
		err := f.updateErr(func(tx model.Tx) error { return tx.PutDevice(a.ID, d2) })
		assertKind(t, err, model.KindConflict)
		err = f.updateErr(func(tx model.Tx) error { return tx.PutDevice(a.ID, newDevice(4, strp("hw-1"), nil, nil)) })
		assertKind(t, err, model.KindConflict)
		// Stored again by its holder: no conflict.
		d1.Name = "renamed"
		f.update(func(tx model.Tx) error { return tx.PutDevice(a.ID, d1) })
		// Changed: the old hardware id is free, the new one names the device.
		d1.HardwareID = strp("hw-9")
		f.update(func(tx model.Tx) error { return tx.PutDevice(a.ID, d1) })
		f.view(func(tx model.Tx) error {
			_, err := tx.DeviceByHardware(a.ID, "hw-1")
			assertKind(t, err, model.KindNotFound)
			if got, err := tx.DeviceByHardware(a.ID, "hw-9"); err != nil || got.ID != d1.ID || got.Name != "renamed" {
				t.Fatalf("DeviceByHardware(hw-9) = %+v, %v", got, err)
			}
			return nil
		})
		f.update(func(tx model.Tx) error { return tx.PutDevice(a.ID, d2) }) // hw-1 is free now
		// Removed: the hardware id is free.
		d2.HardwareID = nil
		f.update(func(tx model.Tx) error { return tx.PutDevice(a.ID, d2) })
		f.view(func(tx model.Tx) error {
			_, err := tx.DeviceByHardware(a.ID, "hw-1")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("TeamsAndZones", func(t *testing.T) {
		// DevicesOfTeam and DevicesOfZone follow the devices' records, oldest first.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		t1, t2 := model.NewID(), model.NewID()
		d := []*model.Device{
			newDevice(0, nil, &t1, strp("north")),
			newDevice(1, nil, &t2, strp("north-2")),
			newDevice(2, nil, &t1, nil),
			newDevice(3, nil, nil, strp("north")),
		}
		f.update(func(tx model.Tx) error {
			for _, i := range []int{3, 1, 0, 2} { // out of order
				if err := tx.PutDevice(a.ID, d[i]); err != nil {
					return err
				}
			}
			return tx.PutDevice(b.ID, newDevice(4, nil, &t1, strp("north")))
		})
		devs := func(is ...int) string {
			return ids(is, func(i int) string { return d[i].ID })
		}
		check := func(team, zone string, wantTeam, wantZone string) {
			t.Helper()
			f.view(func(tx model.Tx) error {
				got, err := tx.DevicesOfTeam(a.ID, team)
				if err != nil || ids(got, func(s string) string { return s }) != wantTeam {
					t.Errorf("DevicesOfTeam = %v, %v; want %s", got, err, wantTeam)
				}
				got, err = tx.DevicesOfZone(a.ID, zone)
				if err != nil || ids(got, func(s string) string { return s }) != wantZone {
					t.Errorf("DevicesOfZone(%s) = %v, %v; want %s", zone, got, err, wantZone)
				}
				return nil
			})
		}
		check(t1, "north", devs(0, 2), devs(0, 3))
		check(t2, "north-2", devs(1), devs(1))
		check(model.NewID(), "", "", "")
		// Moved: d0 to team 2 and no zone, d2 to zone north.
		d[0].TeamID, d[0].ZoneCode, d[2].ZoneCode = &t2, nil, strp("north")
		f.update(func(tx model.Tx) error {
			if err := tx.PutDevice(a.ID, d[0]); err != nil {
				return err
			}
			return tx.PutDevice(a.ID, d[2])
		})
		check(t1, "north", devs(2), devs(2, 3))
		check(t2, "north-2", devs(0, 1), devs(1))
		f.view(func(tx model.Tx) error {
			if got, err := tx.DevicesOfTeam(a.ID, "bad"); err != nil || len(got) != 0 {
				t.Fatalf("DevicesOfTeam(bad) = %v, %v", got, err)
			}
			_, err := tx.DevicesOfTeam(model.NewID(), t1)
			assertKind(t, err, model.KindNotFound)
			_, err = tx.DevicesOfZone(model.NewID(), "north")
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("Items", testDeviceItems(open))
	t.Run("Queue", testDeviceQueue(open))
	t.Run("TakeQueueItem", testTakeQueueItem(open))
}

func testDeviceItems(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		dev, other := model.NewID(), model.NewID()
		f.update(func(tx model.Tx) error {
			for _, seq := range []int64{5, 1, 2, 9, 300} {
				it := &model.DeviceItem{Seq: seq, Status: "applied", EventID: model.NewID(), ReceivedAt: model.At(at(int(seq)))}
				if seq == 9 {
					it.Status, it.Kind, it.Payload, it.CapturedAt = "held", "event", json.RawMessage(`{"type":"fire"}`), model.TimePtr(at(1))
					it.By = &model.ItemSender{KeyID: "k1", Scopes: []string{"sync:write"}}
				}
				if err := tx.PutDeviceItem(a.ID, dev, it); err != nil {
					return err
				}
			}
			return tx.PutDeviceItem(a.ID, other, &model.DeviceItem{Seq: 3, Status: "applied", ReceivedAt: model.At(at(3))})
		})
		walkSeqs := func(after int64, stopAfter int) []int64 {
			var seqs []int64
			f.view(func(tx model.Tx) error {
				return tx.WalkDeviceItems(a.ID, dev, after, func(seq int64) bool {
					seqs = append(seqs, seq)
					return len(seqs) < stopAfter
				})
			})
			return seqs
		}
		for _, c := range []struct {
			after int64
			stop  int
			want  string
		}{{0, 100, "[1 2 5 9 300]"}, {2, 100, "[5 9 300]"}, {3, 100, "[5 9 300]"}, {0, 2, "[1 2]"}, {300, 100, "[]"}} {
			if got := fmt.Sprint(walkSeqs(c.after, c.stop)); got != c.want {
				t.Errorf("WalkDeviceItems(after %d, stop after %d) = %s, want %s", c.after, c.stop, got, c.want)
			}
		}
		f.view(func(tx model.Tx) error {
			got, err := tx.DeviceItem(a.ID, dev, 9)
			if err != nil || got == nil || got.Status != "held" || got.Kind != "event" || string(got.Payload) != `{"type":"fire"}` ||
				got.CapturedAt == nil || got.By == nil || got.By.KeyID != "k1" || !got.ReceivedAt.Equal(at(9)) {
				t.Fatalf("DeviceItem(9) = %+v, %v", got, err)
			}
			for _, c := range []struct {
				dev string
				seq int64
			}{{dev, 3}, {other, 5}, {model.NewID(), 1}} {
				if got, err := tx.DeviceItem(a.ID, c.dev, c.seq); err != nil || got != nil {
					t.Errorf("DeviceItem of a sequence not received = %+v, %v; want nil", got, err)
				}
			}
			_, err = tx.DeviceItem(model.NewID(), dev, 1)
			assertKind(t, err, model.KindNotFound)
			err = tx.WalkDeviceItems(model.NewID(), dev, 0, func(int64) bool { return true })
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		// Stored again under its sequence: replaced.
		f.update(func(tx model.Tx) error {
			return tx.PutDeviceItem(a.ID, dev, &model.DeviceItem{Seq: 9, Status: "rejected", Error: model.KindValidation, ReceivedAt: model.At(at(9))})
		})
		f.view(func(tx model.Tx) error {
			if got, err := tx.DeviceItem(a.ID, dev, 9); err != nil || got.Status != "rejected" || got.Error != model.KindValidation {
				t.Fatalf("DeviceItem(9) after a put = %+v, %v", got, err)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error {
			return tx.PutDeviceItem(model.NewID(), dev, &model.DeviceItem{Seq: 1, Status: "applied"})
		})
		assertKind(t, err, model.KindNotFound)
	}
}

func testDeviceQueue(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		dev, other := model.NewID(), model.NewID()
		f.update(func(tx model.Tx) error {
			for seq := int64(1); seq <= 6; seq++ {
				q := &model.QueueItem{QueueSequence: seq, Kind: "mission", MissionID: model.NewID(), QueuedAt: model.At(at(int(seq)))}
				if seq%2 == 0 {
					q.Kind, q.MissionID, q.EventID = "event", "", model.NewID()
				}
				if err := tx.PutQueueItem(a.ID, dev, q); err != nil {
					return err
				}
			}
			return tx.PutQueueItem(a.ID, other, &model.QueueItem{QueueSequence: 1, Kind: "mission", MissionID: model.NewID()})
		})
		seqs := func(qs []model.QueueItem) string {
			return fmt.Sprint(ids(qs, func(q model.QueueItem) string { return fmt.Sprint(q.QueueSequence) }))
		}
		f.view(func(tx model.Tx) error {
			for _, c := range []struct {
				after int64
				limit int
				want  string
			}{{0, 100, "1,2,3,4,5,6"}, {2, 3, "3,4,5"}, {5, 10, "6"}, {6, 10, ""}} {
				got, err := tx.QueueItems(a.ID, dev, c.after, c.limit)
				if err != nil || seqs(got) != c.want {
					t.Errorf("QueueItems(after %d, limit %d) = %s, %v; want %s", c.after, c.limit, seqs(got), err, c.want)
				}
			}
			got, err := tx.QueueItems(a.ID, dev, 1, 1)
			if err != nil || len(got) != 1 || got[0].Kind != "event" || got[0].EventID == "" || !got[0].QueuedAt.Equal(at(2)) {
				t.Fatalf("queue item 2 = %+v, %v", got, err)
			}
			if got, err := tx.QueueItems(a.ID, model.NewID(), 0, 10); err != nil || len(got) != 0 {
				t.Fatalf("QueueItems of a device with none = %+v, %v", got, err)
			}
			_, err = tx.QueueItems(model.NewID(), dev, 0, 10)
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		var deleted []model.QueueItem
		f.update(func(tx model.Tx) (err error) {
			deleted, err = tx.DeleteQueueItems(a.ID, dev, 4)
			return err
		})
		if seqs(deleted) != "1,2,3,4" || deleted[0].MissionID == "" {
			t.Fatalf("DeleteQueueItems(through 4) = %+v; want 1 to 4, in order", deleted)
		}
		f.update(func(tx model.Tx) (err error) {
			deleted, err = tx.DeleteQueueItems(a.ID, dev, 4)
			return err
		})
		if len(deleted) != 0 {
			t.Fatalf("deleting again = %+v; want nothing", deleted)
		}
		f.view(func(tx model.Tx) error {
			if got, err := tx.QueueItems(a.ID, dev, 0, 100); err != nil || seqs(got) != "5,6" {
				t.Fatalf("queue after a delete = %s, %v", seqs(got), err)
			}
			if got, err := tx.QueueItems(a.ID, other, 0, 100); err != nil || seqs(got) != "1" {
				t.Fatalf("another device's queue = %s, %v", seqs(got), err)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error {
			_, err := tx.DeleteQueueItems(model.NewID(), dev, 1)
			return err
		})
		assertKind(t, err, model.KindNotFound)
		err = f.updateErr(func(tx model.Tx) error {
			return tx.PutQueueItem(model.NewID(), dev, &model.QueueItem{QueueSequence: 1, Kind: "mission"})
		})
		assertKind(t, err, model.KindNotFound)
	}
}

// testTakeQueueItem: TakeQueueItem removes the lowest pending item of one kind about one
// mission (a mission_update to coalesce) and leaves the others, of this device and others.
func testTakeQueueItem(open Opener) func(t *testing.T) {
	return func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		dev, other := model.NewID(), model.NewID()
		m1, m2 := model.NewID(), model.NewID()
		change := model.MissionChange{What: model.UpdateStatus, From: "ACK", To: "FAILED", StoodDown: true, Reason: "called off",
			By: model.ChangeActor{ID: model.NewID(), Name: "Sam", Role: "operational_supervisor"}, At: model.At(at(1)), Channel: "api"}
		f.update(func(tx model.Tx) error {
			for _, q := range []model.QueueItem{
				{QueueSequence: 1, Kind: model.QueueMission, MissionID: m1},
				{QueueSequence: 2, Kind: model.QueueMissionUpdate, MissionID: m2},
				{QueueSequence: 3, Kind: model.QueueMissionUpdate, MissionID: m1, Changes: []model.MissionChange{change}},
				{QueueSequence: 4, Kind: model.QueueMissionUpdate, MissionID: m1},
			} {
				if err := tx.PutQueueItem(a.ID, dev, &q); err != nil {
					return err
				}
			}
			return tx.PutQueueItem(a.ID, other, &model.QueueItem{QueueSequence: 1, Kind: model.QueueMissionUpdate, MissionID: m1})
		})
		var got *model.QueueItem
		f.update(func(tx model.Tx) (err error) {
			got, err = tx.TakeQueueItem(a.ID, dev, model.QueueMissionUpdate, m1)
			return err
		})
		if got == nil || got.QueueSequence != 3 || len(got.Changes) != 1 || got.Changes[0] != change {
			t.Fatalf("TakeQueueItem = %+v; want item 3 with its change", got)
		}
		f.view(func(tx model.Tx) error {
			seqs := []int64{}
			qs, err := tx.QueueItems(a.ID, dev, 0, 10)
			for _, q := range qs {
				seqs = append(seqs, q.QueueSequence)
			}
			if err != nil || fmt.Sprint(seqs) != "[1 2 4]" {
				t.Fatalf("queue after a take = %v, %v; want [1 2 4]", seqs, err)
			}
			if qs, err := tx.QueueItems(a.ID, other, 0, 10); err != nil || len(qs) != 1 {
				t.Fatalf("another device's queue = %+v, %v", qs, err)
			}
			return nil
		})
		f.update(func(tx model.Tx) (err error) {
			got, err = tx.TakeQueueItem(a.ID, dev, model.QueueMissionUpdate, model.NewID())
			return err
		})
		if got != nil {
			t.Fatalf("TakeQueueItem of a mission with none = %+v; want nil", got)
		}
		err := f.updateErr(func(tx model.Tx) error {
			_, err := tx.TakeQueueItem(model.NewID(), dev, model.QueueMissionUpdate, m1)
			return err
		})
		assertKind(t, err, model.KindNotFound)
	}
}
