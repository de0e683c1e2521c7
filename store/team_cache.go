package store

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// teamCache keeps the decoded form of each team record next to the bytes it was decoded
// from. Listing a tenant's teams (dispatch score, auto-dispatch, a field operator's own
// teams) reads every record; decoding 1,000 of them with encoding/json cost ~5 ms, while
// comparing their bytes and copying the decoded teams costs a fraction of that. A record
// is decoded again only when its bytes changed, so the cache can never serve a stale team:
// the bytes read in the transaction are the truth.
type teamCache struct {
	mu sync.Mutex
	m  map[[32]byte]cachedTeam // tenant id | team id → record
}

type cachedTeam struct {
	raw  []byte
	team *model.Team // never changed once cached, only replaced: callers get copies
}

// maxCachedTeams bounds the cache; past it, it starts again empty.
const maxCachedTeams = 100_000

// decode returns the team stored as raw under tenant key tk and team key k: the cached
// one, which the caller must not change (model.CloneTeams copies a listing of them).
func (c *teamCache) decode(tk, k, raw []byte) (*model.Team, error) {
	var key [32]byte
	copy(key[:16], tk)
	copy(key[16:], k)
	c.mu.Lock()
	hit, ok := c.m[key]
	c.mu.Unlock()
	if ok && bytes.Equal(hit.raw, raw) {
		return hit.team, nil
	}
	tm := new(model.Team)
	if err := json.Unmarshal(raw, tm); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTeams {
		c.m = make(map[[32]byte]cachedTeam)
	}
	c.m[key] = cachedTeam{raw: bytes.Clone(raw), team: tm}
	c.mu.Unlock()
	return tm, nil
}
