package engine

import (
	"strings"
	"unicode/utf8"
)

// The mission SMS and the replies to it.
//
// When a team is dispatched, each member's phone gets one SMS (at most SMSMaxLen
// septets) of two lines: an FR1 mission line, then the reply instruction:
//
//	FR1|M|<code>|<ref>|<priority>|<TYPE>|<zone_code>|<lat>,<lng>|<crc>
//	Reply FR1 ACK <code>
//
// for example
//
//	FR1|M|7KQ2M|099a8057|C|FIRE.STRUCTURE|LYON-3|45.76404,4.83566|82C1
//	Reply FR1 ACK 7KQ2M
//
// The mission line is the event's FR1 line (see SMSMessage) with "M" and the mission
// code inserted after FR1; its CRC covers every byte before its last '|', code included,
// and the two lines are joined by one '\n' (GSM-7 basic). An event line has 7 fields and a
// mission line 9, so neither decoder mistakes one for the other. TYPE is still the only
// field cut to fit; the reply line costs 20 septets, which leaves TYPE at least 18
// characters even with a 64-character zone code and a negative position.
//
// A member answers with one SMS
//
//	FR1 <ACK|ROUTE|SITE|DONE|FAIL> <code>
//
// read by ParseSMSReply: words are separated by any run of white space, leading and
// trailing white space is ignored, FR1, the verb and the code are read in any case, and
// anything after the code is ignored (the whole body is kept in the inbound log).

// MissionSMS is what a mission SMS carries: the mission's code and its event's fields.
type MissionSMS struct {
	Code string
	SMSMessage
}

const (
	smsMissionMark = "M"
	smsReplyHint   = "Reply FR1 ACK "
)

// EncodeMissionSMS writes the SMS sent to a team's members at dispatch (see above): code
// is the mission's code; the other arguments are EncodeSMS's. Errors are validation
// errors naming the offending argument.
func EncodeMissionSMS(code, eventID, priority, typ, zoneCode string, lat, lng *float64) (string, error) {
	if !ValidMissionCode(code) {
		return "", Invalid("code", "a mission code is %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	return encodeFR1(smsPrefix+"|"+smsMissionMark+"|"+code+"|", "\n"+smsReplyHint+code,
		eventID, priority, typ, zoneCode, lat, lng)
}

// DecodeMissionSMS reads an SMS written by EncodeMissionSMS, and accepts nothing else (the
// case of the CRC aside): GSM-7 within SMSMaxLen septets, exactly two lines, the first
// with 9 '|'-separated fields starting FR1|M|<code>, a matching CRC and valid event
// fields, the second the reply instruction naming the same code. Every error is a
// validation error on "body".
func DecodeMissionSMS(body string) (MissionSMS, error) {
	var m MissionSMS
	if err := checkSMSLength(body); err != nil {
		return m, err
	}
	line, hint, ok := strings.Cut(body, "\n")
	if !ok {
		return m, Invalid("body", "a mission SMS has two lines")
	}
	f := strings.Split(line, "|")
	if len(f) != 9 {
		return m, Invalid("body", "an FR1 mission line has 9 '|'-separated fields, not %d", len(f))
	}
	if f[0] != smsPrefix || f[1] != smsMissionMark {
		return m, Invalid("body", "an FR1 mission line starts with FR1|M")
	}
	if !ValidMissionCode(f[2]) {
		return m, Invalid("body", "the mission code must be %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	if err := checkSMSCRC(line, f[8]); err != nil {
		return m, err
	}
	if err := decodeFR1Fields(&m.SMSMessage, f[3:8]); err != nil {
		return m, err
	}
	if hint != smsReplyHint+f[2] {
		return m, Invalid("body", "the second line must be %s", Quote(smsReplyHint+f[2]))
	}
	m.Code = f[2]
	return m, nil
}

// SMS reply verbs and the mission status each asks for.
var smsReplyVerbs = map[string]string{
	"ACK":   MissionAck,
	"ROUTE": MissionOnRoute,
	"SITE":  MissionOnSite,
	"DONE":  MissionCompleted,
	"FAIL":  MissionFailed,
}

// SMSReply is a member's reply read by ParseSMSReply.
type SMSReply struct {
	Verb   string // ACK, ROUTE, SITE, DONE or FAIL
	Status string // the mission status it asks for
	Code   string // upper case
}

// ParseSMSReply reads a reply "FR1 <verb> <code>" (see above). Every error is a
// validation error on "body" that says what is wrong: empty, not FR1, unknown verb,
// missing code, malformed code.
func ParseSMSReply(body string) (SMSReply, error) {
	var r SMSReply
	w := strings.Fields(body)
	switch {
	case len(w) == 0:
		return r, Invalid("body", "body is empty: a reply is FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	case !strings.EqualFold(w[0], smsPrefix):
		return r, Invalid("body", "a reply starts with FR1: FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	case len(w) == 1:
		return r, Invalid("body", "the reply names no verb: FR1 ACK|ROUTE|SITE|DONE|FAIL <mission code>")
	}
	verb := strings.ToUpper(w[1])
	status, ok := smsReplyVerbs[verb]
	if !ok {
		return r, Invalid("body", "unknown verb %s: the verb is ACK, ROUTE, SITE, DONE or FAIL", Quote(w[1]))
	}
	if len(w) == 2 {
		return r, Invalid("body", "the reply names no mission code: FR1 %s <mission code>", verb)
	}
	code := strings.ToUpper(w[2])
	if !ValidMissionCode(code) {
		return r, Invalid("body", "%s is not a mission code: %d characters of %s", Quote(w[2]),
			MissionCodeLen, MissionCodeAlphabet)
	}
	return SMSReply{Verb: verb, Status: status, Code: code}, nil
}

// smsTruncate cuts s to at most n bytes on a rune boundary.
func smsTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
