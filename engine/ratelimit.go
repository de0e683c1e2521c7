package engine

import "github.com/fieldrelay/fieldrelay/engine/model"

// RateWindows returns the rate-limit windows that the store shares between processes, or
// nil when the store is one process's own (bbolt): the server then counts each tenant's
// window in memory alone (docs/decisions/0100-rate-limit-processes.md).
func (e *Engine) RateWindows() model.RateWindows {
	if rw, ok := e.base.(model.RateWindows); ok {
		return rw
	}
	return nil
}
