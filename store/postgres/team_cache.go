package postgres

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// teamCache keeps each team decoded next to the row version it was decoded from: the
// row's xmin, the transaction that wrote that version. Listing a tenant's teams (the
// dispatch score, auto-dispatch, a field operator's own teams) reads every row; having
// PostgreSQL render 1,000 jsonb documents and decoding them cost ~11 ms a call, while
// reading their ids and xmins costs a fraction of that. Only the rows whose xmin differs
// from the cached one are fetched and decoded again. The xmins are read in the
// transaction, so a team written by another process is seen, and the read takes part
// in serializable isolation as the read of the documents did (docs/decisions.md, "Team
// reads on PostgreSQL are cached by row version").
type teamCache struct {
	mu sync.Mutex
	m  map[teamKey]cachedTeam
}

type teamKey struct {
	tenant string
	id     [16]byte
}

type cachedTeam struct {
	xmin uint32
	team model.Team // private: callers get clones
}

// maxCachedTeams bounds the cache; past it, it starts again empty.
const maxCachedTeams = 100_000

// teams lists tenant tn's teams by id, from the cache where a row's version is the one
// cached. A transaction that wrote a team reads the documents themselves: its own rows
// carry its xmin before they are committed, and a second write in it keeps that xmin.
func (t *tx) teams(tn string) ([]model.Team, error) {
	if t.wroteTeams {
		return docs[model.Team](t, "SELECT doc FROM teams WHERE tenant_id = $1 ORDER BY id", tn)
	}
	type row struct {
		id   [16]byte
		xmin uint32
	}
	var rows []row
	err := t.each("SELECT id, xmin FROM teams WHERE tenant_id = $1 ORDER BY id", []any{tn},
		func(r pgx.Rows) (bool, error) {
			var w row
			if err := r.Scan(&w.id, &w.xmin); err != nil {
				return false, err
			}
			rows = append(rows, w)
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	c := &t.db.teams
	out := make([]model.Team, len(rows))
	var stale [][16]byte
	var at map[[16]byte]int // id → index in out, of the stale rows
	c.mu.Lock()
	for i, w := range rows {
		hit, ok := c.m[teamKey{tn, w.id}]
		if ok && hit.xmin == w.xmin {
			out[i] = hit.team.Clone()
			continue
		}
		if at == nil {
			at = make(map[[16]byte]int)
		}
		at[w.id] = i
		stale = append(stale, w.id)
	}
	c.mu.Unlock()
	if len(stale) == 0 {
		return out, nil
	}
	fresh := make(map[teamKey]cachedTeam, len(stale))
	err = t.each("SELECT id, xmin, doc FROM teams WHERE tenant_id = $1 AND id = ANY($2::uuid[])",
		[]any{tn, stale}, func(r pgx.Rows) (bool, error) {
			var id [16]byte
			var xmin uint32
			var raw []byte
			if err := r.Scan(&id, &xmin, &raw); err != nil {
				return false, err
			}
			i, ok := at[id]
			if !ok {
				return true, nil
			}
			var tm model.Team
			if err := json.Unmarshal(raw, &tm); err != nil {
				return false, fmt.Errorf("postgres: decoding a record: %w", err)
			}
			fresh[teamKey{tn, id}] = cachedTeam{xmin: xmin, team: tm.Clone()}
			out[i] = tm
			delete(at, id)
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	if len(at) > 0 { // one snapshot: cannot happen
		return nil, fmt.Errorf("postgres: %d teams vanished within a transaction", len(at))
	}
	c.mu.Lock()
	if c.m == nil || len(c.m)+len(fresh) > maxCachedTeams {
		c.m = make(map[teamKey]cachedTeam, len(fresh))
	}
	for k, v := range fresh {
		c.m[k] = v
	}
	c.mu.Unlock()
	return out, nil
}
