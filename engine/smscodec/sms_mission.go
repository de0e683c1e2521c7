package smscodec

import (
	"strings"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

const (
	smsMissionMark = "M"
	smsReplyHint   = "Reply FR1 ACK "
)

// EncodeMissionSMS writes the SMS sent to a team's members at dispatch (see above): code
// is the mission's code; the other arguments are EncodeSMS's. Errors are validation
// errors naming the offending argument.
func EncodeMissionSMS(code, eventID, priority, typ, zoneCode string, lat, lng *float64) (string, error) {
	if !ValidMissionCode(code) {
		return "", model.Invalid("code", "a mission code is %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	return EncodeFR1(Prefix+"|"+smsMissionMark+"|"+code+"|", "\n"+smsReplyHint+code,
		eventID, priority, typ, zoneCode, lat, lng)
}

// DecodeMissionSMS reads an SMS written by EncodeMissionSMS, and accepts nothing else (the
// case of the CRC aside): GSM-7 within SMSMaxLen septets, exactly two lines, the first
// with 9 '|'-separated fields starting FR1|M|<code>, a matching CRC and valid event
// fields, the second the reply instruction naming the same code. Every error is a
// validation error on "body".
func DecodeMissionSMS(body string) (model.MissionSMS, error) {
	var m model.MissionSMS
	if err := CheckSMSLength(body); err != nil {
		return m, err
	}
	line, hint, ok := strings.Cut(body, "\n")
	if !ok {
		return m, model.Invalid("body", "a mission SMS has two lines")
	}
	f := strings.Split(line, "|")
	if len(f) != 9 {
		return m, model.Invalid("body", "an FR1 mission line has 9 '|'-separated fields, not %d", len(f))
	}
	if f[0] != Prefix || f[1] != smsMissionMark {
		return m, model.Invalid("body", "an FR1 mission line starts with FR1|M")
	}
	if !ValidMissionCode(f[2]) {
		return m, model.Invalid("body", "the mission code must be %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	if err := CheckSMSCRC(line, f[8]); err != nil {
		return m, err
	}
	if err := DecodeFR1Fields(&m.SMSMessage, f[3:8]); err != nil {
		return m, err
	}
	if hint != smsReplyHint+f[2] {
		return m, model.Invalid("body", "the second line must be %s", model.Quote(smsReplyHint+f[2]))
	}
	m.Code = f[2]
	return m, nil
}

// SMS reply verbs and the mission status each asks for.
var smsReplyVerbs = map[string]string{
	"ACK":   model.MissionAck,
	"ROUTE": model.MissionOnRoute,
	"SITE":  model.MissionOnSite,
	"DONE":  model.MissionCompleted,
	"FAIL":  model.MissionFailed,
}

// ParseSMSReply reads a reply "FR1 <verb> <code>" (see above). Every error is a
// validation error on "body" that says what is wrong: empty, not FR1, unknown verb,
// missing code, malformed code.
func ParseSMSReply(body string) (model.SMSReply, error) {
	var r model.SMSReply
	w := strings.Fields(body)
	switch {
	case len(w) == 0:
		return r, model.Invalid("body", "body is empty: a reply is FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	case !strings.EqualFold(w[0], Prefix):
		return r, model.Invalid("body", "a reply starts with FR1: FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	case len(w) == 1:
		return r, model.Invalid("body", "the reply names no verb: FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	}
	verb := strings.ToUpper(w[1])
	if verb == CrewMsg {
		// FR1 MSG <code> <text>: a message to the control room (docs/decisions/0153-crew-sms.md).
		switch {
		case len(w) == 2:
			return r, model.Invalid("body", "the reply names no mission code: FR1 MSG <mission code> <text>")
		case !ValidMissionCode(strings.ToUpper(w[2])):
			return r, model.Invalid("body", "%s is not a mission code: %d characters of %s", model.Quote(w[2]),
				MissionCodeLen, MissionCodeAlphabet)
		case len(w) == 3:
			return r, model.Invalid("body", "the message is empty: FR1 MSG <mission code> <text>")
		}
		return model.SMSReply{Verb: verb, Code: strings.ToUpper(w[2]), Text: strings.Join(w[3:], " ")}, nil
	}
	status, ok := smsReplyVerbs[verb]
	if !ok {
		return r, model.Invalid("body", "unknown verb %s: the verb is ACK, ROUTE, SITE, DONE, FAIL or MSG", model.Quote(w[1]))
	}
	if len(w) == 2 {
		return r, model.Invalid("body", "the reply names no mission code: FR1 %s <mission code>", verb)
	}
	code := strings.ToUpper(w[2])
	if !ValidMissionCode(code) {
		return r, model.Invalid("body", "%s is not a mission code: %d characters of %s", model.Quote(w[2]),
			MissionCodeLen, MissionCodeAlphabet)
	}
	return model.SMSReply{Verb: verb, Status: status, Code: code}, nil
}

// smsTruncate cuts s to at most n bytes on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
