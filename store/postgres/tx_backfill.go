package postgres

import (
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/jackc/pgx/v5"
)

// recordTables are the tables of the kinds a change log holds.
var recordTables = map[string]string{model.ChangeEvent: "events", model.ChangeDispatch: "dispatches",
	model.ChangeMission: "missions"}

func (t *tx) RecordIDs(tenantID, kind, after string, limit int) ([]string, error) {
	table, ok := recordTables[kind]
	if !ok {
		return nil, fmt.Errorf("RecordIDs: unknown kind %q", kind)
	}
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	from := "00000000-0000-0000-0000-000000000000"
	if after != "" {
		if from, ok = uid(after); !ok {
			return nil, model.Invalid("after", "after must be a record id")
		}
	}
	var out []string
	err = t.each(`SELECT id FROM `+table+` WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
		[]any{tn, from, max(limit, 0)}, func(r pgx.Rows) (bool, error) {
			var id string
			err := r.Scan(&id)
			out = append(out, id)
			return true, err
		})
	return out, err
}
