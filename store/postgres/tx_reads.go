package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A write transaction that holds a tenant's lock (lockTenant) reads the tenant's record,
// its zones and its webhooks once: no other transaction writes them until it ends, every
// writer of a tenant's records taking the lock first, so a read made again under the lock
// would answer the same rows. A group of Batch calls (batch.go) makes each call read them
// again, a round trip each, one call after the other while the other writers of the
// tenant wait (docs/decisions/0243-tenant-reads-kept-under-its-lock.md). The transaction's own writes
// of those tables drop what it read (forget). A read-only transaction holds no lock: it
// reads every time, as before.

// readKey names a kept read: a table and a tenant (canonical id).
type readKey struct{ table, tenant string }

// keptRows answers the documents that sql (with the tenant as $1 and no other parameter)
// finds, from the transaction's earlier read of the same table and tenant when it holds
// the tenant's lock.
func (t *tx) keptRows(table, tn, sql string) ([][]byte, error) {
	keep := t.rw && t.locked[tn]
	k := readKey{table, tn}
	if keep {
		if rows, ok := t.kept[k]; ok {
			return rows, nil
		}
	}
	rows := [][]byte{}
	err := t.each(sql, []any{tn}, func(r pgx.Rows) (bool, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return false, err
		}
		rows = append(rows, raw)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if keep {
		if t.kept == nil {
			t.kept = map[readKey][][]byte{}
		}
		t.kept[k] = rows
	}
	return rows, nil
}

// keptDocs decodes keptRows: each call answers values of its own.
func keptDocs[T any](t *tx, table, tn, sql string) ([]T, error) {
	rows, err := t.keptRows(table, tn, sql)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for _, raw := range rows {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("postgres: decoding a record: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// forget drops the kept read of a table for a tenant ("" for every tenant): the
// transaction writes it.
func (t *tx) forget(table, tn string) {
	for k := range t.kept {
		if k.table == table && (tn == "" || k.tenant == tn) {
			delete(t.kept, k)
		}
	}
}
