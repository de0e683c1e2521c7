package postgres

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Missions, dispatches, the ledger, mission codes, inbound SMS, sync batches and usage
// counters of model.Tx.

func (t *tx) Mission(tenantID, id string) (*model.Mission, error) {
	tn, mid, err := t.ids(tenantID, id, "mission")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Mission](t, "mission", "SELECT doc FROM missions WHERE tenant_id = $1 AND id = $2", tn, mid)
}

func (t *tx) PutMission(tenantID string, m *model.Mission) error {
	tn, id, err := t.ids(tenantID, m.ID, "mission")
	if err != nil {
		return err
	}
	ev, ok := uid(m.EventID)
	if !ok {
		return model.NotFound("event")
	}
	team, ok := uid(m.TeamID)
	if !ok {
		return model.NotFound("team")
	}
	doc, err := jsonOf(m)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO missions (tenant_id, id, event_id, team_id, status, origin, doc)
		SELECT $1, $2, $3, $4, $5, $6, $7`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET status = excluded.status, origin = excluded.origin, doc = excluded.doc`,
		tn, id, ev, team, m.Status, m.Origin, doc)
}

// Missions filters in SQL, newest first by id.
func (t *tx) Missions(tenantID string, f model.MissionFilter, p model.Page) ([]model.Mission, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, "", err
	}
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	if f.TeamIDs != nil && len(f.TeamIDs) == 0 {
		return []model.Mission{}, "", nil
	}
	var teams []string // nil: any team
	if f.TeamIDs != nil {
		teams = []string{}
		for _, id := range f.TeamIDs {
			if c, ok := uid(id); ok {
				teams = append(teams, c)
			}
		}
	}
	var event *string
	if f.EventID != "" {
		c, ok := uid(f.EventID)
		if !ok {
			return []model.Mission{}, "", nil
		}
		event = &c
	}
	return page[model.Mission](t, p, `SELECT id, doc FROM missions WHERE tenant_id = $1
		AND ($2::uuid IS NULL OR id < $2) AND ($3 = '' OR status = $3) AND ($4::uuid IS NULL OR event_id = $4)
		AND ($5 = '' OR origin = $5) AND ($6::uuid[] IS NULL OR team_id = ANY($6))
		ORDER BY id DESC LIMIT $7`, tn, after, f.Status, event, f.Origin, teams, limitOf(p))
}

func (t *tx) MissionsOfEvent(tenantID, eventID string) ([]model.Mission, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	ev, ok := uid(eventID)
	if !ok {
		return nil, nil
	}
	out, err := docs[model.Mission](t, "SELECT doc FROM missions WHERE tenant_id = $1 AND event_id = $2 ORDER BY id", tn, ev)
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

func (t *tx) PutDispatch(tenantID string, d *model.Dispatch) error {
	tn, id, err := t.ids(tenantID, d.ID, "dispatch")
	if err != nil {
		return err
	}
	doc, err := jsonOf(d)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO dispatches (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

func (t *tx) Dispatch(tenantID, id string) (*model.Dispatch, error) {
	tn, did, err := t.ids(tenantID, id, "dispatch")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Dispatch](t, "dispatch", "SELECT doc FROM dispatches WHERE tenant_id = $1 AND id = $2", tn, did)
}

func (t *tx) PutLedgerEntry(tenantID string, e *model.LedgerEntry) error {
	tn, id, err := t.ids(tenantID, e.ID, "ledger entry")
	if err != nil {
		return err
	}
	doc, err := jsonOf(e)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO ledger (tenant_id, id, kind, doc) SELECT $1, $2, $3, $4`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET kind = excluded.kind, doc = excluded.doc`, tn, id, e.Kind, doc)
}

// millisID is the smallest UUIDv7 of a Unix millisecond, clamped to a UUIDv7's range: the
// ledger is counted, and events are listed (eventIDBounds), by the time their ids were
// taken at, as the bbolt store does.
func millisID(t time.Time) string {
	ms := min(max(t.UnixMilli(), 0), 1<<48-1)
	var u uuid.UUID
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

func (t *tx) LedgerCount(tenantID, kind string, from, to time.Time) (int, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, err
	}
	var n int
	_, err = t.scan("SELECT count(*) FROM ledger WHERE tenant_id = $1 AND kind = $2 AND id >= $3 AND id < $4",
		[]any{tn, kind, millisID(from), millisID(to)}, &n)
	return n, err
}

func (t *tx) MissionByCode(tenantID, code string) (string, error) {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return "", err
	}
	var id string
	found, err := t.scan("SELECT mission_id FROM mission_codes WHERE tenant_id = $1 AND code = $2", []any{tn, code}, &id)
	if err != nil {
		return "", err
	}
	if !found {
		if err := t.requireTenant(tn); err != nil {
			return "", err
		}
		return "", model.NotFound("mission code")
	}
	return id, nil
}

func (t *tx) PutMissionCode(tenantID, code, missionID string) error {
	tn, id, err := t.ids(tenantID, missionID, "mission")
	if err != nil {
		return err
	}
	if code == "" {
		return model.Invalid("code", "a mission code cannot be empty")
	}
	var owner string
	found, err := t.scan("SELECT mission_id FROM mission_codes WHERE tenant_id = $1 AND code = $2", []any{tn, code}, &owner)
	if err != nil {
		return err
	}
	if found {
		if owner != id {
			return model.Errorf(model.KindConflict, "mission code %s is taken", code)
		}
		return nil
	}
	return t.put(`INSERT INTO mission_codes (tenant_id, code, mission_id) SELECT $1, $2, $3`+ifTenant, tn, code, id)
}

