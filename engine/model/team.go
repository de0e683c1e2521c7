package model

import "slices"

// Member is a person of a field team, with the last position it reported.
type Member struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	UserID            string   `json:"user_id,omitempty"`
	Phone             string   `json:"phone,omitempty"`
	Lat               *float64 `json:"lat"`
	Lng               *float64 `json:"lng"`
	LocationUpdatedAt *Time    `json:"location_updated_at"`
}

// Team is a field team that missions are dispatched to.
type Team struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Status    string   `json:"status"`
	Verticals []string `json:"verticals"`
	Equipment []string `json:"equipment"`
	ZoneCode  string   `json:"zone_code,omitempty"`
	Members   []Member `json:"members"`
	// SiteID routes a record of a central node to one site: the central device id of the
	// site's node (docs/decisions/0196-downstream-log.md); nil sends it to no site.
	SiteID *string `json:"site_id,omitempty"`
	// Origin is the node that owns the record when this is a copy of it (received from a
	// central node): its owned fields are read-only here; OriginVersion is the owner's
	// version of the copy (docs/decisions/0195-record-owners.md).
	Origin        *string `json:"origin,omitempty"`
	OriginVersion int64   `json:"origin_version,omitempty"`
	// RemovedAt, on a site's copy, is when the central node took the team from the site
	// while it was on a mission here: the copy goes when the mission ends
	// (docs/decisions/0203-removals-down.md).
	RemovedAt *Time `json:"removed_at,omitempty"`
	// StatusSince is when the team entered its status (the board's time in state;
	// docs/decisions/0261-team-status-since.md); nil on a team whose status has not
	// changed since the node first kept it.
	StatusSince *Time `json:"status_since"`
	CreatedAt   Time  `json:"created_at"`
	UpdatedAt   Time  `json:"updated_at"`
}

// SetStatus moves a team to status at now, and notes when it entered it.
func (t *Team) SetStatus(status string, now Time) {
	if t.Status != status {
		t.StatusSince = &now
	}
	t.Status, t.UpdatedAt = status, now
}

// CloneTeams returns deep copies of the teams src points to, in order, its nil entries
// left zero. The copies' slices are cut from a few shared arrays at full capacity (an
// append to one reallocates it), so 1,000 teams cost a handful of allocations rather
// than five each (Team.Clone). A store that lists teams from a cache copies them with it.
func CloneTeams(src []*Team) []Team {
	var nstr, nmem, nfloat, ntime int
	for _, t := range src {
		if t == nil {
			continue
		}
		nstr += len(t.Verticals) + len(t.Equipment)
		nmem += len(t.Members)
		for i := range t.Members {
			m := &t.Members[i]
			if m.Lat != nil {
				nfloat++
			}
			if m.Lng != nil {
				nfloat++
			}
			if m.LocationUpdatedAt != nil {
				ntime++
			}
		}
	}
	out := make([]Team, len(src))
	strs := make([]string, 0, nstr)
	mems := make([]Member, 0, nmem)
	floats := make([]float64, 0, nfloat)
	times := make([]Time, 0, ntime)
	cut := func(s []string) []string {
		if s == nil {
			return nil
		}
		if len(s) == 0 {
			return []string{}
		}
		n := len(strs)
		strs = append(strs, s...)
		return strs[n:len(strs):len(strs)]
	}
	for i, t := range src {
		if t == nil {
			continue
		}
		c := &out[i]
		*c = *t
		c.Verticals = cut(t.Verticals)
		c.Equipment = cut(t.Equipment)
		switch {
		case t.Members == nil:
		case len(t.Members) == 0:
			c.Members = []Member{}
		default:
			n := len(mems)
			mems = append(mems, t.Members...)
			c.Members = mems[n:len(mems):len(mems)]
			for j := range c.Members {
				m := &c.Members[j]
				if m.Lat != nil {
					floats = append(floats, *m.Lat)
					m.Lat = &floats[len(floats)-1]
				}
				if m.Lng != nil {
					floats = append(floats, *m.Lng)
					m.Lng = &floats[len(floats)-1]
				}
				if m.LocationUpdatedAt != nil {
					times = append(times, *m.LocationUpdatedAt)
					m.LocationUpdatedAt = &times[len(times)-1]
				}
			}
		}
	}
	return out
}

