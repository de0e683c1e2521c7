package model

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Dispositions of a closed incident (docs/decisions/0173-incident-disposition.md), the
// short list a supervisor picks from; "other" asks for a note.
const (
	DispositionResolved   = "resolved"
	DispositionFalseAlarm = "false_alarm"
	DispositionDuplicate  = "duplicate"
	DispositionNoAction   = "no_action_needed"
	DispositionReferred   = "referred_elsewhere"
	DispositionOther      = "other"
)

// Dispositions lists the dispositions in the order a form offers them.
var Dispositions = []string{DispositionResolved, DispositionFalseAlarm, DispositionDuplicate, DispositionNoAction,
	DispositionReferred, DispositionOther}

// MaxDispositionNote bounds a disposition's free text, in characters.
const MaxDispositionNote = 500

// Disposition is how and by whom an incident was closed by hand.
type Disposition struct {
	Code     string `json:"code"`
	Note     string `json:"note"`
	ClosedBy string `json:"closed_by"`
	At       Time   `json:"at"`
}

// CloseEventInput is the body of POST /v1/events/{id}/close.
type CloseEventInput struct {
	Disposition string `json:"disposition"`
	Note        string `json:"note"`
}

// Validate checks the disposition and its note (trimmed).
func (in *CloseEventInput) Validate() error {
	in.Note = strings.TrimSpace(in.Note)
	switch {
	case !slices.Contains(Dispositions, in.Disposition):
		return Invalid("disposition", "disposition must be one of %s", strings.Join(Dispositions, ", "))
	case utf8.RuneCountInString(in.Note) > MaxDispositionNote:
		return Invalid("note", "note holds at most %d characters", MaxDispositionNote)
	case in.Disposition == DispositionOther && in.Note == "":
		return Invalid("note", "a disposition of other needs a note saying what happened")
	}
	return nil
}
