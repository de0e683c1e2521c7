package engine

import (
	"regexp"
	"slices"
)

// Team statuses.
const (
	TeamAvailable = "available"
	TeamOnMission = "on_mission"
	TeamOffDuty   = "off_duty"
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

// MemberInput describes a member of a new team.
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

// CreateTeam adds an available team to a tenant.
func (e *Engine) CreateTeam(tx Tx, tenantID string, in TeamInput) (*Team, error) {
	name, err := requireText("name", in.Name, 200)
	if err != nil {
		return nil, err
	}
	tenant, err := tx.Tenant(tenantID)
	if err != nil {
		return nil, err
	}
	if len(in.Verticals) == 0 {
		return nil, Invalid("verticals", "verticals must name at least one vertical")
	}
	for _, v := range in.Verticals {
		if !tenant.HasVertical(v) {
			return nil, Invalid("verticals", "vertical %q is not enabled for this tenant", v)
		}
	}
	for _, eq := range in.Equipment {
		if eq == "" || len(eq) > 64 {
			return nil, Invalid("equipment", "equipment names must have 1 to 64 characters")
		}
	}
	if in.ZoneCode != "" {
		if _, err := tx.Zone(tenantID, in.ZoneCode); IsKind(err, KindNotFound) {
			return nil, Invalid("zone_code", "zone %q does not exist", in.ZoneCode)
		} else if err != nil {
			return nil, err
		}
	}
	now := At(e.clock.Now())
	t := &Team{ID: NewID(), Name: name, Status: TeamAvailable, Verticals: slices.Clone(in.Verticals),
		Equipment: slices.Clone(in.Equipment), ZoneCode: in.ZoneCode, Members: []Member{},
		CreatedAt: now, UpdatedAt: now}
	if t.Equipment == nil {
		t.Equipment = []string{}
	}
	for _, m := range in.Members {
		mem, err := e.newMember(tx, tenantID, m)
		if err != nil {
			return nil, err
		}
		t.Members = append(t.Members, mem)
	}
	return t, tx.PutTeam(tenantID, t)
}

func (e *Engine) newMember(tx Tx, tenantID string, in MemberInput) (Member, error) {
	name, err := requireText("members.name", in.Name, 200)
	if err != nil {
		return Member{}, err
	}
	m := Member{ID: NewID(), Name: name, Phone: in.Phone}
	if in.Phone != "" && !phoneRE.MatchString(in.Phone) {
		return m, Invalid("members.phone", "phone must be in E.164 form (+ and 7 to 15 digits)")
	}
	if in.UserID != "" {
		if !ValidID(in.UserID) {
			return m, Invalid("members.user_id", "user_id must be a user's id")
		}
		if _, err := tx.UserAccount(tenantID, in.UserID); IsKind(err, KindNotFound) {
			return m, Invalid("members.user_id", "user %s does not exist", in.UserID)
		} else if err != nil {
			return m, err
		}
		m.UserID = in.UserID
	}
	if (in.Lat == nil) != (in.Lng == nil) {
		return m, Invalid("members.lat", "lat and lng go together")
	}
	if in.Lat != nil {
		if !ValidLatLng(*in.Lat, *in.Lng) {
			return m, Invalid("members.lat", "lat must be within -90..90 and lng within -180..180")
		}
		m.Lat, m.Lng = in.Lat, in.Lng
		m.LocationUpdatedAt = TimePtr(e.clock.Now())
	}
	return m, nil
}
