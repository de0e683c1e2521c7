package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testPageBytes pins Page.MaxBytes on every paged list (model.Page.Full): a page ends
// before the record that would take its JSON past MaxBytes and names the next cursor,
// walking the cursors yields every record once, and a record larger than MaxBytes comes
// alone (docs/decisions/0078-list-byte-cap.md).
func testPageBytes(t *testing.T, open Opener) {
	f := newFx(t, open)
	tn := f.tenant("acme")
	team, webhook := model.NewID(), model.NewID()
	const n = 7
	// Records of about 10 KB each: big text in a free field; the fourth is 40 KB.
	big := func(i int) string {
		if i == 3 {
			return strings.Repeat("x", 40_000)
		}
		return strings.Repeat("x", 10_000)
	}
	f.update(func(tx model.Tx) error {
		for i := range n {
			payload, _ := json.Marshal(map[string]string{"text": big(i)})
			ev := newEvent(i)
			ev.Payload = payload
			if err := tx.PutEvent(tn.ID, ev); err != nil {
				return err
			}
			m := newMission(model.NewID(), team, model.MissionCreated, at(i))
			m.Notes = big(i)
			if err := tx.PutMission(tn.ID, m); err != nil {
				return err
			}
			a := newAttempt(webhook, i)
			a.Error = big(i)
			if err := tx.PutDeliveryAttempt(tn.ID, a); err != nil {
				return err
			}
			u := newUser(tn.ID, fmt.Sprintf("u%d@acme.example", i))
			u.ID, u.Name, u.CreatedAt = model.NewIDAt(at(i)), big(i), model.At(at(i))
			if err := tx.PutUserAccount(u); err != nil {
				return err
			}
			sms := newSMSInbound(i)
			sms.Body = big(i)
			if err := tx.PutSMSInbound(tn.ID, sms); err != nil {
				return err
			}
			d := newDevice(i, nil, nil, nil)
			d.Name = big(i)
			if err := tx.PutDevice(tn.ID, d); err != nil {
				return err
			}
		}
		return nil
	})
	const maxBytes = 25_000 // two 10 KB records, not three
	lists := map[string]func(tx model.Tx, p model.Page) ([]any, string, error){
		"Events": func(tx model.Tx, p model.Page) ([]any, string, error) {
			evs, next, err := tx.Events(tn.ID, model.EventFilter{}, p)
			return anys(evs), next, err
		},
		"Missions": func(tx model.Tx, p model.Page) ([]any, string, error) {
			ms, next, err := tx.Missions(tn.ID, model.MissionFilter{}, p)
			return anys(ms), next, err
		},
		"MissionsOfATeam": func(tx model.Tx, p model.Page) ([]any, string, error) {
			ms, next, err := tx.Missions(tn.ID, model.MissionFilter{TeamIDs: []string{team}}, p)
			return anys(ms), next, err
		},
		"DeliveryAttempts": func(tx model.Tx, p model.Page) ([]any, string, error) {
			as, next, err := tx.DeliveryAttempts(tn.ID, webhook, p)
			return anys(as), next, err
		},
		"Users": func(tx model.Tx, p model.Page) ([]any, string, error) {
			us, next, err := tx.Users(tn.ID, p)
			return anys(us), next, err
		},
		"SMSInbounds": func(tx model.Tx, p model.Page) ([]any, string, error) {
			ms, next, err := tx.SMSInbounds(tn.ID, p)
			return anys(ms), next, err
		},
		"Devices": func(tx model.Tx, p model.Page) ([]any, string, error) {
			ds, next, err := tx.Devices(tn.ID, p)
			return anys(ds), next, err
		},
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			items, sizes := walk(t, f, model.Page{Limit: 500, MaxBytes: maxBytes}, n+1, list)
			seen := map[string]bool{}
			for _, it := range items {
				raw, _ := json.Marshal(it)
				var id struct {
					ID       string `json:"id"`
					EventID  string `json:"event_id"`
					DeviceID string `json:"device_id"`
				}
				_ = json.Unmarshal(raw, &id)
				seen[id.ID+id.EventID+id.DeviceID] = true
			}
			// Newest first: 6 5 | 4 | 3 (40 KB, alone) | 2 1 | 0.
			if sizesOf(sizes) != "[2 1 1 2 1]" || len(seen) != n {
				t.Fatalf("pages of %v items, %d distinct", sizes, len(seen))
			}
			// Each page holds at most MaxBytes of JSON, unless it is one record.
			p := model.Page{Limit: 500, MaxBytes: maxBytes}
			for range n + 1 {
				var page []any
				var next string
				f.view(func(tx model.Tx) (err error) {
					page, next, err = list(tx, p)
					return err
				})
				size := 0
				for _, it := range page {
					raw, _ := json.Marshal(it)
					size += len(raw)
				}
				if len(page) > 1 && size > maxBytes {
					t.Fatalf("a page of %d items holds %d bytes", len(page), size)
				}
				if next == "" {
					break
				}
				p.Cursor = next
			}
		})
	}
	t.Run("NoCapWithoutMaxBytes", func(t *testing.T) {
		f.view(func(tx model.Tx) error {
			evs, next, err := tx.Events(tn.ID, model.EventFilter{}, model.Page{Limit: 500})
			if err != nil || len(evs) != n || next != "" {
				t.Fatalf("%d events, next %q, %v", len(evs), next, err)
			}
			return nil
		})
	})
}

func anys[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}
