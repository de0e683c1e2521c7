package sms

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
	"github.com/fieldrelay/fieldrelay/engine/teams"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Limits of an inbound SMS as recorded.
const (
	maxInboundFrom = 64
	// maxInboundBody is ten concatenated SMS: a reply is a few words, anything longer
	// is kept cut in the log and refused.
	maxInboundBody = 1600
)

// Outcomes of an inbound SMS.
const (
	SMSOutcomeApplied     = "applied"      // the mission moved
	SMSOutcomeInvalid     = "invalid"      // from or body malformed: 400 validation_error
	SMSOutcomeUnknownCode = "unknown_code" // no active mission has the code: 404 not_found
	SMSOutcomeStranger    = "stranger"     // from is no phone of the mission's team: 403 forbidden
	SMSOutcomeRefused     = "refused"      // the mission refused the move: 409 invalid_transition or mission_closed
)

// NormalizePhone reads a sender's number the way team members' phones are stored (E.164,
// see PhoneRE): white space, '-', '.', '(' and ')' are dropped; '+' may only come first;
// a leading "00" stands for '+'; digits without either are taken as an international
// number whose '+' the gateway left out. It reports false when the result is not E.164.
func NormalizePhone(s string) (string, bool) {
	var b strings.Builder
	for i, r := range strings.TrimSpace(s) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0:
			b.WriteRune(r)
		case r == ' ' || r == '\t' || r == '-' || r == '.' || r == '(' || r == ')':
		default:
			return "", false
		}
	}
	n := b.String()
	switch {
	case strings.HasPrefix(n, "+"):
	case strings.HasPrefix(n, "00"):
		n = "+" + n[2:]
	default:
		n = "+" + n
	}
	return n, teams.PhoneRE.MatchString(n)
}

// ReceiveSMS handles one SMS that the gateway received (POST /v1/sms/inbound), within
// tx. p must be an API key holding sms:inbound (else forbidden, and nothing is recorded).
//
// A reply "FR1 ACK|ROUTE|SITE|DONE|FAIL <code>" (see ParseSMSReply) from the phone of a
// member of the team of the tenant's active mission holding that code moves the mission
// like a status update (UpdateMissionStatus, source sms, the same rules and webhook),
// acting as the member: its user_id when it has one, else the member's own id. An ACK
// of a CREATED mission (its notification not confirmed yet) also sets channel_used to
// sms: the reply proves the SMS arrived.
//
// Every message, applied or not, is appended to the tenant's inbound log. A message that
// is refused comes back as refusal, with the record written: the transaction commits
// (with the reply under w's key; w's Render gets a model.SMSReceipt) and the caller
// answers the refusal — validation_error on from or body (malformed), not_found (no
// active mission of the tenant holds the code), forbidden (from is no phone of the
// mission's team), invalid_transition or mission_closed (the mission's rules). err is
// anything else (storage): nothing is written. A replay answers neither.
func (e *Gateway) ReceiveSMS(ctx context.Context, p model.Principal, in model.SMSInboundInput, w *model.Write) (*model.SMSInboundResult, *model.Error, error) {
	r, err := writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (model.SMSReceipt, error) {
		res, refusal, err := e.receiveSMS(tx, p, in)
		return model.SMSReceipt{Result: res, Refusal: refusal}, err
	})
	return r.Result, r.Refusal, err
}

