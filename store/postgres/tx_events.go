package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// Zones, teams, events, event replies and parked events of model.Tx.

func (t *tx) Zone(tenantID, code string) (*model.Zone, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return nil, err
	}
	z, err := getDoc[model.Zone](t, "zone", "SELECT doc FROM zones WHERE tenant_id = $1 AND code = $2", tn, code)
	if model.IsKind(err, model.KindNotFound) {
		if terr := t.requireTenant(tn); terr != nil {
			return nil, terr
		}
	}
	return z, err
}

func (t *tx) PutZone(tenantID string, z *model.Zone) error {
	t.changed(tenantID)
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return err
	}
	doc, err := jsonOf(z)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO zones (tenant_id, code, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, code) DO UPDATE SET doc = excluded.doc`, tn, z.Code, doc)
}

func (t *tx) Zones(tenantID string) ([]model.Zone, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	return docs[model.Zone](t, "SELECT doc FROM zones WHERE tenant_id = $1 ORDER BY code", tn)
}

func (t *tx) DeleteZone(tenantID, code string) error {
	t.changed(tenantID)
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return err
	}
	tag, err := t.exec("DELETE FROM zones WHERE tenant_id = $1 AND code = $2", tn, code)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return model.NotFound("zone")
	}
	return nil
}

func (t *tx) Team(tenantID, id string) (*model.Team, error) {
	tn, tid, err := t.ids(tenantID, id, "team")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Team](t, "team", "SELECT doc FROM teams WHERE tenant_id = $1 AND id = $2", tn, tid)
}

func (t *tx) PutTeam(tenantID string, tm *model.Team) error {
	t.changed(tenantID)
	return t.PutTeamPositions(tenantID, tm)
}

// PutTeamPositions is PutTeam without the directory version bump.
func (t *tx) PutTeamPositions(tenantID string, tm *model.Team) error {
	tn, id, err := t.ids(tenantID, tm.ID, "team")
	if err != nil {
		return err
	}
	doc, err := jsonOf(tm)
	if err != nil {
		return err
	}
	t.wroteTeams = true
	return t.put(`INSERT INTO teams (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

func (t *tx) DeleteTeam(tenantID, id string) error {
	t.changed(tenantID)
	tn, tid, err := ids(tenantID, id, "team")
	if err != nil {
		return err
	}
	t.wroteTeams = true
	tag, err := t.exec("DELETE FROM teams WHERE tenant_id = $1 AND id = $2", tn, tid)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return model.NotFound("team")
	}
	return nil
}

func (t *tx) Teams(tenantID string) ([]model.Team, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	return t.teams(tn)
}

func (t *tx) Event(tenantID, id string) (*model.Event, error) {
	tn, eid, err := t.ids(tenantID, id, "event")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Event](t, "event", "SELECT doc FROM events WHERE tenant_id = $1 AND id = $2", tn, eid)
}

func (t *tx) PutEvent(tenantID string, ev *model.Event) error {
	tn, id, err := t.ids(tenantID, ev.ID, "event")
	if err != nil {
		return err
	}
	doc := json.RawMessage(ev.AppendJSON(make([]byte, 0, 768+len(ev.Payload))))
	t.eventWritten(tn, id, doc)
	// The changes that name the event keep the document they were published with
	// (feed_events.go) when this one differs.
	return t.put(`WITH kept AS (`+keepPublished("ARRAY[$2::uuid]")+` AND e.doc::text IS DISTINCT FROM $10::json::text)
		INSERT INTO events (tenant_id, id, created_at, zone_code, vertical, status, priority, type, origin, doc)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = excluded.created_at, zone_code = excluded.zone_code,
		vertical = excluded.vertical, status = excluded.status, priority = excluded.priority, type = excluded.type,
		origin = excluded.origin, doc = excluded.doc`,
		tn, id, ev.CreatedAt.Time, ev.ZoneCode, ev.Vertical, ev.Status, ev.Priority, ev.Type, ev.Origin, doc)
}

