package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AppendDown takes the next sequence number of the tenant's downstream log from
// downstream_log_end, which keeps the last one given even when the log is trimmed empty.
func (t *tx) AppendDown(tenantID string, c model.DownChange) (int64, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return 0, err
	}
	if !model.DownKinds[c.Kind] || c.Key == "" {
		return 0, fmt.Errorf("downstream change: bad kind %q or key %q", c.Kind, c.Key)
	}
	var seq int64
	found, err := t.scan(t.ofTenant(tn, `INSERT INTO downstream_log_end (tenant_id, last_seq) SELECT $1, 1`+ifTenant+`
		ON CONFLICT (tenant_id) DO UPDATE SET last_seq = downstream_log_end.last_seq + 1 RETURNING last_seq`), []any{tn}, &seq)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, model.NotFound("tenant")
	}
	_, err = t.exec("INSERT INTO downstream_log (tenant_id, seq, kind, record_key, at) VALUES ($1, $2, $3, $4, $5)",
		tn, seq, c.Kind, c.Key, time.UnixMilli(c.At.UnixMilli()))
	return seq, err
}

func (t *tx) DownChanges(tenantID string, after int64, limit int) ([]model.DownChange, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	var out []model.DownChange
	err = t.each(`SELECT seq, kind, record_key, at FROM downstream_log WHERE tenant_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3`, []any{tn, after, max(limit, 0)}, func(r pgx.Rows) (bool, error) {
		var c model.DownChange
		var at time.Time
		err := r.Scan(&c.Seq, &c.Kind, &c.Key, &at)
		c.At = model.At(at)
		out = append(out, c)
		return true, err
	})
	return out, err
}

func (t *tx) TrimDown(tenantID string, through int64) error {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return err
	}
	_, err = t.exec("DELETE FROM downstream_log WHERE tenant_id = $1 AND seq <= $2", tn, through)
	return err
}

func (t *tx) DownBounds(tenantID string) (first, end int64, err error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, 0, err
	}
	if _, err = t.scan("SELECT last_seq FROM downstream_log_end WHERE tenant_id = $1", []any{tn}, &end); err != nil {
		return 0, 0, err
	}
	found, err := t.scan("SELECT seq FROM downstream_log WHERE tenant_id = $1 ORDER BY seq LIMIT 1", []any{tn}, &first)
	if err != nil {
		return 0, 0, err
	}
	if !found {
		first = end + 1
	}
	return first, end, nil
}
