package engine

import (
	"context"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// Limits of a mission's messages (docs/decisions/0150-mission-messages.md).
const (
	MaxMessageText     = 1000
	MaxMissionMessages = 200
)

// HookMissionMessage is the webhook event (and stream change) of a message on a mission.
const HookMissionMessage = "mission.message"

// ItemMessage is the kind of a device's message item: payload {mission_id, text}.
const ItemMessage = "message"

// PostMissionMessage writes a message on a mission of p's tenant (POST
// /v1/missions/:id/messages): see postMessage.
func (e *Engine) PostMissionMessage(ctx context.Context, p model.Principal, missionID string, in model.MissionMessageInput, w *model.Write) (*model.MissionMessage, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.MissionMessage, error) {
		return e.postMessage(tx, p, missionID, in.Text, MoveSourceAPI, nil, p.DeviceID, nil)
	})
}

// postMessage writes a message on a mission within tx: the one write of a message,
// whatever way it came in (channel api, device or sms; capturedAt a phone's capture time;
// via the device that sent it, "" for none; author names the writer when p cannot, an SMS
// reply's member, else nil). It needs missions:manage (the control room,
// to the team) or missions:receive (a field operator of the mission's team, to the
// control room; another team's mission is not found). The text is 1 to MaxMessageText
// characters, lines of text CheckText accepts. A mission that ended takes messages still
// (one may arrive late); one that holds MaxMissionMessages refuses more (conflict). The
// message joins the mission's record; the team's devices but via get a mission_update;
// mission.message goes to the webhooks and the stream. A control room's message also goes
// by SMS to the team's members when the rule of crewSMS says so.
func (e *Engine) postMessage(tx model.Tx, p model.Principal, missionID, text, channel string, capturedAt *model.Time, via string,
	author *model.ChangeActor) (*model.MissionMessage, error) {
	if !p.Can(model.PermMissionsManage) && !p.Can(model.PermMissionsReceive) {
		return nil, model.Errorf(model.KindForbidden, "this operation needs the %s or %s permission", model.PermMissionsManage, model.PermMissionsReceive)
	}
	text, err := checkMessageText(text)
	if err != nil {
		return nil, err
	}
	m, err := e.visibleMission(tx, p, missionID)
	if err != nil {
		return nil, err
	}
	if len(m.Messages) >= MaxMissionMessages {
		return nil, model.Errorf(model.KindConflict, "mission %s holds %d messages, the most it may", m.ID, MaxMissionMessages)
	}
	by, err := changeActor(tx, p)
	if err != nil {
		return nil, err
	}
	if author != nil {
		by = *author
	}
	now := model.At(e.clock.Now())
	msg := model.MissionMessage{ID: e.ids.at(now.Time), AuthorID: by.ID, AuthorName: by.Name, Role: by.Role, Text: text,
		Channel: channel, WrittenAt: now}
	at := now
	if capturedAt != nil && capturedAt.Before(now.Time) {
		at = *capturedAt
		msg.CapturedAt = &at
	}
	fromControlRoom := channel == MoveSourceAPI && (p.IsKey() || p.Can(model.PermMissionsManage))
	if m.Origin != nil {
		// A copy of another node's mission: the message joins the copy and goes to the
		// owner, which tells the crew (docs/decisions/0201-sms-at-the-central-gateway.md).
		return &msg, e.recordRemoteMessage(tx, p.TenantID, m, &msg, !fromControlRoom)
	}
	m.Messages = append(m.Messages, msg)
	m.UpdatedAt = now
	if err := putMission(tx, p.TenantID, m); err != nil {
		return nil, err
	}
	if err := e.tellCrew(tx, p.TenantID, m.TeamID, m, via, model.MissionChange{What: model.UpdateMessage, By: by, At: at,
		Channel: channel, MessageID: msg.ID, Text: text}); err != nil {
		return nil, err
	}
	if err := e.crewMessageAlert(tx, p.TenantID, m, &msg, !fromControlRoom); err != nil {
		return nil, err
	}
	if fromControlRoom && m.Active() {
		if err := e.crewSMS(tx, p.TenantID, m, smscodec.CrewMsg, text); err != nil {
			return nil, err
		}
	}
	if err := e.notify(tx, p.TenantID, HookMissionMessage, model.MissionMessageNote{MissionID: m.ID, EventID: m.EventID,
		TeamID: m.TeamID, Message: msg}); err != nil {
		return nil, err
	}
	return &msg, nil
}

// checkMessageText trims a message and checks it: 1 to MaxMessageText characters, each
// line text CheckText accepts (a message may hold line breaks).
func checkMessageText(text string) (string, error) {
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if text == "" {
		return "", model.Invalid("text", "text is required")
	}
	if err := model.CheckLength("text", text, MaxMessageText); err != nil {
		return "", err
	}
	for _, line := range strings.Split(text, "\n") {
		if err := model.CheckText("text", line); err != nil {
			return "", err
		}
	}
	return text, nil
}

// MissionMessages lists the messages of a mission of p's tenant, oldest first (GET
// /v1/missions/:id/messages); it needs missions:view, and a field operator reads its own
// teams' missions only.
func (e *Engine) MissionMessages(ctx context.Context, p model.Principal, missionID string) ([]model.MissionMessage, error) {
	m, err := e.Mission(ctx, p, missionID)
	if err != nil {
		return nil, err
	}
	if m.Messages == nil {
		return []model.MissionMessage{}, nil
	}
	return m.Messages, nil
}

// messagePayload is the payload of a device's message item.
type messagePayload struct {
	MissionID string `json:"mission_id"`
	Text      string `json:"text"`
}

// applyMessage writes a device's message item as POST /v1/missions/:id/messages would,
// with channel device and the item's captured_at. A device of a team writes on that
// team's missions only.
func (e *Engine) applyMessage(tx model.Tx, p model.Principal, d *model.Device, it *model.DeviceItem) error {
	var in messagePayload
	if err := model.DecodeItemPayload(it.Payload, &in); err != nil {
		return err
	}
	if err := deviceMayTouch(tx, p, d, in.MissionID); err != nil {
		return err
	}
	_, err := e.postMessage(tx, p, in.MissionID, in.Text, MoveSourceDevice, it.CapturedAt, d.ID, nil)
	return err
}