// receiveSMS is ReceiveSMS within tx.
func (e *Gateway) receiveSMS(tx model.Tx, p model.Principal, in model.SMSInboundInput) (res *model.SMSInboundResult, refusal *model.Error, err error) {
	if !p.IsKey() || !p.Can(model.PermSMSInbound) {
		return nil, nil, model.Errorf(model.KindForbidden, "this operation needs an API key with the %s scope", model.PermSMSInbound)
	}
	now := model.At(e.clock.Now())
	rec := &model.SMSInbound{ID: e.newID(now.Time), From: smscodec.Truncate(in.From, maxInboundFrom),
		Body: smscodec.Truncate(in.Body, maxInboundBody), ReceivedAt: now, KeyID: p.KeyID}
	refuse := func(outcome string, e *model.Error) (*model.SMSInboundResult, *model.Error, error) {
		rec.Outcome, rec.Error, rec.Message = outcome, e.Kind, e.Msg
		if err := tx.PutSMSInbound(p.TenantID, rec); err != nil {
			return nil, nil, err
		}
		return &model.SMSInboundResult{SMSInbound: *rec}, e, nil
	}

	from, ok := NormalizePhone(in.From)
	switch {
	case strings.TrimSpace(in.From) == "":
		return refuse(SMSOutcomeInvalid, model.Invalid("from", "from is required: the sender's phone number"))
	case !ok:
		return refuse(SMSOutcomeInvalid, model.Invalid("from", "from must be a phone number in international form (+ and 7 to 15 digits)"))
	}
	rec.From = from
	if len(in.Body) > maxInboundBody {
		return refuse(SMSOutcomeInvalid, model.Invalid("body", "body is longer than %d bytes", maxInboundBody))
	}
	reply, err := smscodec.ParseSMSReply(in.Body)
	if err != nil {
		return refuse(SMSOutcomeInvalid, asError(err))
	}
	rec.Verb, rec.Code = reply.Verb, reply.Code

	missionID, err := tx.MissionByCode(p.TenantID, reply.Code)
	if model.IsKind(err, model.KindNotFound) {
		// A site's mission replicated here: its code indexes nothing on this node, the
		// sender's team finds it (docs/decisions/0201-sms-at-the-central-gateway.md).
		cp, cerr := missionOfSender(tx, p.TenantID, from, reply.Code, func(m *model.Mission) bool {
			return m.Origin != nil && !model.MissionFinished(m.Status)
		})
		if cerr != nil {
			return nil, nil, cerr
		}
		if cp != nil {
			missionID, err = cp.ID, nil
		}
	}
	if model.IsKind(err, model.KindNotFound) && reply.Verb == smscodec.CrewMsg {
		// A message is kept even after its mission ended (docs/decisions/0150-mission-messages.md).
		ended, err := endedMissionOfSender(tx, p.TenantID, from, reply.Code)
		if err != nil {
			return nil, nil, err
		}
		if ended != nil {
			missionID = ended.ID
		}
	}
	if missionID == "" && err == nil {
		err = model.NotFound("mission")
	} else if missionID != "" {
		err = nil
	}
	if model.IsKind(err, model.KindNotFound) {
		// A late reply about a mission of the sender's team that has ended since: its
		// code is free again, but the answer is the mission's (docs/rules.md: a change to a
		// finished mission is mission_closed), not "no such code".
		ended, err := endedMissionOfSender(tx, p.TenantID, from, reply.Code)
		if err != nil {
			return nil, nil, err
		}
		if ended != nil {
			rec.MissionID = &ended.ID
			return refuse(SMSOutcomeRefused, model.Errorf(model.KindMissionClosed,
				"mission %s is %s: a finished mission cannot change", reply.Code, ended.Status))
		}
		return refuse(SMSOutcomeUnknownCode, model.Errorf(model.KindNotFound, "no active mission has the code %s", reply.Code))
	}
	if err != nil {
		return nil, nil, err
	}
	m, err := tx.Mission(p.TenantID, missionID)
	if model.IsKind(err, model.KindNotFound) {
		return refuse(SMSOutcomeUnknownCode, model.Errorf(model.KindNotFound, "no active mission has the code %s", reply.Code))
	}
	if err != nil {
		return nil, nil, err
	}
	rec.MissionID = &m.ID
	member, err := teamMemberByPhone(tx, p.TenantID, m.TeamID, from)
	if err != nil {
		return nil, nil, err
	}
	if member == nil {
		return refuse(SMSOutcomeStranger, model.Errorf(model.KindForbidden,
			"%s is not the phone of a member of the team of mission %s", from, reply.Code))
	}
	rec.MemberID = member.ID

	actor := member.UserID
	if actor == "" {
		actor = member.ID
	}
	// The member acts through the gateway's key: missions:receive on its own team's
	// mission (the membership was checked above), recorded under the member's id.
	mp := model.Principal{TenantID: p.TenantID, Plan: p.Plan, TenantActive: p.TenantActive, KeyID: p.KeyID,
		UserID: actor, Scopes: []string{model.PermMissionsReceive}}
	if reply.Verb == smscodec.CrewMsg {
		err := e.postMessage(tx, mp, m.ID, reply.Text, model.ChangeActor{ID: actor, Name: member.Name, Role: model.RoleFieldOperator})
		if err != nil {
			switch model.ErrorKind(err) {
			case model.KindValidation, model.KindConflict, model.KindNotFound, model.KindForbidden:
				return refuse(SMSOutcomeRefused, asError(err))
			}
			return nil, nil, err
		}
		rec.Outcome, rec.Status = SMSOutcomeApplied, m.Status
		if err := tx.PutSMSInbound(p.TenantID, rec); err != nil {
			return nil, nil, err
		}
		return &model.SMSInboundResult{SMSInbound: *rec, Mission: m}, nil, nil
	}
	wasCreated := m.Status == model.MissionCreated
	moved, err := e.moveMission(tx, mp, m.ID, model.MissionStatusInput{Status: reply.Status}, MoveSource)
	if err != nil {
		switch k := model.ErrorKind(err); k {
		case model.KindInvalidTransition, model.KindMissionClosed, model.KindValidation, model.KindNotFound, model.KindForbidden:
			return refuse(SMSOutcomeRefused, asError(err))
		}
		return nil, nil, err
	}
	if wasCreated && reply.Status == model.MissionAck && moved.ChannelUsed == nil && moved.Origin == nil {
		ch := model.ChannelSMS
		moved.ChannelUsed = &ch
		if err := putMission(tx, p.TenantID, moved); err != nil {
			return nil, nil, err
		}
	}
	rec.Outcome, rec.Status = SMSOutcomeApplied, moved.Status
	if err := tx.PutSMSInbound(p.TenantID, rec); err != nil {
		return nil, nil, err
	}
	return &model.SMSInboundResult{SMSInbound: *rec, Mission: moved}, nil, nil
}

