package smscodec

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// SMSMaxLen is the most GSM-7 septets an FR1 line may take: one SMS.
const SMSMaxLen = 160

const Prefix = "FR1"

var (
	smsPriorityLetter = map[string]string{"critical": "C", "high": "H", "normal": "N", "low": "L"}
	smsLetterPriority = map[string]string{"C": "critical", "H": "high", "N": "normal", "L": "low"}
)

// gsm7Basic is the GSM 03.38 basic character table (the escape 0x1B left out); gsm7Ext the
// characters of its extension table, which take two septets.
const (
	gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Ext = "\f^{}\\[~]|€"
)

// gsm7Septets returns how many GSM-7 septets s takes, and false when s holds a character
// GSM-7 cannot carry.
func gsm7Septets(s string) (int, bool) {
	n := 0
	for _, r := range s {
		switch {
		case strings.ContainsRune(gsm7Basic, r):
			n++
		case strings.ContainsRune(gsm7Ext, r):
			n += 2
		default:
			return n, false
		}
	}
	return n, true
}

// CRC16CCITT returns the CRC-16/CCITT-FALSE of b: polynomial 0x1021, initial value 0xFFFF,
// no reflection, no final xor (check value 0x29B1 for "123456789").
func CRC16CCITT(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// smsType maps an event type to the TYPE field: upper-cased, any character outside
// [A-Z0-9_.-] replaced by '_'.
func smsType(typ string) string {
	var b strings.Builder
	b.Grow(len(typ))
	for _, r := range typ {
		r = unicode.ToUpper(r)
		if smsTypeChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func smsTypeChar(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
}

// smsCoord writes a coordinate with 5 decimals, zero unsigned.
func smsCoord(v float64) string {
	s := strconv.FormatFloat(v, 'f', 5, 64)
	if s == "-0.00000" {
		s = "0.00000"
	}
	return s
}

// smsCRC returns the CRC field of the bytes before the last '|'.
func smsCRC(head string) string {
	const hexdigits = "0123456789ABCDEF"
	c := CRC16CCITT([]byte(head))
	return string([]byte{hexdigits[c>>12], hexdigits[c>>8&0xF], hexdigits[c>>4&0xF], hexdigits[c&0xF]})
}

// EncodeSMS writes the FR1 line of an event (see the protocol above). eventID is the
// event's full UUID; priority one of critical, high, normal, low; zoneCode a zone code or
// empty; lat and lng both nil (unknown position) or both set and in range. Errors are
// validation errors naming the offending argument.
func EncodeSMS(eventID, priority, typ, zoneCode string, lat, lng *float64) (string, error) {
	return EncodeFR1(Prefix+"|", "", eventID, priority, typ, zoneCode, lat, lng)
}

// encodeFR1 writes an FR1 line: lead (the fields before the event ref, with their '|'),
// the event's fields, the CRC over the line, then tail (text after the line, outside
// the CRC). TYPE is cut so that the whole body fits in SMSMaxLen septets.
func EncodeFR1(lead, tail, eventID, priority, typ, zoneCode string, lat, lng *float64) (string, error) {
	if !model.ValidID(eventID) {
		return "", model.Invalid("event_id", "event_id must be a UUID")
	}
	ref := strings.ToLower(eventID[len(eventID)-8:])
	letter, ok := smsPriorityLetter[priority]
	if !ok {
		return "", model.Invalid("priority", "priority must be critical, high, normal or low")
	}
	if zoneCode != "" && !model.ValidZoneCode(zoneCode) {
		return "", model.Invalid("zone_code", "zone_code must be 1 to 64 letters, digits, '_' or '-'")
	}
	pos := ","
	switch {
	case lat == nil && lng == nil:
	case lat == nil || lng == nil:
		return "", model.Invalid("location", "lat and lng go together")
	case !model.ValidLatLng(*lat, *lng):
		return "", model.Invalid("location", "lat must be in [-90, 90] and lng in [-180, 180]")
	default:
		pos = smsCoord(*lat) + "," + smsCoord(*lng)
	}
	// Every field but TYPE is fixed (the CRC's 4 digits are counted as "0000"); TYPE takes
	// what is left of SMSMaxLen, one septet per character.
	before := lead + ref + "|" + letter + "|"
	after := "|" + zoneCode + "|" + pos
	fixed, ok := gsm7Septets(before + after + "|0000" + tail)
	if !ok {
		return "", model.Invalid("body", "the SMS line holds a character outside GSM-7")
	}
	room := SMSMaxLen - fixed
	if room < 0 {
		return "", model.Invalid("body", "the SMS line cannot fit in %d GSM-7 septets", SMSMaxLen)
	}
	t := smsType(typ)
	if len(t) > room {
		t = t[:room]
	}
	head := before + t + after
	body := head + "|" + smsCRC(head) + tail
	if n, ok := gsm7Septets(body); !ok || n > SMSMaxLen {
		return "", model.Invalid("body", "the SMS line does not fit in %d GSM-7 septets", SMSMaxLen)
	}
	return body, nil
}

// DecodeSMS reads an FR1 line written by EncodeSMS. It checks, in order: the line is GSM-7
// and at most SMSMaxLen septets, it has exactly 7 '|'-separated fields, the first is FR1,
// the CRC is 4 hex digits (either case) matching the line, then each field: an 8 lowercase
// hex digit ref, a known priority letter, a TYPE of [A-Z0-9_.-], an empty or valid zone code,
// and a position that is "," or two in-range coordinates in the 5-decimal form. Every error
// is a validation error on the field "body".
func DecodeSMS(line string) (model.SMSMessage, error) {
	var m model.SMSMessage
	if err := CheckSMSLength(line); err != nil {
		return m, err
	}
	f := strings.Split(line, "|")
	if len(f) != 7 {
		return m, model.Invalid("body", "an FR1 line has 7 '|'-separated fields, not %d", len(f))
	}
	if f[0] != Prefix {
		return m, model.Invalid("body", "an FR1 line starts with FR1")
	}
	if err := CheckSMSCRC(line, f[6]); err != nil {
		return m, err
	}
	return m, DecodeFR1Fields(&m, f[1:6])
}

// checkSMSLength checks that a body is GSM-7 and fits in one SMS.
func CheckSMSLength(body string) error {
	if n, ok := gsm7Septets(body); !ok {
		return model.Invalid("body", "the SMS line holds a character outside GSM-7")
	} else if n > SMSMaxLen {
		return model.Invalid("body", "the SMS line is longer than %d GSM-7 septets", SMSMaxLen)
	}
	return nil
}

// checkSMSCRC checks the CRC field crc of line: 4 hex digits matching every byte before
// the line's last '|'.
func CheckSMSCRC(line, crc string) error {
	if len(crc) != 4 || !smsHex(crc, true) {
		return model.Invalid("body", "the CRC must be 4 hex digits")
	}
	head := line[:strings.LastIndexByte(line, '|')]
	if want := smsCRC(head); !strings.EqualFold(crc, want) {
		return model.Invalid("body", "CRC mismatch: the line says %s, its content gives %s", crc, want)
	}
	return nil
}

// decodeFR1Fields reads the five event fields of an FR1 line (ref, priority, TYPE, zone
// code, position) into m.
func DecodeFR1Fields(m *model.SMSMessage, f []string) error {
	if len(f[0]) != 8 || !smsHex(f[0], false) {
		return model.Invalid("body", "the event ref must be 8 lowercase hex digits")
	}
	m.EventRef = f[0]
	p, ok := smsLetterPriority[f[1]]
	if !ok {
		return model.Invalid("body", "the priority letter must be C, H, N or L")
	}
	m.Priority = p
	for i := 0; i < len(f[2]); i++ {
		if !smsTypeChar(rune(f[2][i])) {
			return model.Invalid("body", "the TYPE may hold only A-Z, 0-9, '_', '.' and '-'")
		}
	}
	m.Type = f[2]
	if f[3] != "" && !model.ValidZoneCode(f[3]) {
		return model.Invalid("body", "the zone code must be 1 to 64 letters, digits, '_' or '-'")
	}
	m.ZoneCode = f[3]
	if f[4] != "," {
		latS, lngS, ok := strings.Cut(f[4], ",")
		if !ok {
			return model.Invalid("body", "the position must be <lat>,<lng> or ','")
		}
		if latS == "" || lngS == "" {
			return model.Invalid("body", "the position needs both lat and lng, or neither")
		}
		lat, err1 := strconv.ParseFloat(latS, 64)
		lng, err2 := strconv.ParseFloat(lngS, 64)
		if err1 != nil || err2 != nil {
			return model.Invalid("body", "lat and lng must be decimal numbers")
		}
		if !model.ValidLatLng(lat, lng) {
			return model.Invalid("body", "lat must be in [-90, 90] and lng in [-180, 180]")
		}
		if smsCoord(lat) != latS || smsCoord(lng) != lngS {
			return model.Invalid("body", "lat and lng must be written with exactly 5 decimals")
		}
		m.Lat, m.Lng = &lat, &lng
	}
	return nil
}

// smsHex reports whether s is made of hex digits, lowercase only unless upper is set.
func smsHex(s string, upper bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || upper && c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Septets returns the GSM-7 length of an FR1 line: one septet a character, but '|', which
// is in the extension table, costs two.
func Septets(line string) int { return len(line) + strings.Count(line, "|") }
