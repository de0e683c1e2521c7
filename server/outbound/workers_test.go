package outbound_test

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/delivery"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// TestDeliveryWorkersFillFourReceivers (docs/decisions/0254-delivery-workers.md): the
// scheduler makes by default as many calls at once as four receivers take, so that four
// subscribers' deliveries keep up with ingest.
func TestDeliveryWorkersFillFourReceivers(t *testing.T) {
	if want := 4 * outbound.MaxConnsPerReceiver; delivery.DefaultWorkers < want {
		t.Fatalf("delivery.DefaultWorkers = %d: fewer calls at once than four receivers' %d connections", delivery.DefaultWorkers, want)
	}
}
