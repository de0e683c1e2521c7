package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestTx_PagesCappedInBytes: every list of the store ends a page before the record that
// would take its stored JSON past Page.MaxBytes, names the next cursor, and walking the
// cursors yields every record once; a record larger than MaxBytes comes alone.
func TestTx_PagesCappedInBytes(t *testing.T) {
	db := MustOpenDB(t)
	tn := MustPutTenant(t, db, "acme")
	team, webhook := model.NewID(), model.NewID()
	start := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	const n = 7
	// Records of about 10 KB each: big text in a free field; the fourth is 40 KB.
	big := func(i int) string {
		if i == 3 {
			return strings.Repeat("x", 40_000)
		}
		return strings.Repeat("x", 10_000)
	}
	MustUpdate(t, db, func(tx model.Tx) error {
		for i := range n {
			at := start.Add(time.Duration(i) * time.Second)
			payload, _ := json.Marshal(map[string]string{"text": big(i)})
			ev := &model.Event{ID: model.NewIDAt(at), Type: "fire", Priority: model.PriorityNormal,
				Status: model.EventPending, Payload: payload, CreatedAt: model.At(at)}
			if err := tx.PutEvent(tn.ID, ev); err != nil {
				return err
			}
			m := newMission(model.NewID(), team, model.MissionCreated, at)
			m.Notes = big(i)
			if err := tx.PutMission(tn.ID, m); err != nil {
				return err
			}
			if err := tx.PutDeliveryAttempt(tn.ID, &model.DeliveryAttempt{ID: model.NewIDAt(at), WebhookID: webhook,
				Status: "failed", Error: big(i), At: model.At(at)}); err != nil {
				return err
			}
			u := newUser(tn.ID, fmt.Sprintf("u%d@acme.example", i))
			u.ID, u.Name = model.NewIDAt(at), big(i)
			if err := tx.PutUserAccount(u); err != nil {
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
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			var sizes []int
			seen := map[string]bool{}
			cursor := ""
			for range n + 1 {
				var items []any
				var next string
				MustView(t, db, func(tx model.Tx) (err error) {
					items, next, err = list(tx, model.Page{Limit: 500, Cursor: cursor, MaxBytes: maxBytes})
					return err
				})
				size := 0
				for _, it := range items {
					raw, _ := json.Marshal(it)
					size += len(raw)
					var id struct {
						ID      string `json:"id"`
						EventID string `json:"event_id"`
					}
					_ = json.Unmarshal(raw, &id)
					seen[id.ID+id.EventID] = true
				}
				if len(items) > 1 && size > maxBytes {
					t.Fatalf("a page of %d items holds %d bytes", len(items), size)
				}
				sizes = append(sizes, len(items))
				if next == "" {
					break
				}
				cursor = next
			}
			// Newest first: 6 5 | 4 | 3 (40 KB, alone) | 2 1 | 0.
			if fmt.Sprint(sizes) != "[2 1 1 2 1]" || len(seen) != n {
				t.Fatalf("pages of %v items, %d distinct", sizes, len(seen))
			}
		})
	}
	t.Run("NoCapWithoutMaxBytes", func(t *testing.T) {
		MustView(t, db, func(tx model.Tx) error {
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
