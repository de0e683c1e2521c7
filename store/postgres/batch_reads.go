package postgres

import (
	"errors"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// What the calls of a Batch group read, read once for the group
// (docs/decisions/0231-group-reads.md): each call declares the idempotency key whose reply
// it looks up (model.BatchReads), and the group's transaction begins with one round trip
// that locks the tenant (lockTenant), reads the tenant's upstream settings, which every
// write of the tenant reads (the engine's upstream change log), its stream head, and the
// replies of all the declared keys. Each statement of that round trip takes its snapshot
// once the one before it ended (READ COMMITTED), so they read under the lock: no other
// transaction writes the tenant's replies or advances its head until this one ends. The
// replies this one writes are kept in step (PutEventReply, PruneEvents), and a call's
// EventReply of a declared key is answered from memory; the head numbers the group's
// stream changes without a round trip of its own (flushChanges).

// groupReads are the replies a transaction read for its Batch group, of one tenant: by
// key, nil for a key without a reply.
type groupReads struct {
	tenant  string
	replies map[string]*model.IdempotencyRecord
}

// readGroup runs readForGroup for the calls of a group, all of one tenant.
func (t *tx) readGroup(calls []*batchCall) error {
	tn, ok := uid(calls[0].tenant)
	if !ok {
		return nil
	}
	reads := make([]model.BatchReads, len(calls))
	for i, c := range calls {
		reads[i] = c.reads
	}
	return t.readForGroup(tn, reads)
}

// readForGroup locks tenant tn and reads its upstream settings, its stream head and the
// replies the calls declared, in one round trip. It
// must come before any other statement of tn in the transaction (else it reads nothing);
// a tenant that does not exist is left for the calls' own statements to answer.
func (t *tx) readForGroup(tn string, reads []model.BatchReads) error {
	if !t.rw || t.locked[tn] {
		return nil
	}
	var keys []string
	for _, r := range reads {
		if r.EventReplyKey != "" {
			keys = append(keys, r.EventReplyKey)
		}
	}
	if t.locked == nil {
		t.locked = map[string]bool{}
	}
	t.locked[tn] = true
	br, err := t.send(func(b *pgx.Batch) {
		b.Queue(lockTenantSQL, tn)
		b.Queue(`SELECT doc FROM upstreams WHERE tenant_id = $1`, tn)
		b.Queue(`SELECT coalesce((SELECT seq FROM stream_heads WHERE tenant_id = $1), 0)`, tn)
		// One lookup a key, the statement eventReply sends: a `key = ANY($2)` of them all
		// took a plan cached while the table was small, a scan of the whole table (2.7 ms
		// a group under the bench).
		for _, k := range keys {
			b.Queue(replyLookup, tn, k)
		}
	})
	if err != nil {
		return err
	}
	err = t.scanGroupReads(br, tn, keys)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	t.note(err)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// scanGroupReads reads the answers of readForGroup's statements.
func (t *tx) scanGroupReads(br pgx.BatchResults, tn string, keys []string) error {
	var one int
	err := br.QueryRow().Scan(&one)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var raw []byte
	if err := br.QueryRow().Scan(&raw); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var head int64
	if err := br.QueryRow().Scan(&head); err != nil {
		return err
	}
	var g *groupReads
	if len(keys) > 0 {
		g = &groupReads{tenant: tn, replies: make(map[string]*model.IdempotencyRecord, len(keys))}
		for _, k := range keys {
			g.replies[k] = nil
		}
		for _, k := range keys {
			var w replyRow
			err := br.QueryRow().Scan(w.dest()...)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			g.replies[k] = w.record()
		}
	}
	if !found {
		return nil
	}
	t.lockedExisting(tn)
	t.group = g
	if t.headsRead == nil {
		t.headsRead = map[string]int64{}
	}
	t.headsRead[tn] = head
	if t.upstreams == nil {
		t.upstreams = map[string][]byte{}
	}
	t.upstreams[tn] = raw
	return nil
}

// groupReply answers EventReply from what readForGroup read; ok is false for a key it
// did not read.
func (t *tx) groupReply(tn, key string) (r *model.IdempotencyRecord, ok bool) {
	if t.group == nil || t.group.tenant != tn {
		return nil, false
	}
	r, ok = t.group.replies[key]
	if r != nil {
		c := *r
		r = &c
	}
	return r, ok
}

// replyWritten keeps the replies read for the group in step with a reply this
// transaction writes (nil: deletes).
func (t *tx) replyWritten(tn, key string, r *model.IdempotencyRecord) {
	if t.group == nil || t.group.tenant != tn {
		return
	}
	if _, ok := t.group.replies[key]; ok {
		t.group.replies[key] = r
	}
}