func (t *tx) DeleteMissionCode(tenantID, code, missionID string) error {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return err
	}
	id, ok := uid(missionID)
	if code == "" || !ok {
		return nil
	}
	_, err = t.exec("DELETE FROM mission_codes WHERE tenant_id = $1 AND code = $2 AND mission_id = $3", tn, code, id)
	return err
}

func (t *tx) CodedMissions(tenantID string) ([]string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	var out []string
	err = t.each("SELECT mission_id FROM mission_codes WHERE tenant_id = $1 ORDER BY code", []any{tn},
		func(r pgx.Rows) (bool, error) {
			var id string
			err := r.Scan(&id)
			out = append(out, id)
			return true, err
		})
	return out, err
}

func (t *tx) PutSMSInbound(tenantID string, m *model.SMSInbound) error {
	tn, id, err := t.ids(tenantID, m.ID, "sms")
	if err != nil {
		return err
	}
	doc, err := jsonOf(m)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO sms_inbound (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

func (t *tx) SMSInbounds(tenantID string, p model.Page) ([]model.SMSInbound, string, error) {
	return newest[model.SMSInbound](t, "sms_inbound", tenantID, p)
}

func (t *tx) SyncBatch(tenantID, id string) (*model.Batch, error) {
	tn, bid, err := t.ids(tenantID, id, "sync batch")
	if err != nil {
		return nil, err
	}
	return getDoc[model.Batch](t, "sync batch", "SELECT doc FROM sync_batches WHERE tenant_id = $1 AND id = $2", tn, bid)
}

func (t *tx) PutSyncBatch(tenantID string, b *model.Batch) error {
	tn, id, err := t.ids(tenantID, b.ID, "sync batch")
	if err != nil {
		return err
	}
	doc, err := jsonOf(b)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO sync_batches (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

// usageShards is how many rows hold one usage counter: each transaction adds to one of
// them, so that concurrent transactions of a tenant seldom update the same row (a
// serialization failure under serializable isolation); UsageCounters sums them.
const usageShards = 16

// usageShard is the shard this transaction adds its usage to.
func (t *tx) usageShard() int16 { return int16(t.seed % usageShards) }

// AddUsage adds to a counter of a tenant known to exist in memory, written once per
// counter before the commit (flushUsage): a group of Batch calls (batch.go) adds its
// events to each counter in one statement. The first counter of a tenant not yet seen is
// written at once, for its answer (no such tenant).
func (t *tx) AddUsage(tenantID, day, metric string, n uint64) error {
	tn, err := t.canonTenant(tenantID)
	if err != nil {
		return err
	}
	if !t.known[tn] {
		return t.addUsage(usageKey{tn, day, metric}, n)
	}
	if t.usage == nil {
		t.usage = map[usageKey]uint64{}
	}
	t.usage[usageKey{tn, day, metric}] += n
	return nil
}

// usageKey names a usage counter.
type usageKey struct{ tenant, day, metric string }

func (t *tx) addUsage(k usageKey, n uint64) error {
	return t.put(`INSERT INTO usage_counters (tenant_id, day, metric, shard, n) SELECT $1, $2, $3, $5, $4::numeric`+ifTenant+`
		ON CONFLICT (tenant_id, day, metric, shard) DO UPDATE SET n = usage_counters.n + excluded.n`,
		k.tenant, k.day, k.metric, fmt.Sprint(n), t.usageShard())
}

// flushUsage writes the counters gathered by AddUsage, in the order of their keys, so
// that transactions updating the same rows lock them in the same order.
func (t *tx) flushUsage() error {
	keys := slices.SortedFunc(maps.Keys(t.usage), func(a, b usageKey) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.day, b.day), strings.Compare(a.metric, b.metric))
	})
	for _, k := range keys {
		if err := t.addUsage(k, t.usage[k]); err != nil {
			return err
		}
	}
	t.usage = nil
	return nil
}

func (t *tx) UsageCounters(tenantID, fromDay, toDay string) ([]model.UsageCounter, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return nil, err
	}
	if err := t.flushUsage(); err != nil { // the transaction reads what it added
		return nil, err
	}
	var out []model.UsageCounter
	err = t.each(`SELECT day, metric, sum(n)::text FROM usage_counters WHERE tenant_id = $1 AND day >= $2 AND day <= $3
		GROUP BY day, metric HAVING sum(n) > 0 ORDER BY day, metric`, []any{tn, fromDay, toDay}, func(r pgx.Rows) (bool, error) {
		var c model.UsageCounter
		var n string
		if err := r.Scan(&c.Day, &c.Metric, &n); err != nil {
			return false, err
		}
		if _, err := fmt.Sscan(n, &c.N); err != nil {
			return false, fmt.Errorf("postgres: usage counter %q: %w", n, err)
		}
		out = append(out, c)
		return true, nil
	})
	return out, err
}

func (t *tx) PutDispatchRequest(tenantID string, r *model.DispatchRequest) error {
	tn, id, err := t.ids(tenantID, r.ID, "dispatch request")
	if err != nil {
		return err
	}
	doc, err := jsonOf(r)
	if err != nil {
		return err
	}
	return t.put(`INSERT INTO dispatch_requests (tenant_id, id, doc) SELECT $1, $2, $3`+ifTenant+`
		ON CONFLICT (tenant_id, id) DO UPDATE SET doc = excluded.doc`, tn, id, doc)
}

func (t *tx) DispatchRequest(tenantID, id string) (*model.DispatchRequest, error) {
	tn, rid, err := t.ids(tenantID, id, "dispatch request")
	if err != nil {
		return nil, err
	}
	return getDoc[model.DispatchRequest](t, "dispatch request", "SELECT doc FROM dispatch_requests WHERE tenant_id = $1 AND id = $2", tn, rid)
}
