package postgres

import "github.com/fieldrelay/fieldrelay/engine/model"

// Alerts of model.Tx (docs/decisions/0172-shared-alerts.md).

func (t *tx) Alert(tenantID, id string) (*model.Alert, error) {
	tn, aid, err := t.ids(tenantID, id, "alert")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Alert](t, "alert", "SELECT doc FROM alerts WHERE tenant_id = $1 AND id = $2", tn, aid)
}

func (t *tx) OpenAlert(tenantID, key string) (*model.Alert, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	a, err := getDoc[model.Alert](t, "alert", "SELECT doc FROM alerts WHERE tenant_id = $1 AND key = $2 AND status = 'open'", tn, key)
	if model.IsKind(err, model.KindNotFound) {
		return nil, nil
	}
	return a, err
}

func (t *tx) PutAlert(tenantID string, a *model.Alert) error {
	tn, id, err := t.ids(tenantID, a.ID, "alert")
	if err != nil {
		return err
	}
	doc, err := jsonOf(a)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO alerts (tenant_id, id, key, status, kind, event_id, doc) SELECT $1, $2, $3, $4, $5, $6, $7`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET key = excluded.key, status = excluded.status, kind = excluded.kind,
		event_id = excluded.event_id, doc = excluded.doc`, tn, id, a.Key, a.Status, a.Kind, a.EventID, doc)
}

func (t *tx) Alerts(tenantID string, f model.AlertFilter, p model.Page) ([]model.Alert, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, "", err
	}
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	status := f.Status
	if status == "" {
		status = model.AlertOpen
	}
	return page[model.Alert](t, p, `SELECT id, doc FROM alerts WHERE tenant_id = $1
		AND ($2 = 'all' OR status = $2) AND ($3 = '' OR kind = $3) AND ($4 = '' OR event_id = $4)
		AND ($5::uuid IS NULL OR id < $5) ORDER BY id DESC LIMIT $6`,
		tn, status, f.Kind, f.EventID, after, limitOf(p))
}