// Clone returns a deep copy of t: nothing in it is shared with t. The members'
// positions share one backing array per team (a copy costs five allocations, not three
// per member).
func (t *Team) Clone() Team {
	c := *t
	c.Verticals = slices.Clone(t.Verticals)
	c.Equipment = slices.Clone(t.Equipment)
	if t.Members == nil {
		return c
	}
	c.Members = slices.Clone(t.Members)
	var floats []float64
	var times []Time
	for i := range c.Members {
		m := &c.Members[i]
		if m.Lat != nil {
			if floats == nil {
				floats = make([]float64, 0, 2*len(c.Members))
			}
			floats = append(floats, *m.Lat)
			m.Lat = &floats[len(floats)-1]
		}
		if m.Lng != nil {
			if floats == nil {
				floats = make([]float64, 0, 2*len(c.Members))
			}
			floats = append(floats, *m.Lng)
			m.Lng = &floats[len(floats)-1]
		}
		if m.LocationUpdatedAt != nil {
			if times == nil {
				times = make([]Time, 0, len(c.Members))
			}
			times = append(times, *m.LocationUpdatedAt)
			m.LocationUpdatedAt = &times[len(times)-1]
		}
	}
	return c
}

// Member returns the member of the team with the given id, or nil.
func (t *Team) Member(id string) *Member {
	for i := range t.Members {
		if t.Members[i].ID == id {
			return &t.Members[i]
		}
	}
	return nil
}

// MemberInput describes a member of a new team (inline in POST /v1/teams, or the body of
// POST /v1/teams/:id/members).
type MemberInput struct {
	Name   string   `json:"name"`
	UserID string   `json:"user_id"`
	Phone  string   `json:"phone"`
	Lat    *float64 `json:"lat"`
	Lng    *float64 `json:"lng"`
}

// TeamInput is the body of POST /v1/teams.
type TeamInput struct {
	Name      string        `json:"name"`
	Verticals []string      `json:"verticals"`
	Equipment []string      `json:"equipment"`
	ZoneCode  string        `json:"zone_code"`
	Members   []MemberInput `json:"members"`
	SiteID    *string       `json:"site_id"`
}

func PtrTo[T any](v T) *T { return &v }

// TeamPatch is the body of PATCH /v1/teams/:id; nil fields stay as they are. ZoneCode ""
// clears the zone. Status moves only between available and off_duty: on_mission belongs
// to dispatch.
type TeamPatch struct {
	Name      *string   `json:"name"`
	Verticals *[]string `json:"verticals"`
	Equipment *[]string `json:"equipment"`
	ZoneCode  *string   `json:"zone_code"`
	Status    *string   `json:"status"`
	// SiteID "" clears the site.
	SiteID *string `json:"site_id"`
}

// LocationInput is the body of PATCH /v1/teams/:id/members/:memberId/location.
// RecordedAt is an RFC 3339 timestamp; it defaults to now.
type LocationInput struct {
	Lat        *float64 `json:"lat"`
	Lng        *float64 `json:"lng"`
	RecordedAt *string  `json:"recorded_at"`
}

// withLists makes the lists of a team read from the store empty rather than null.
func (t *Team) WithLists() {
	if t.Verticals == nil {
		t.Verticals = []string{}
	}
	if t.Equipment == nil {
		t.Equipment = []string{}
	}
	if t.Members == nil {
		t.Members = []Member{}
	}
}

// TeamFilter narrows GET /v1/teams; empty fields match every team.
type TeamFilter struct {
	Status   string
	ZoneCode string
	Vertical string
}