// Events filters in SQL on the typed columns, newest first by id (UUIDv7: time order);
// open events and a search go through filteredEvents.
func (t *tx) Events(tenantID string, f model.EventFilter, p model.Page) ([]model.Event, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, "", err
	}
	if f.Open || f.Query != "" {
		return t.filteredEvents(tn, f, p)
	}
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	lo, hi := eventIDBounds(f, after)
	// The ids bound the walk of the primary key, as the bbolt store walks its events
	// (docs/decisions/0256-event-lists-by-id.md); the typed columns filter what it meets.
	return page[model.Event](t, p, `SELECT id, doc FROM events WHERE tenant_id = $1
		AND id >= $2::uuid AND id < $3::uuid
		AND ($4 = '' OR zone_code = $4) AND ($5 = '' OR vertical = $5) AND ($6 = '' OR status = $6)
		AND ($7 = '' OR priority = $7) AND ($8 = '' OR type = $8) AND ($9 = '' OR origin = $9)
		AND ($10::timestamptz IS NULL OR created_at >= $10) AND ($11::timestamptz IS NULL OR created_at <= $11)
		ORDER BY id DESC LIMIT $12`,
		tn, lo, hi, f.ZoneCode, f.Vertical, f.Status, f.Priority, f.Type, f.Origin, f.Since, f.Until, limitOf(p))
}

// eventIDBounds are the ids [lo, hi) between which a list of f's events lies, newest
// first after the cursor after (nil: from the newest). An event's id is a UUIDv7 of its
// millisecond: from since's millisecond to until's included, as the bbolt store walks
// them.
func eventIDBounds(f model.EventFilter, after *string) (lo, hi string) {
	lo, hi = millisID(time.UnixMilli(0)), millisID(time.UnixMilli(1<<48))
	if f.Since != nil {
		lo = millisID(*f.Since)
	}
	if f.Until != nil {
		hi = millisID(f.Until.Add(time.Millisecond))
	}
	if after != nil && *after < hi {
		hi = *after
	}
	return lo, hi
}

func (t *tx) EventReply(tenantID, key string) (*model.IdempotencyRecord, error) {
	if key == "" {
		return nil, nil
	}
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return nil, err
	}
	if r, ok := t.groupReply(tn, key); ok {
		return r, nil
	}
	if t.known[tn] {
		return t.eventReply(tn, key)
	}
	// The tenant's check and the reply in one round trip: no row, no tenant; a row of
	// NULLs, no reply.
	var status *int
	var requestID *string
	var at *time.Time
	var body []byte
	found, err := t.scan(`SELECT r.status, r.request_id, r.created_at, r.body FROM tenants t
		LEFT JOIN event_replies r ON r.tenant_id = t.tenant_id AND r.key = $2 WHERE t.tenant_id = $1`,
		[]any{tn, key}, &status, &requestID, &at, &body)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, model.NotFound("tenant")
	}
	t.exists(tn)
	if status == nil {
		return nil, nil
	}
	r := &model.IdempotencyRecord{CreatedAt: model.At(*at)}
	r.Status, r.Body = *status, body
	if requestID != nil {
		r.RequestID = *requestID
	}
	if r.Body == nil {
		r.Body = []byte{}
	}
	return r, nil
}

