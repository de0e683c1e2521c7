package model

import (
	"slices"
	"strings"
)

// MissionMessage is one message written on a mission, by the control room to the team or
// by the team to the control room (docs/decisions/0150-mission-messages.md). It is
// immutable and part of the mission's record.
type MissionMessage struct {
	ID string `json:"id"`
	// AuthorID, AuthorName and Role name who wrote it (a key's role is api_key).
	AuthorID   string `json:"author_id"`
	AuthorName string `json:"author_name"`
	Role       string `json:"role"`
	Text       string `json:"text"`
	// Channel is how it came in: api, device or sms.
	Channel string `json:"channel"`
	// WrittenAt is when the node recorded it; CapturedAt, for a phone's message, when the
	// phone captured it (offline perhaps), on the node's clock.
	WrittenAt  Time  `json:"written_at"`
	CapturedAt *Time `json:"captured_at"`
}

// MissionMessageInput is the body of POST /v1/missions/:id/messages.
type MissionMessageInput struct {
	Text string `json:"text"`
}

// MissionMessageNote is the payload of the mission.message webhook and stream change.
type MissionMessageNote struct {
	MissionID string         `json:"mission_id"`
	EventID   string         `json:"event_id"`
	TeamID    string         `json:"team_id"`
	Message   MissionMessage `json:"message"`
}

// MergeMessages adds to m the messages of msgs it does not hold (by id), and returns
// them: a message written on another node's copy of the mission travels like a move
// (docs/decisions/0201-sms-at-the-central-gateway.md). The messages stay in the order
// of their writing, then of their ids: the same on every node.
func MergeMessages(m *Mission, msgs []MissionMessage) []MissionMessage {
	held := make(map[string]bool, len(m.Messages))
	for i := range m.Messages {
		held[m.Messages[i].ID] = true
	}
	var added []MissionMessage
	for _, msg := range msgs {
		if !held[msg.ID] {
			held[msg.ID] = true
			added = append(added, msg)
		}
	}
	if len(added) > 0 {
		m.Messages = append(m.Messages, added...)
		slices.SortStableFunc(m.Messages, func(a, b MissionMessage) int {
			if c := a.WrittenAt.Compare(b.WrittenAt.Time); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return added
}
