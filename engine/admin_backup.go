package engine

import (
	"context"
	"io"
)

// Backup writes a consistent snapshot of the node's whole store to w, while other
// transactions go on (`fieldrelay backup`). It returns the bytes written.
func (e *Engine) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return e.store.Backup(ctx, w)
}