// EventReplies reads the replies of many keys in one query.
func (t *tx) EventReplies(tenantID string, keys []string) (map[string]*model.IdempotencyRecord, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	out := map[string]*model.IdempotencyRecord{}
	if len(keys) == 0 {
		return out, nil
	}
	err = t.each("SELECT key, status, request_id, created_at, body FROM event_replies WHERE tenant_id = $1 AND key = ANY($2)",
		[]any{tn, keys}, func(row pgx.Rows) (bool, error) {
			var key string
			var w replyRow
			if err := row.Scan(append([]any{&key}, w.dest()...)...); err != nil {
				return false, err
			}
			out[key] = w.record()
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// replyLookup reads the reply of tenant $1's key $2.
const replyLookup = "SELECT status, request_id, created_at, body FROM event_replies WHERE tenant_id = $1 AND key = $2"

// replyRow is a reply as a row of event_replies holds it (replyLookup's columns).
type replyRow struct {
	r  model.IdempotencyRecord
	at time.Time
}

// dest is what a scan of replyLookup's columns fills.
func (w *replyRow) dest() []any { return []any{&w.r.Status, &w.r.RequestID, &w.at, &w.r.Body} }

// record is the reply read (an empty body, never nil).
func (w *replyRow) record() *model.IdempotencyRecord {
	w.r.CreatedAt = model.At(w.at)
	if w.r.Body == nil {
		w.r.Body = []byte{}
	}
	return &w.r
}

// eventReply reads a reply of a tenant known to exist.
func (t *tx) eventReply(tn, key string) (*model.IdempotencyRecord, error) {
	var w replyRow
	found, err := t.scan(replyLookup, []any{tn, key}, w.dest()...)
	if err != nil || !found {
		return nil, err
	}
	return w.record(), nil
}

// PutEventReply keeps what the bbolt store keeps of an event's reply: status, request id,
// time and body.
func (t *tx) PutEventReply(tenantID, key string, r *model.IdempotencyRecord) error {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return err
	}
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	at := r.CreatedAt.Truncate(time.Millisecond)
	t.replyWritten(tn, key, &model.IdempotencyRecord{Reply: model.Reply{Status: r.Status, RequestID: r.RequestID, Body: body},
		CreatedAt: model.At(at)})
	return t.put(`INSERT INTO event_replies (tenant_id, key, status, request_id, created_at, body)
		SELECT $1, $2, $3, $4, $5, $6`+ifTenant+`
		ON CONFLICT (tenant_id, key) DO UPDATE SET status = excluded.status, request_id = excluded.request_id,
		created_at = excluded.created_at, body = excluded.body`,
		tn, key, r.Status, r.RequestID, at, body)
}

func (t *tx) ParkEvent(tenantID, zoneCode, eventID string) error {
	tn, id, err := t.ids(tenantID, eventID, "event")
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO events_parked (tenant_id, zone_code, event_id) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, zone_code, event_id) DO UPDATE SET event_id = excluded.event_id`, tn, zoneCode, id)
}

func (t *tx) UnparkEvent(tenantID, zoneCode, eventID string) error {
	tn, id, err := t.ids(tenantID, eventID, "event")
	if err != nil {
		return err
	}
	tag, err := t.exec("DELETE FROM events_parked WHERE tenant_id = $1 AND zone_code = $2 AND event_id = $3", tn, zoneCode, id)
	if err != nil || tag.RowsAffected() > 0 {
		return err
	}
	return t.requireTenant(tn)
}

func (t *tx) ParkedEvents(tenantID string, zoneCode *string) ([]model.ParkedRef, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	var out []model.ParkedRef
	err = t.each(`SELECT zone_code, event_id FROM events_parked WHERE tenant_id = $1
		AND ($2::text IS NULL OR zone_code = $2) ORDER BY zone_code, event_id`, []any{tn, zoneCode},
		func(r pgx.Rows) (bool, error) {
			var ref model.ParkedRef
			err := r.Scan(&ref.ZoneCode, &ref.EventID)
			out = append(out, ref)
			return true, err
		})
	return out, err
}

func (t *tx) Webhook(tenantID, id string) (*model.Webhook, error) {
	tn, wid, err := t.ids(tenantID, id, "webhook")
	if err != nil {
		return nil, err
	}
	w, err := getDoc[model.Webhook](t, "webhook", "SELECT doc FROM webhooks WHERE tenant_id = $1 AND id = $2", tn, wid)
	if err != nil {
		return nil, err
	}
	return w, t.openWebhook(w)
}

// openWebhook decrypts the secret of a stored subscription (secrets.go).
func (t *tx) openWebhook(w *model.Webhook) (err error) {
	id, _ := uid(w.ID)
	w.Secret, err = t.db.secrets.openWebhook(id, w.Secret)
	return err
}

func (t *tx) PutWebhook(tenantID string, w *model.Webhook) error {
	t.changed(tenantID)
	tn, id, err := t.ids(tenantID, w.ID, "webhook")
	if err != nil {
		return err
	}
	sealed := *w
	sealed.Secret = t.db.secrets.sealWebhook(id, w.Secret)
	doc, err := jsonOf(&sealed)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO webhooks (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

// DeleteWebhook removes a subscription and its attempt log.
func (t *tx) DeleteWebhook(tenantID, id string) error {
	t.changed(tenantID)
	tn, wid, err := t.ids(tenantID, id, "webhook")
	if err != nil {
		return err
	}
	tag, err := t.exec("DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2", tn, wid)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		if err := t.requireTenant(tn); err != nil {
			return err
		}
		return model.NotFound("webhook")
	}
	_, err = t.exec("DELETE FROM delivery_attempts WHERE tenant_id = $1 AND webhook_id = $2", tn, wid)
	return err
}

func (t *tx) Webhooks(tenantID string) ([]model.Webhook, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	ws, err := docs[model.Webhook](t, "SELECT doc FROM webhooks WHERE tenant_id = $1 ORDER BY id", tn)
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if err := t.openWebhook(&ws[i]); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

func (t *tx) PutDeliveryAttempt(tenantID string, a *model.DeliveryAttempt) error {
	tn, id, err := t.ids(tenantID, a.ID, "delivery attempt")
	if err != nil {
		return err
	}
	wid, ok := uid(a.WebhookID)
	if !ok {
		return model.NotFound("webhook")
	}
	doc, err := jsonOf(a)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO delivery_attempts (tenant_id, webhook_id, id, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, webhook_id, id) DO UPDATE SET doc = excluded.doc`, tn, wid, id, doc)
}

