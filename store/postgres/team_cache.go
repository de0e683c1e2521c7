package postgres

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// teamCache keeps each team decoded next to the row version it was decoded from: the
// row's xmin, the transaction that wrote that version. Listing a tenant's teams (the
// dispatch score, auto-dispatch, a field operator's own teams) reads every row; having
// PostgreSQL render 1,000 jsonb documents and decoding them cost ~11 ms a call, while
// reading their ids and xmins costs a fraction of that. Only the rows whose xmin differs
// from the cached one are fetched and decoded again. The xmins are read in the
// transaction, so a team written by another process is seen, and the read takes part
// in serializable isolation as the read of the documents
// did (docs/decisions/0108-postgres-team-cache.md).
type teamCache struct {
	mu sync.Mutex
	m  map[teamKey]*cachedTeam
}

type teamKey struct {
	tenant string
	id     [16]byte
}

type cachedTeam struct {
	xmin uint32
	at   time.Time  // when it was read from its row
	team model.Team // private: callers get clones
}

// maxCachedTeams bounds the cache; past it, it starts again empty.
const maxCachedTeams = 100_000

// teamMaxAge bounds how long a cached team is trusted: an xmin is 32 bits and comes
// round again after 2^32 transactions, more than PostgreSQL runs in an hour, so a row
// rewritten by a transaction with the cached xid cannot pass for the cached version.
var teamMaxAge = time.Hour

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
	// Unordered: PostgreSQL orders uuids by their bytes, and so does the sort below,
	// cheaper here than in the server.
	err := t.each("SELECT id, xmin FROM teams WHERE tenant_id = $1", []any{tn},
		func(r pgx.Rows) (bool, error) {
			var w row
			// The binary forms, read in place: Scan costs two allocations a row.
			v, f := r.RawValues(), r.FieldDescriptions()
			if len(v) == 2 && len(v[0]) == 16 && len(v[1]) == 4 &&
				f[0].Format == pgx.BinaryFormatCode && f[1].Format == pgx.BinaryFormatCode {
				w.id, w.xmin = [16]byte(v[0]), binary.BigEndian.Uint32(v[1])
			} else {
				var id [16]byte // escapes: only this path pays for it
				var xmin uint32
				if err := r.Scan(&id, &xmin); err != nil {
					return false, err
				}
				w.id, w.xmin = id, xmin
			}
			rows = append(rows, w)
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b row) int { return bytes.Compare(a.id[:], b.id[:]) })
	c := &t.db.teams
	now := time.Now()
	hits := make([]*model.Team, len(rows))
	// pgtype.UUID, not [16]byte: its array type is known to pgx in every query mode
	// (default_query_exec_mode=exec sends uuid[] as text).
	var stale []pgtype.UUID
	var at map[[16]byte]int // id → index in the answer, of the stale rows
	c.mu.Lock()
	for i, w := range rows {
		if hit := c.m[teamKey{tn, w.id}]; hit != nil && hit.xmin == w.xmin && now.Sub(hit.at) < teamMaxAge {
			hits[i] = &hit.team
			continue
		}
		if at == nil {
			at = make(map[[16]byte]int)
		}
		at[w.id] = i
		stale = append(stale, pgtype.UUID{Bytes: w.id, Valid: true})
	}
	c.mu.Unlock()
	// A cached team is never changed, only replaced: it is copied outside the lock.
	out := model.CloneTeams(hits)
	if len(stale) == 0 {
		return out, nil
	}
	fresh := make(map[teamKey]*cachedTeam, len(stale))
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
			fresh[teamKey{tn, id}] = &cachedTeam{xmin: xmin, at: now, team: tm.Clone()}
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
		c.m = make(map[teamKey]*cachedTeam, len(fresh))
	}
	for k, v := range fresh {
		c.m[k] = v
	}
	c.mu.Unlock()
	return out, nil
}
