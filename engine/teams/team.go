package teams

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
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

// PhoneRE is the shape of a phone number: E.164 (model.PhoneRE).
var PhoneRE = model.PhoneRE

// CreateTeam adds an available team to p's tenant (POST /v1/teams; teams:manage).
// Inline members name their fields members.name, members.user_id, members.phone,
// members.lat and members.lng in validation errors.
func (e *Roster) CreateTeam(ctx context.Context, p model.Principal, in model.TeamInput, w *model.Write) (*model.Team, error) {
	if err := p.Require(model.PermTeamsManage); err != nil {
		return nil, err
	}
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Team, error) { return e.createTeam(tx, p.TenantID, in) })
}

// createTeam is CreateTeam within tx, for a tenant.
func (e *Roster) createTeam(tx model.Tx, tenantID string, in model.TeamInput) (*model.Team, error) {
	name, err := model.RequireText("name", in.Name, 200)
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
	if err := CheckZone(tx, tenantID, in.ZoneCode); err != nil {
		return nil, err
	}
	site, err := model.CheckSite(tx.Device, tenantID, in.SiteID)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	t := &model.Team{ID: model.NewID(), Name: name, Status: TeamAvailable, Verticals: verticals,
		Equipment: equipment, ZoneCode: in.ZoneCode, Members: []model.Member{}, SiteID: site,
		StatusSince: &now, CreatedAt: now, UpdatedAt: now}
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
	writes.Changed(tx, tenantID, model.DownTeam, t.ID)
	return t, e.publish(tx, tenantID, StreamUpdated, model.PermTeamsRead, t.ID, t)
}

