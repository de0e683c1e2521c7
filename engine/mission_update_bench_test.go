package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// BenchmarkMissionUpdateQueueBytes measures the queue of a device 7 days offline on a busy
// team (issue 27, Measure): 200 missions of its team, each changed 5 times by the
// supervisor (ACK, ON_ROUTE, ON_SITE, a message, COMPLETED) over 7 days, with and without
// the coalescing of mission_update items. It reports the stored queue (the items' JSON as
// the store keeps them) and the queue as the device receives it (the rendered entries),
// in bytes, and the number of items. Run with -benchtime=1x.
func BenchmarkMissionUpdateQueueBytes(b *testing.B) {
	for _, coalesce := range []bool{true, false} {
		b.Run(fmt.Sprintf("coalesce=%v", coalesce), func(b *testing.B) {
			for range b.N {
				t := &testing.T{}
				f := newCrewFix(t)
				defer func() { _ = f.db.Close(); _ = os.RemoveAll(f.dir) }()
				f.e.SetCoalesce(coalesce)
				ctx := context.Background()
				step := 7 * 24 * time.Hour / 200
				for i := range 200 {
					m := f.dispatch(t, f.event(t), f.teamA)
					for j, s := range []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, "message", model.MissionCompleted} {
						f.clock.Advance(step / 6)
						if s == "message" {
							if _, err := f.e.PostMissionMessage(ctx, f.sup, m.ID, model.MissionMessageInput{
								Text: fmt.Sprintf("Update %d on mission %d: the access road is closed, use the north gate", j, i)}, nil); err != nil {
								b.Fatal(err)
							}
							continue
						}
						f.move(t, f.sup, m.ID, s)
					}
					f.clock.Advance(step / 6)
				}
				if t.Failed() {
					b.Fatal("the fixture failed")
				}
				var stored, rendered, items int
				if err := f.e.View(ctx, func(tx model.Tx) error {
					qs, err := tx.QueueItems(f.tenant.ID, f.a1.ID, 0, 1<<20)
					for i := range qs {
						raw, _ := json.Marshal(&qs[i])
						stored += len(raw)
					}
					items = len(qs)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				q, _, err := f.e.DeviceQueue(ctx, tenantAdmin(f.tenant.ID), f.a1.ID, model.Page{Limit: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				for i := range q {
					raw, _ := json.Marshal(&q[i])
					rendered += len(raw)
				}
				b.ReportMetric(float64(items), "items")
				b.ReportMetric(float64(stored), "stored_B")
				b.ReportMetric(float64(rendered), "rendered_B")
			}
		})
	}
}
