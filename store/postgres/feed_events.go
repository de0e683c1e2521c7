package postgres

// An event stored once (docs/decisions/0227-event-stored-once.md): a stream change whose
// data are the very bytes of an event's document written in the same transaction (the
// change event.created carries the event as createEvent wrote it) names the event instead
// of carrying a copy: stream_changes.event_id, data NULL. The change reads the event's
// document (changeRows) for as long as it is unchanged; a statement that changes or
// deletes an event first copies its document into the changes that name it
// (keepPublished), in the same transaction, so that a change always reads as published.

// eventDocs are the documents of the events a transaction wrote, of one tenant.
type eventDocs struct {
	byID  map[string]string // event id → its document now
	byDoc map[string]string // document → its event id
}

// eventWritten records that the transaction wrote doc as event id's document.
func (t *tx) eventWritten(tn, id string, doc []byte) {
	if t.events == nil {
		t.events = map[string]*eventDocs{}
	}
	d := t.events[tn]
	if d == nil {
		d = &eventDocs{byID: map[string]string{}, byDoc: map[string]string{}}
		t.events[tn] = d
	}
	if old, ok := d.byID[id]; ok {
		delete(d.byDoc, old)
	}
	s := string(doc)
	d.byID[id], d.byDoc[s] = s, id
}

// publishedEvent returns the event of tenant tn whose document, as this transaction wrote
// it last, is data ("": none).
func (t *tx) publishedEvent(tn string, data []byte) string {
	if d := t.events[tn]; d != nil {
		return d.byDoc[string(data)]
	}
	return ""
}

// changeRows selects the columns that forChanges scans from stream_changes s, the data of
// a change that names an event read from the event's row.
const changeRows = `SELECT s.tenant_id::text, s.seq, s.name, s.perm, s.team_id, s.at, coalesce(s.data, e.doc)::text
	FROM stream_changes s LEFT JOIN events e ON e.tenant_id = s.tenant_id AND e.id = s.event_id`

// keepPublished copies the document of tenant $1's events of ids into the changes that
// name them, which then name none; ids is an SQL expression of a uuid[]. A statement that
// changes or deletes those events begins with it, or runs it first.
func keepPublished(ids string) string {
	return `UPDATE stream_changes s SET data = e.doc, event_id = NULL FROM events e
		WHERE s.tenant_id = $1 AND s.event_id = ANY(` + ids + `) AND e.tenant_id = $1 AND e.id = s.event_id`
}

// eventsDeleted forgets the documents of tenant tn's events of ids, deleted by this
// transaction: a change it still adds carries its data.
func (t *tx) eventsDeleted(tn string, ids []string) {
	d := t.events[tn]
	if d == nil {
		return
	}
	for _, id := range ids {
		if doc, ok := d.byID[id]; ok {
			delete(d.byDoc, doc)
			delete(d.byID, id)
		}
	}
}