// teamVerticals checks a team's verticals (at least one, each valid for the tenant) and
// drops repeats, keeping the order.
func teamVerticals(tenant *model.Tenant, vs []string) ([]string, error) {
	if len(vs) == 0 {
		return nil, model.Invalid("verticals", "verticals must name at least one vertical")
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !tenant.HasVertical(v) {
			return nil, model.Invalid("verticals", "vertical %s is not enabled for this tenant", model.Quote(v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// normalizeEquipment trims, lowercases and de-duplicates equipment names (keeping the
// first occurrence's place); each has 1 to 64 characters that model.CheckText accepts, at
// most 50 of them.
func normalizeEquipment(items []string) ([]string, error) {
	out := make([]string, 0, len(items))
	for _, it := range items {
		it = strings.ToLower(strings.TrimSpace(it))
		if it == "" || model.CheckLength("equipment", it, maxEquipmentChars) != nil {
			return nil, model.Invalid("equipment", "equipment names must have 1 to %d characters", maxEquipmentChars)
		}
		if err := model.CheckText("equipment", it); err != nil {
			return nil, err
		}
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	if len(out) > maxTeamEquipment {
		return nil, model.Invalid("equipment", "a team holds at most %d equipment items", maxTeamEquipment)
	}
	return out, nil
}

// checkTeamZone checks that a zone code, when given, names a zone of the tenant.
func CheckZone(tx model.Tx, tenantID, code string) error {
	if code == "" {
		return nil
	}
	if !model.ValidZoneCode(code) {
		return model.Invalid("zone_code", "zone %s does not exist", model.Quote(code))
	}
	if _, err := tx.Zone(tenantID, code); model.IsKind(err, model.KindNotFound) {
		return model.Invalid("zone_code", "zone %s does not exist", model.Quote(code))
	} else if err != nil {
		return err
	}
	return nil
}

// newMember validates a member for team t; prefix is put before the field names of
// validation errors ("members." for inline members, "" for POST /v1/teams/:id/members).
// A user may be a member of a team once.
func (e *Roster) newMember(tx model.Tx, tenantID string, t *model.Team, prefix string, in model.MemberInput) (model.Member, error) {
	name, err := model.RequireText(prefix+"name", in.Name, 200)
	if err != nil {
		return model.Member{}, err
	}
	m := model.Member{ID: model.NewID(), Name: name, Phone: strings.TrimSpace(in.Phone)}
	if m.Phone != "" && !PhoneRE.MatchString(m.Phone) {
		return m, model.Invalid(prefix+"phone", "phone must be in E.164 form (+ and 7 to 15 digits)")
	}
	if in.UserID != "" {
		if !model.ValidID(in.UserID) {
			return m, model.Invalid(prefix+"user_id", "user_id must be a user's id")
		}
		if _, err := tx.UserAccount(tenantID, in.UserID); model.IsKind(err, model.KindNotFound) {
			return m, model.Invalid(prefix+"user_id", "user %s does not exist", model.Quote(in.UserID))
		} else if err != nil {
			return m, err
		}
		if slices.ContainsFunc(t.Members, func(o model.Member) bool { return o.UserID == in.UserID }) {
			return m, model.Invalid(prefix+"user_id", "user %s is already a member of this team", model.Quote(in.UserID))
		}
		m.UserID = in.UserID
	}
	if in.Lat == nil && in.Lng != nil {
		return m, model.Invalid(prefix+"lat", "lat and lng go together: lat is missing")
	}
	if in.Lat != nil && in.Lng == nil {
		return m, model.Invalid(prefix+"lng", "lat and lng go together: lng is missing")
	}
	if in.Lat != nil {
		if err := CheckLatLng(prefix, *in.Lat, *in.Lng); err != nil {
			return m, err
		}
		m.Lat, m.Lng = model.PtrTo(*in.Lat), model.PtrTo(*in.Lng)
		m.LocationUpdatedAt = model.TimePtr(e.clock.Now())
	}
	return m, nil
}

// checkLatLng checks a position's ranges, naming the field that is out.
func CheckLatLng(prefix string, lat, lng float64) error {
	if !model.ValidLatLng(lat, 0) {
		return model.Invalid(prefix+"lat", "lat must be within -90..90")
	}
	if !model.ValidLatLng(0, lng) {
		return model.Invalid(prefix+"lng", "lng must be within -180..180")
	}
	return nil
}

// UpdateTeam changes a team of the principal's tenant (PATCH /v1/teams/:id). Every field
// is validated before the status is checked; a request that changes nothing leaves
// updated_at alone.
func (e *Roster) UpdateTeam(ctx context.Context, p model.Principal, id string, in model.TeamPatch, w *model.Write) (*model.Team, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Team, error) { return e.updateTeam(tx, p, id, in) })
}

// updateTeam is UpdateTeam within tx.
func (e *Roster) updateTeam(tx model.Tx, p model.Principal, id string, in model.TeamPatch) (*model.Team, error) {
	if err := p.Require(model.PermTeamsManage); err != nil {
		return nil, err
	}
	t, err := e.team(tx, p.TenantID, id)
	if err != nil {
		return nil, err
	}
	if in.Name != nil || in.Verticals != nil || in.Equipment != nil || in.ZoneCode != nil || in.SiteID != nil {
		// The roster is the owner's; the status is the site's, even on a copy.
		if err := model.CopyConflict("team "+t.ID, t.Origin); err != nil {
			return nil, err
		}
	}
	next := *t
	if in.SiteID != nil {
		if next.SiteID, err = model.CheckSite(tx.Device, p.TenantID, in.SiteID); err != nil {
			return nil, err
		}
	}
	if in.Name != nil {
		if next.Name, err = model.RequireText("name", *in.Name, 200); err != nil {
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
		if err := CheckZone(tx, p.TenantID, *in.ZoneCode); err != nil {
			return nil, err
		}
		next.ZoneCode = *in.ZoneCode
	}
	if in.Status != nil && *in.Status != t.Status && t.Origin == nil && t.SiteID != nil {
		// The status of a team routed to a site is the site's, reported up
		// (docs/decisions/0202-team-status-up.md).
		return nil, model.Errorf(model.KindConflict, "team %s is at site %s: its status is set there", t.ID, *t.SiteID)
	}
	if in.Status != nil {
		switch s := *in.Status; {
		case s != TeamAvailable && s != TeamOffDuty && s != TeamOnMission:
			return nil, model.Invalid("status", "status must be %s or %s", TeamAvailable, TeamOffDuty)
		case s == TeamOnMission:
			return nil, model.Errorf(model.KindTeamUnavailable, "a team becomes on_mission only by dispatch")
		case t.Status == TeamOnMission:
			return nil, model.Errorf(model.KindTeamUnavailable, "the team is on a mission; its status returns to available when the mission ends")
		default:
			next.Status = s
		}
	}
	owned := next.Name == t.Name && slices.Equal(next.Verticals, t.Verticals) && slices.Equal(next.Equipment, t.Equipment) &&
		next.ZoneCode == t.ZoneCode && model.EqualPtr(next.SiteID, t.SiteID)
	if owned && next.Status == t.Status {
		return t, nil
	}
	now := model.At(e.clock.Now())
	next.UpdatedAt = now
	if next.Status != t.Status {
		next.StatusSince = &now
	}
	if err := tx.PutTeam(p.TenantID, &next); err != nil {
		return nil, err
	}
	if !owned {
		writes.Changed(tx, p.TenantID, model.DownTeam, next.ID)
	}
	if next.Status != t.Status && next.Origin != nil {
		writes.Changed(tx, p.TenantID, model.ChangeTeamStatus, next.ID)
	}
	return &next, e.publish(tx, p.TenantID, StreamUpdated, model.PermTeamsRead, next.ID, &next)
}

// AddTeamMember adds a member to a team of the principal's tenant (POST
// /v1/teams/:id/members) and returns the team. Validation errors name the member's
// fields without a prefix (name, user_id, phone, lat, lng).
func (e *Roster) AddTeamMember(ctx context.Context, p model.Principal, teamID string, in model.MemberInput, w *model.Write) (*model.Team, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Team, error) { return e.addTeamMember(tx, p, teamID, in) })
}

// addTeamMember is AddTeamMember within tx.
func (e *Roster) addTeamMember(tx model.Tx, p model.Principal, teamID string, in model.MemberInput) (*model.Team, error) {
	if err := p.Require(model.PermTeamsManage); err != nil {
		return nil, err
	}
	t, err := e.team(tx, p.TenantID, teamID)
	if err != nil {
		return nil, err
	}
	if err := model.CopyConflict("team "+t.ID, t.Origin); err != nil {
		return nil, err
	}
	m, err := e.newMember(tx, p.TenantID, t, "", in)
	if err != nil {
		return nil, err
	}
	t.Members = append(t.Members, m)
	t.UpdatedAt = model.At(e.clock.Now())
	if err := tx.PutTeam(p.TenantID, t); err != nil {
		return nil, err
	}
	writes.Changed(tx, p.TenantID, model.DownTeam, t.ID)
	return t, e.publish(tx, p.TenantID, StreamUpdated, model.PermTeamsRead, t.ID, t)
}

// UpdateMemberLocation sets a member's position (PATCH
// /v1/teams/:id/members/:memberId/location) and returns the member. teams:manage may move
// any member; location:self only the member whose user_id is the principal's user (else
// forbidden). Positions only move forward in time: a recorded_at older than the stored
// location_updated_at changes nothing and answers the member as it is. The team's
// updated_at is left alone: a position has its own time.
func (e *Roster) UpdateMemberLocation(ctx context.Context, p model.Principal, teamID, memberID string, in model.LocationInput, w *model.Write) (*model.Member, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Member, error) { return e.updateMemberLocation(tx, p, teamID, memberID, in) })
}

// updateMemberLocation is UpdateMemberLocation within tx.
func (e *Roster) updateMemberLocation(tx model.Tx, p model.Principal, teamID, memberID string, in model.LocationInput) (*model.Member, error) {
	manage := p.Can(model.PermTeamsManage)
	if !manage && !p.Can(model.PermLocationSelf) {
		return nil, model.Errorf(model.KindForbidden, "this operation needs the %s or %s permission", model.PermTeamsManage, model.PermLocationSelf)
	}
	t, err := e.team(tx, p.TenantID, teamID)
	if err != nil {
		return nil, err
	}
	m := t.Member(memberID)
	if m == nil {
		return nil, model.NotFound("member")
	}
	if !manage && (p.UserID == "" || m.UserID != p.UserID) {
		return nil, model.Errorf(model.KindForbidden, "location:self updates only the member record of the calling user")
	}
	if in.Lat == nil {
		return nil, model.Invalid("lat", "lat is required")
	}
	if in.Lng == nil {
		return nil, model.Invalid("lng", "lng is required")
	}
	if err := CheckLatLng("", *in.Lat, *in.Lng); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	at := model.At(now)
	if in.RecordedAt != nil {
		if at, err = model.ParseTime(*in.RecordedAt); err != nil {
			return nil, model.Invalid("recorded_at", "recorded_at must be an RFC 3339 timestamp")
		}
		if at.Sub(now) > maxLocationLead {
			return nil, model.Invalid("recorded_at", "recorded_at is more than %s in the future", maxLocationLead)
		}
	}
	if m.LocationUpdatedAt != nil && at.Before(m.LocationUpdatedAt.Time) {
		return m, nil
	}
	m.Lat, m.Lng, m.LocationUpdatedAt = model.PtrTo(*in.Lat), model.PtrTo(*in.Lng), &at
	if err := tx.PutTeam(p.TenantID, t); err != nil {
		return nil, err
	}
	return m, e.publish(tx, p.TenantID, StreamUpdated, model.PermTeamsRead, t.ID, t)
}

// team reads a team of a tenant; a malformed id is not found.
func (e *Roster) team(tx model.Tx, tenantID, id string) (*model.Team, error) {
	if !model.ValidID(id) {
		return nil, model.NotFound("team")
	}
	t, err := tx.Team(tenantID, id)
	if err != nil {
		return nil, err
	}
	t.WithLists()
	return t, nil
}

// Team returns one team of the principal's tenant (GET /v1/teams/:id).
func (e *Roster) Team(ctx context.Context, p model.Principal, id string) (*model.Team, error) {
	if err := p.Require(model.PermTeamsRead); err != nil {
		return nil, err
	}
	var t *model.Team
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = e.team(tx, p.TenantID, id)
		return err
	})
	return t, err
}

// Teams lists a page of the principal's tenant's teams, newest first, with their members
// and positions (GET /v1/teams); the string is the next cursor ("" at the end). A zero
// Limit reads them all.
func (e *Roster) Teams(ctx context.Context, p model.Principal, f model.TeamFilter, page model.Page) ([]model.Team, string, error) {
	if err := p.Require(model.PermTeamsRead); err != nil {
		return nil, "", err
	}
	if f.Status != "" && f.Status != TeamAvailable && f.Status != TeamOnMission && f.Status != TeamOffDuty {
		return nil, "", model.Invalid("status", "status must be %s, %s or %s", TeamAvailable, TeamOnMission, TeamOffDuty)
	}
	var all []model.Team
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		all, err = tx.Teams(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, next, err := model.PageList(all, model.ByIDNewestFirst(func(t *model.Team) string { return t.ID }), func(t *model.Team) bool {
		return (f.Status == "" || t.Status == f.Status) && (f.ZoneCode == "" || t.ZoneCode == f.ZoneCode) &&
			(f.Vertical == "" || slices.Contains(t.Verticals, f.Vertical))
	}, page)
	for i := range out {
		out[i].WithLists()
	}
	return out, next, err
}