// teamMemberByPhone returns the member of a team whose phone is phone (E.164), or nil;
// a team that no longer exists has none.
func teamMemberByPhone(tx model.Tx, tenantID, teamID, phone string) (*model.Member, error) {
	t, err := tx.Team(tenantID, teamID)
	if model.IsKind(err, model.KindNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range t.Members {
		if t.Members[i].Phone == phone {
			return &t.Members[i], nil
		}
	}
	return nil, nil
}

// endedLookback is how many of a team's latest missions a late SMS reply is matched
// against: a reply comes minutes or hours after its mission, not a hundred missions later.
const endedLookback = 20

// endedMissionOfSender finds the finished mission that held code among the latest
// missions of the teams whose member has the phone from; nil when there is none (a code
// nobody of the sender's teams had is unknown, whoever else had it).
func endedMissionOfSender(tx model.Tx, tenantID, from, code string) (*model.Mission, error) {
	return missionOfSender(tx, tenantID, from, code, func(m *model.Mission) bool { return model.MissionFinished(m.Status) })
}

// missionOfSender finds a mission with code that match accepts among the latest missions
// of the teams whose member has the phone from; nil when there is none.
func missionOfSender(tx model.Tx, tenantID, from, code string, match func(*model.Mission) bool) (*model.Mission, error) {
	teams, err := tx.Teams(tenantID)
	if err != nil {
		return nil, err
	}
	for i := range teams {
		if !slices.ContainsFunc(teams[i].Members, func(m model.Member) bool { return m.Phone == from }) {
			continue
		}
		missions, _, err := tx.Missions(tenantID, model.MissionFilter{TeamIDs: []string{teams[i].ID}}, model.Page{Limit: endedLookback})
		if err != nil {
			return nil, err
		}
		for j := range missions {
			if m := &missions[j]; m.Code == code && match(m) {
				return m, nil
			}
		}
	}
	return nil, nil
}

// asError returns the *Error in err's chain (every refusal above carries one).
func asError(err error) *model.Error {
	var e *model.Error
	if errors.As(err, &e) {
		return e
	}
	return model.Internal(err)
}
