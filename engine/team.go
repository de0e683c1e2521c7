package engine

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Team statuses.
const (
	TeamAvailable = "available"
	TeamOnMission = "on_mission"
	TeamOffDuty   = "off_duty"
)

// Limits of a team.
const (
	maxTeamEquipment  = 50
	maxEquipmentChars = 64
	// maxLocationLead is how far in the future a location's recorded_at may be: device
	// clocks drift.
	maxLocationLead = 2 * time.Minute
)

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
	CreatedAt Time     `json:"created_at"`
	UpdatedAt Time     `json:"updated_at"`
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
}

var phoneRE = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// CreateTeam adds an available team to a tenant. Inline members name their fields
// members.name, members.user_id, members.phone, members.lat and members.lng in
// validation errors.
func (e *Engine) CreateTeam(tx Tx, tenantID string, in TeamInput) (*Team, error) {
	name, err := requireText("name", in.Name, 200)
	if err != nil {
		return nil, err
	}
	tenant, err := tx.Tenant(tenantID)
	if err != nil {
		return nil, err
	}
	verticals, err := teamVerticals(tenant, in.Verticals)
	if err != nil {
		return nil, err
	}
	equipment, err := normalizeEquipment(in.Equipment)
	if err != nil {
		return nil, err
	}
	if err := checkTeamZone(tx, tenantID, in.ZoneCode); err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	t := &Team{ID: NewID(), Name: name, Status: TeamAvailable, Verticals: verticals,
		Equipment: equipment, ZoneCode: in.ZoneCode, Members: []Member{},
		CreatedAt: now, UpdatedAt: now}
	for _, m := range in.Members {
		mem, err := e.newMember(tx, tenantID, t, "members.", m)
		if err != nil {
			return nil, err
		}
		t.Members = append(t.Members, mem)
	}
	if err := tx.PutTeam(tenantID, t); err != nil {
		return nil, err
	}
	return t, e.publish(tx, tenantID, StreamTeamUpdated, PermTeamsRead, t.ID, t)
}

// CreateTeamAs is CreateTeam for a principal, which needs teams:manage.
func (e *Engine) CreateTeamAs(tx Tx, p Principal, in TeamInput) (*Team, error) {
	if err := p.Require(PermTeamsManage); err != nil {
		return nil, err
	}
	return e.CreateTeam(tx, p.TenantID, in)
}

