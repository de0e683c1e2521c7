package smscodec

import (
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The crew's update SMS (docs/decisions/0153-crew-sms.md): one FR1 line of 7 fields that
// tells a team's members of a change to their mission, in the spirit of the dispatch
// line,
//
//	FR1|U|<code>|<priority letter>|<KIND>|<text>|<crc>
//
// KIND is STOP (the team is stood down; text is the reason), BACKUP (another team is sent
// to the event; text is its name) or MSG (a message from the control room; text is the
// message, and a second line says how to answer: "Reply FR1 MSG <code> <text>"). The text
// is cut to fit one SMS, any character outside GSM-7's basic table (and '|', line breaks)
// made '?' or a space; the CRC covers every byte before the line's last '|', as the other
// lines'. An event line has 7 fields too, but its second is an 8 hex digit reference,
// never "U".

// Kinds of a crew SMS.
const (
	CrewStop   = "STOP"
	CrewBackup = "BACKUP"
	CrewMsg    = "MSG"
)

const (
	smsCrewMark    = "U"
	smsMsgHintHead = "Reply FR1 MSG "
	smsMsgHintTail = " <text>"
)

// CrewSMS is a crew SMS as read back.
type CrewSMS struct {
	Code, Priority, Kind, Text string
}

// crewText makes text fit the line: one line of GSM-7 basic characters without '|'.
func crewText(text string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(text), " ") {
		switch {
		case r == '|':
			b.WriteByte('/')
		case r == '\n' || r == '\r':
			b.WriteByte(' ')
		case strings.ContainsRune(gsm7Basic, r):
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// EncodeCrewSMS writes the crew SMS of a mission's change (see above): code the
// mission's code, priority its priority, kind CrewStop, CrewBackup or CrewMsg, text the
// reason, the backup team's name or the message. Errors are validation errors naming the
// offending argument.
func EncodeCrewSMS(code, priority, kind, text string) (string, error) {
	if !ValidMissionCode(code) {
		return "", model.Invalid("code", "a mission code is %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	letter, ok := smsPriorityLetter[priority]
	if !ok {
		return "", model.Invalid("priority", "priority must be critical, high, normal or low")
	}
	tail := ""
	switch kind {
	case CrewStop, CrewBackup:
	case CrewMsg:
		tail = "\n" + smsMsgHintHead + code + smsMsgHintTail
	default:
		return "", model.Invalid("kind", "kind must be STOP, BACKUP or MSG")
	}
	lead := Prefix + "|" + smsCrewMark + "|" + code + "|" + letter + "|" + kind + "|"
	fixed, _ := gsm7Septets(lead + "|0000" + tail)
	t := crewText(text)
	if room := SMSMaxLen - fixed; len(t) > room {
		// Every character of t is one septet and one byte (GSM-7 basic, ASCII or not:
		// cut by runes).
		r := []rune(t)
		if len(r) > room {
			t = string(r[:room])
		}
	}
	head := lead + t
	body := head + "|" + smsCRC(head) + tail
	if err := CheckSMSLength(body); err != nil {
		return "", err
	}
	return body, nil
}

// DecodeCrewSMS reads an SMS written by EncodeCrewSMS and accepts nothing else: one SMS of
// GSM-7, 7 '|'-separated fields starting FR1|U|<code>, a known priority letter and kind,
// a matching CRC, and for MSG the reply line naming the same code. Every error is a
// validation error on "body".
func DecodeCrewSMS(body string) (CrewSMS, error) {
	var c CrewSMS
	if err := CheckSMSLength(body); err != nil {
		return c, err
	}
	line, hint, two := strings.Cut(body, "\n")
	f := strings.Split(line, "|")
	if len(f) != 7 || f[0] != Prefix || f[1] != smsCrewMark {
		return c, model.Invalid("body", "an FR1 crew line has 7 '|'-separated fields and starts with FR1|U")
	}
	if !ValidMissionCode(f[2]) {
		return c, model.Invalid("body", "the mission code must be %d characters of %s", MissionCodeLen, MissionCodeAlphabet)
	}
	p, ok := smsLetterPriority[f[3]]
	if !ok {
		return c, model.Invalid("body", "unknown priority letter %s", model.Quote(f[3]))
	}
	if err := CheckSMSCRC(line, f[6]); err != nil {
		return c, err
	}
	switch f[4] {
	case CrewStop, CrewBackup:
		if two {
			return c, model.Invalid("body", "a %s line has one line", f[4])
		}
	case CrewMsg:
		if hint != smsMsgHintHead+f[2]+smsMsgHintTail {
			return c, model.Invalid("body", "the second line must be %s", model.Quote(smsMsgHintHead+f[2]+smsMsgHintTail))
		}
	default:
		return c, model.Invalid("body", "unknown kind %s", model.Quote(f[4]))
	}
	return CrewSMS{Code: f[2], Priority: p, Kind: f[4], Text: f[5]}, nil
}
