package model

// MissionSMS is what a mission SMS carries: the mission's code and its event's fields.
type MissionSMS struct {
	Code string
	SMSMessage
}

// SMSReply is a member's reply read by ParseSMSReply.
type SMSReply struct {
	Verb   string // ACK, ROUTE, SITE, DONE, FAIL or MSG
	Status string // the mission status it asks for ("" for MSG)
	Code   string // upper case
	Text   string // MSG: the message, its words joined by one space
}