// teamVerticals checks a team's verticals (at least one, each valid for the tenant) and
// drops repeats, keeping the order.
func teamVerticals(tenant *Tenant, vs []string) ([]string, error) {
	if len(vs) == 0 {
		return nil, Invalid("verticals", "verticals must name at least one vertical")
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !tenant.HasVertical(v) {
			return nil, Invalid("verticals", "vertical %s is not enabled for this tenant", Quote(v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// normalizeEquipment trims, lowercases and de-duplicates equipment names (keeping the
// first occurrence's place); each has 1 to 64 characters, at most 50 of them.
func normalizeEquipment(items []string) ([]string, error) {
	out := make([]string, 0, len(items))
	for _, it := range items {
		it = strings.ToLower(strings.TrimSpace(it))
		if it == "" || checkLength("equipment", it, maxEquipmentChars) != nil {
			return nil, Invalid("equipment", "equipment names must have 1 to %d characters", maxEquipmentChars)
		}
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	if len(out) > maxTeamEquipment {
		return nil, Invalid("equipment", "a team holds at most %d equipment items", maxTeamEquipment)
	}
	return out, nil
}

// checkTeamZone checks that a zone code, when given, names a zone of the tenant.
func checkTeamZone(tx Tx, tenantID, code string) error {
	if code == "" {
		return nil
	}
	if !ValidZoneCode(code) {
		return Invalid("zone_code", "zone %s does not exist", Quote(code))
	}
	if _, err := tx.Zone(tenantID, code); IsKind(err, KindNotFound) {
		return Invalid("zone_code", "zone %s does not exist", Quote(code))
	} else if err != nil {
		return err
	}
	return nil
}

// newMember validates a member for team t; prefix is put before the field names of
// validation errors ("members." for inline members, "" for POST /v1/teams/:id/members).
// A user may be a member of a team once.
func (e *Engine) newMember(tx Tx, tenantID string, t *Team, prefix string, in MemberInput) (Member, error) {
	name, err := requireText(prefix+"name", in.Name, 200)
	if err != nil {
		return Member{}, err
	}
	m := Member{ID: NewID(), Name: name, Phone: strings.TrimSpace(in.Phone)}
	if m.Phone != "" && !phoneRE.MatchString(m.Phone) {
		return m, Invalid(prefix+"phone", "phone must be in E.164 form (+ and 7 to 15 digits)")
	}
	if in.UserID != "" {
		if !ValidID(in.UserID) {
			return m, Invalid(prefix+"user_id", "user_id must be a user's id")
		}
		if _, err := tx.UserAccount(tenantID, in.UserID); IsKind(err, KindNotFound) {
			return m, Invalid(prefix+"user_id", "user %s does not exist", Quote(in.UserID))
		} else if err != nil {
			return m, err
		}
		if slices.ContainsFunc(t.Members, func(o Member) bool { return o.UserID == in.UserID }) {
			return m, Invalid(prefix+"user_id", "user %s is already a member of this team", Quote(in.UserID))
		}
		m.UserID = in.UserID
	}
	if in.Lat == nil && in.Lng != nil {
		return m, Invalid(prefix+"lat", "lat and lng go together: lat is missing")
	}
	if in.Lat != nil && in.Lng == nil {
		return m, Invalid(prefix+"lng", "lat and lng go together: lng is missing")
	}
	if in.Lat != nil {
		if err := checkLatLng(prefix, *in.Lat, *in.Lng); err != nil {
			return m, err
		}
		m.Lat, m.Lng = ptrTo(*in.Lat), ptrTo(*in.Lng)
		m.LocationUpdatedAt = TimePtr(e.clock.Now())
	}
	return m, nil
}

// checkLatLng checks a position's ranges, naming the field that is out.
func checkLatLng(prefix string, lat, lng float64) error {
	if !ValidLatLng(lat, 0) {
		return Invalid(prefix+"lat", "lat must be within -90..90")
	}
	if !ValidLatLng(0, lng) {
		return Invalid(prefix+"lng", "lng must be within -180..180")
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// TeamPatch is the body of PATCH /v1/teams/:id; nil fields stay as they are. ZoneCode ""
// clears the zone. Status moves only between available and off_duty: on_mission belongs
// to dispatch.
type TeamPatch struct {
	Name      *string   `json:"name"`
	Verticals *[]string `json:"verticals"`
	Equipment *[]string `json:"equipment"`
	ZoneCode  *string   `json:"zone_code"`
	Status    *string   `json:"status"`
}

// UpdateTeam changes a team of the principal's tenant (PATCH /v1/teams/:id). Every field
// is validated before the status is checked; a request that changes nothing leaves
// updated_at alone.
func (e *Engine) UpdateTeam(tx Tx, p Principal, id string, in TeamPatch) (*Team, error) {
	if err := p.Require(PermTeamsManage); err != nil {
		return nil, err
	}
	t, err := e.team(tx, p.TenantID, id)
	if err != nil {
		return nil, err
	}
	next := *t
	if in.Name != nil {
		if next.Name, err = requireText("name", *in.Name, 200); err != nil {
			return nil, err
		}
	}
	if in.Verticals != nil {
		tenant, err := tx.Tenant(p.TenantID)
		if err != nil {
			return nil, err
		}
		if next.Verticals, err = teamVerticals(tenant, *in.Verticals); err != nil {
			return nil, err
		}
	}
	if in.Equipment != nil {
		if next.Equipment, err = normalizeEquipment(*in.Equipment); err != nil {
			return nil, err
		}
	}
	if in.ZoneCode != nil {
		if err := checkTeamZone(tx, p.TenantID, *in.ZoneCode); err != nil {
			return nil, err
		}
		next.ZoneCode = *in.ZoneCode
	}
	if in.Status != nil {
		switch s := *in.Status; {
		case s != TeamAvailable && s != TeamOffDuty && s != TeamOnMission:
			return nil, Invalid("status", "status must be %s or %s", TeamAvailable, TeamOffDuty)
		case s == TeamOnMission:
			return nil, Errorf(KindTeamUnavailable, "a team becomes on_mission only by dispatch")
		case t.Status == TeamOnMission:
			return nil, Errorf(KindTeamUnavailable, "the team is on a mission; its status returns to available when the mission ends")
		default:
			next.Status = s
		}
	}
	if next.Name == t.Name && slices.Equal(next.Verticals, t.Verticals) && slices.Equal(next.Equipment, t.Equipment) &&
		next.ZoneCode == t.ZoneCode && next.Status == t.Status {
		return t, nil
	}
	next.UpdatedAt = At(e.clock.Now())
	if err := tx.PutTeam(p.TenantID, &next); err != nil {
		return nil, err
	}
	return &next, e.publish(tx, p.TenantID, StreamTeamUpdated, PermTeamsRead, next.ID, &next)
}

// AddTeamMember adds a member to a team of the principal's tenant (POST
// /v1/teams/:id/members) and returns the team. Validation errors name the member's
// fields without a prefix (name, user_id, phone, lat, lng).
func (e *Engine) AddTeamMember(tx Tx, p Principal, teamID string, in MemberInput) (*Team, error) {
	if err := p.Require(PermTeamsManage); err != nil {
		return nil, err
	}
	t, err := e.team(tx, p.TenantID, teamID)
	if err != nil {
		return nil, err
	}
	m, err := e.newMember(tx, p.TenantID, t, "", in)
	if err != nil {
		return nil, err
	}
	t.Members = append(t.Members, m)
	t.UpdatedAt = At(e.clock.Now())
	if err := tx.PutTeam(p.TenantID, t); err != nil {
		return nil, err
	}
	return t, e.publish(tx, p.TenantID, StreamTeamUpdated, PermTeamsRead, t.ID, t)
}

// LocationInput is the body of PATCH /v1/teams/:id/members/:memberId/location.
// RecordedAt is an RFC 3339 timestamp; it defaults to now.
type LocationInput struct {
	Lat        *float64 `json:"lat"`
	Lng        *float64 `json:"lng"`
	RecordedAt *string  `json:"recorded_at"`
}

// UpdateMemberLocation sets a member's position (PATCH
// /v1/teams/:id/members/:memberId/location) and returns the member. teams:manage may move
// any member; location:self only the member whose user_id is the principal's user (else
// forbidden). Positions only move forward in time: a recorded_at older than the stored
// location_updated_at changes nothing and answers the member as it is. The team's
// updated_at is left alone: a position has its own time.
func (e *Engine) UpdateMemberLocation(tx Tx, p Principal, teamID, memberID string, in LocationInput) (*Member, error) {
	manage := p.Can(PermTeamsManage)
	if !manage && !p.Can(PermLocationSelf) {
		return nil, Errorf(KindForbidden, "this operation needs the %s or %s permission", PermTeamsManage, PermLocationSelf)
	}
	t, err := e.team(tx, p.TenantID, teamID)
	if err != nil {
		return nil, err
	}
	m := t.Member(memberID)
	if m == nil {
		return nil, NotFound("member")
	}
	if !manage && (p.UserID == "" || m.UserID != p.UserID) {
		return nil, Errorf(KindForbidden, "location:self updates only the member record of the calling user")
	}
	if in.Lat == nil {
		return nil, Invalid("lat", "lat is required")
	}
	if in.Lng == nil {
		return nil, Invalid("lng", "lng is required")
	}
	if err := checkLatLng("", *in.Lat, *in.Lng); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	at := At(now)
	if in.RecordedAt != nil {
		if at, err = ParseTime(*in.RecordedAt); err != nil {
			return nil, Invalid("recorded_at", "recorded_at must be an RFC 3339 timestamp")
		}
		if at.Sub(now) > maxLocationLead {
			return nil, Invalid("recorded_at", "recorded_at is more than %s in the future", maxLocationLead)
		}
	}
	if m.LocationUpdatedAt != nil && at.Before(m.LocationUpdatedAt.Time) {
		return m, nil
	}
	m.Lat, m.Lng, m.LocationUpdatedAt = ptrTo(*in.Lat), ptrTo(*in.Lng), &at
	if err := tx.PutTeam(p.TenantID, t); err != nil {
		return nil, err
	}
	return m, e.publish(tx, p.TenantID, StreamTeamUpdated, PermTeamsRead, t.ID, t)
}

// team reads a team of a tenant; a malformed id is not found.
func (e *Engine) team(tx Tx, tenantID, id string) (*Team, error) {
	if !ValidID(id) {
		return nil, NotFound("team")
	}
	t, err := tx.Team(tenantID, id)
	if err != nil {
		return nil, err
	}
	t.withLists()
	return t, nil
}

// withLists makes the lists of a team read from the store empty rather than null.
func (t *Team) withLists() {
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

// Team returns one team of the principal's tenant (GET /v1/teams/:id).
func (e *Engine) Team(ctx context.Context, p Principal, id string) (*Team, error) {
	if err := p.Require(PermTeamsRead); err != nil {
		return nil, err
	}
	var t *Team
	err := e.store.View(ctx, func(tx Tx) (err error) {
		t, err = e.team(tx, p.TenantID, id)
		return err
	})
	return t, err
}

// TeamFilter narrows GET /v1/teams; empty fields match every team.
type TeamFilter struct {
	Status   string
	ZoneCode string
	Vertical string
}

// Teams lists a page of the principal's tenant's teams, newest first, with their members
// and positions (GET /v1/teams); the string is the next cursor ("" at the end). A zero
// Limit reads them all.
func (e *Engine) Teams(ctx context.Context, p Principal, f TeamFilter, page Page) ([]Team, string, error) {
	if err := p.Require(PermTeamsRead); err != nil {
		return nil, "", err
	}
	if f.Status != "" && f.Status != TeamAvailable && f.Status != TeamOnMission && f.Status != TeamOffDuty {
		return nil, "", Invalid("status", "status must be %s, %s or %s", TeamAvailable, TeamOnMission, TeamOffDuty)
	}
	var all []Team
	err := e.store.View(ctx, func(tx Tx) (err error) {
		all, err = tx.Teams(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next, err := pageList(all, byIDNewestFirst(func(t *Team) string { return t.ID }), func(t *Team) bool {
		return (f.Status == "" || t.Status == f.Status) && (f.ZoneCode == "" || t.ZoneCode == f.ZoneCode) &&
			(f.Vertical == "" || slices.Contains(t.Verticals, f.Vertical))
	}, page)
	for i := range out {
		out[i].withLists()
	}
	return out, next, err
}
