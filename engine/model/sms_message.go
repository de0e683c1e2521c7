package model

// SMSMessage is what an FR1 line carries. FR1 is the structured SMS fallback protocol
// (docs/rules.md, Delivery): when an event goes out by SMS, the body is one line
//
//	FR1|<ref>|<priority>|<TYPE>|<zone_code>|<lat>,<lng>|<crc>
//
// for example FR1|099a8057|C|FIRE.STRUCTURE|LYON-3|45.76404,4.83566|9EAC.
//
//   - ref is the LAST 8 hex digits of the event's UUID, lowercase: the first digits of a
//     UUIDv7 are its timestamp and are the same for the events of one minute.
//   - priority is one letter: C critical, H high, N normal, L low.
//   - TYPE is the event type upper-cased; every character outside [A-Z0-9_.-] becomes '_'
//     (one '_' per character, an invalid UTF-8 byte counting as one character). TYPE is the
//     only field that shrinks: it is cut so that the line fits in SMSMaxLen; when even an
//     empty TYPE does not fit, encoding fails (it cannot happen with valid fields).
//   - zone_code is the zone code as given, empty when the event has no zone.
//   - lat,lng are written with exactly 5 decimals, no exponent, no '+', no leading zeros and
//     no sign on zero (45.76404,4.83566); an unknown position is just "," (both or neither).
//   - crc is CRC-16/CCITT-FALSE (CRC16CCITT) over every byte before the last '|', i.e. over
//     "FR1|…|<lat>,<lng>", as 4 hex digits: written uppercase, read in either case.
//
// Every character is in the GSM 03.38 alphabet. All are in its basic table except '|',
// which is in the extension table and costs two septets (escape + character); SMSMaxLen
// counts septets, so that a line always fits in one SMS: with its six '|' a line is at most
// 154 characters.
//
// DecodeSMS accepts exactly the lines EncodeSMS writes (the case of the CRC aside): nothing is
// trimmed, a coordinate in any other spelling (45.7, +45.76404, 4.5e1) is refused, so a line
// that decodes re-encodes to itself.
type SMSMessage struct {
	EventRef string // 8 lowercase hex digits (last 8 of the event id)
	Priority string // critical|high|normal|low
	Type     string // upper-case, [A-Z0-9_.-]*, possibly truncated
	ZoneCode string // empty: no zone
	Lat, Lng *float64
}
