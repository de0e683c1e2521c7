package engine

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