func (t *tx) DeliveryAttempts(tenantID, webhookID string, p model.Page) ([]model.DeliveryAttempt, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, "", err
	}
	wid, ok := uid(webhookID)
	if !ok {
		return nil, "", model.NotFound("webhook")
	}
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	return page[model.DeliveryAttempt](t, p, `SELECT id, doc FROM delivery_attempts
		WHERE tenant_id = $1 AND webhook_id = $2 AND ($3::uuid IS NULL OR id < $3) ORDER BY id DESC LIMIT $4`,
		tn, wid, after, limitOf(p))
}

func (t *tx) OutboxEntry(tenantID, id string) (*model.OutboxEntry, error) {
	tn, oid, err := t.ids(tenantID, id, "outbox entry")
	if err != nil {
		return nil, err
	}
	return getDoc[model.OutboxEntry](t, "outbox entry", "SELECT doc FROM outbox WHERE tenant_id = $1 AND id = $2", tn, oid)
}

// PutOutboxEntry stores the entry; its due time and lease are columns, which the outbox_due
// index orders.
func (t *tx) PutOutboxEntry(o *model.OutboxEntry) error {
	tn, id, err := t.ids(o.TenantID, o.ID, "outbox entry")
	if err != nil {
		return err
	}
	doc, err := jsonOf(o)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO outbox (tenant_id, id, due_at, leased, doc) SELECT $1, $2, $3, $4, $5`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET due_at = excluded.due_at, leased = excluded.leased, doc = excluded.doc`,
		tn, id, time.UnixMilli(o.DueAt.UnixMilli()), o.LeasedBy != "", doc)
}

func (t *tx) DeleteOutboxEntry(tenantID, id string) error {
	tn, oid, err := t.ids(tenantID, id, "outbox entry")
	if err != nil {
		return nil
	}
	_, err = t.exec("DELETE FROM outbox WHERE tenant_id = $1 AND id = $2", tn, oid)
	return err
}

// DueOutbox is one of the few reads across tenants: the scheduler's index of due entries.
func (t *tx) DueOutbox() ([]model.OutboxRef, error) {
	return t.dueOutbox("SELECT tenant_id, id, due_at, leased FROM outbox ORDER BY due_at, tenant_id, id")
}

// DueOutboxBefore reads the outbox_due index up to until: a process on the shared database
// polls it every second, so it must not cost more than the entries it returns.
func (t *tx) DueOutboxBefore(until time.Time, limit int) ([]model.OutboxRef, error) {
	if limit <= 0 {
		return nil, nil
	}
	return t.dueOutbox(`SELECT tenant_id, id, due_at, leased FROM outbox WHERE due_at <= $1
		ORDER BY due_at, tenant_id, id LIMIT $2`, until, limit)
}

// dueOutbox reads the outbox entries that query selects, as refs.
func (t *tx) dueOutbox(query string, args ...any) ([]model.OutboxRef, error) {
	var out []model.OutboxRef
	err := t.each(query, args, func(r pgx.Rows) (bool, error) {
		var ref model.OutboxRef
		if err := r.Scan(&ref.TenantID, &ref.ID, &ref.DueAt, &ref.Leased); err != nil {
			return false, fmt.Errorf("postgres: %w", err)
		}
		ref.DueAt = ref.DueAt.UTC()
		out = append(out, ref)
		return true, nil
	})
	return out, err
}
