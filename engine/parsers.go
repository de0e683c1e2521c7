package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParsedPayload is what a vertical's parser reads from an event payload.
type ParsedPayload struct {
	Lat, Lng          *float64 // both or neither
	RequiredEquipment []string // lowercase, trimmed, deduplicated, sorted; nil when absent
	Severity          string   // normalised; "" when absent
}

// ParserInfo describes one parser for GET /v1/parsers.
type ParserInfo struct {
	Vertical    string   `json:"vertical"`
	Name        string   `json:"name"` // e.g. "healthcare.v1"
	Description string   `json:"description"`
	Location    []string `json:"location"` // accepted location forms, e.g. ["lat/lng","latitude/longitude","location: GeoJSON Point"]
	Fields      []string `json:"fields"`   // payload fields it reads
	// Severities are the severity values the parser accepts, as compared after
	// normalisation (trimmed, lowercase): the four levels first, then the vertical's
	// synonyms. Every one of them is stored as one of critical, high, medium, low.
	Severities []string `json:"severities"`
}

// Limits of payload.required_equipment.
const (
	maxRequiredEquipment    = 50
	maxRequiredEquipmentLen = 64
)

// severityLevels is the one scale every parser normalises to, most severe first.
var severityLevels = [...]string{"critical", "high", "medium", "low"}

// parserSpec is one vertical's parser: its severity synonyms, in the order they are
// listed, each with the level it stands for. Everything else is shared.
type parserSpec struct {
	vertical    string
	description string
	synonyms    [][2]string // lowercase input → level
	numeric     bool        // JSON integers 1..4 are accepted too (1 = critical)
}

// incidentSynonyms is the scale of incident-ticket verticals.
var incidentSynonyms = [][2]string{
	{"sev1", "critical"}, {"sev2", "high"}, {"sev3", "medium"}, {"sev4", "low"},
	{"major", "high"}, {"minor", "low"},
}

// parserSpecs are the parsers of the standard verticals; any other vertical gets
// genericParserSpec.
var parserSpecs = []parserSpec{
	{vertical: "healthcare", description: "Clinical events. Severity by triage colour (red, orange, yellow, green) or " +
		"triage level 1 to 4 as a string or an integer, 1 = critical.",
		synonyms: [][2]string{
			{"red", "critical"}, {"orange", "high"}, {"yellow", "medium"}, {"green", "low"},
			{"1", "critical"}, {"2", "high"}, {"3", "medium"}, {"4", "low"},
		}, numeric: true},
	{vertical: "emergency", description: "Emergency services. Severity by dispatch priority p1 to p4, p1 = critical.",
		synonyms: [][2]string{{"p1", "critical"}, {"p2", "high"}, {"p3", "medium"}, {"p4", "low"}}},
	{vertical: "banking", description: "Banking incidents. Severity sev1 to sev4 (sev1 = critical), major = high, minor = low.",
		synonyms: incidentSynonyms},
	{vertical: "delivery", description: "Last-mile delivery incidents. Severity sev1 to sev4 (sev1 = critical), major = high, minor = low.",
		synonyms: incidentSynonyms},
	{vertical: "gov", description: "Public-service incidents. Severity sev1 to sev4 (sev1 = critical), major = high, minor = low.",
		synonyms: incidentSynonyms},
	{vertical: "logistics", description: "Logistics incidents. Severity sev1 to sev4 (sev1 = critical), major = high, minor = low.",
		synonyms: incidentSynonyms},
	{vertical: "telecom", description: "Network incidents. Severity sev1 to sev4 (sev1 = critical), major = high, minor = low.",
		synonyms: incidentSynonyms},
}

// genericParserSpec is the parser of custom verticals: the four levels only.
var genericParserSpec = parserSpec{description: "Generic parser of custom verticals. Severity critical, high, medium or low."}

// payloadLocationForms and payloadFields are the same for every parser.
var (
	payloadLocationForms = []string{"lat/lng", "latitude/longitude", "location: GeoJSON Point", "geometry: GeoJSON Point"}
	payloadFields        = []string{"lat", "lng", "latitude", "longitude", "location", "geometry", "required_equipment", "severity"}
)

// payloadParser is a parserSpec compiled once: a lookup table and its description.
type payloadParser struct {
	info     ParserInfo
	levels   map[string]string // accepted input → level
	numeric  bool
	accepted string // for error messages
}

func newPayloadParser(name string, s parserSpec) *payloadParser {
	p := &payloadParser{levels: map[string]string{}, numeric: s.numeric}
	accepted := slices.Clone(severityLevels[:])
	for _, l := range severityLevels {
		p.levels[l] = l
	}
	for _, syn := range s.synonyms {
		p.levels[syn[0]] = syn[1]
		accepted = append(accepted, syn[0])
	}
	p.accepted = strings.Join(accepted, ", ")
	if s.numeric {
		p.accepted += " or an integer 1 to 4"
	}
	p.info = ParserInfo{Vertical: s.vertical, Name: name, Description: s.description,
		Location: payloadLocationForms, Fields: payloadFields, Severities: accepted}
	return p
}

var (
	payloadParsers = func() map[string]*payloadParser {
		m := make(map[string]*payloadParser, len(parserSpecs))
		for _, s := range parserSpecs {
			m[s.vertical] = newPayloadParser(s.vertical+".v1", s)
		}
		return m
	}()
	genericPayloadParser = newPayloadParser("generic.v1", genericParserSpec)
)

func payloadParserOf(vertical string) *payloadParser {
	if p, ok := payloadParsers[vertical]; ok {
		return p
	}
	return genericPayloadParser
}

// Parsers lists the parser of each vertical of the tenant's verticals (standard ones plus
// custom; custom verticals get the generic parser named "generic.v1" with that vertical),
// sorted by vertical.
func Parsers(verticals []string) []ParserInfo {
	out := make([]ParserInfo, 0, len(StandardVerticals)+len(verticals))
	add := func(v string) {
		if v == "" || slices.ContainsFunc(out, func(i ParserInfo) bool { return i.Vertical == v }) {
			return
		}
		info := payloadParserOf(v).info
		info.Vertical = v
		info.Location = slices.Clone(info.Location)
		info.Fields = slices.Clone(info.Fields)
		info.Severities = slices.Clone(info.Severities)
		out = append(out, info)
	}
	for _, v := range StandardVerticals {
		add(v)
	}
	for _, v := range verticals {
		add(v)
	}
	slices.SortFunc(out, func(a, b ParserInfo) int { return cmp.Compare(a.Vertical, b.Vertical) })
	return out
}

// ParsePayload runs the parser of vertical over payload (raw JSON; nil/empty or JSON null
// = no payload). A payload that is not a JSON object is Invalid("payload", ...). Malformed
// values are Invalid("payload.<field>", ...) naming the field, e.g. "payload.lat".
//
// Location comes from lat+lng, else latitude+longitude, else location, else geometry (a
// GeoJSON Point, coordinates [lng, lat]); JSON null counts as absent. Only the fields
// listed in ParserInfo.Fields are read; the rest of the payload stays opaque.
func ParsePayload(vertical string, payload json.RawMessage) (ParsedPayload, error) {
	var out ParsedPayload
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || string(payload) == "null" {
		return out, nil
	}
	if payload[0] != '{' {
		return out, Invalid("payload", "payload must be a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return out, Invalid("payload", "payload is not a valid JSON object")
	}
	p := payloadParserOf(vertical)
	if err := parseLocation(m, &out); err != nil {
		return ParsedPayload{}, err
	}
	if raw, ok := payloadField(m, "required_equipment"); ok {
		eq, err := parseRequiredEquipment(raw)
		if err != nil {
			return ParsedPayload{}, err
		}
		out.RequiredEquipment = eq
	}
	if raw, ok := payloadField(m, "severity"); ok {
		sev, err := p.severity(raw)
		if err != nil {
			return ParsedPayload{}, err
		}
		out.Severity = sev
	}
	return out, nil
}

// payloadField returns the raw value of key; absent and JSON null are both absent.
func payloadField(m map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	raw, ok := m[key]
	if !ok {
		return nil, false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// payloadNumber reads a JSON number (never a string holding one).
func payloadNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// payloadString reads a JSON string.
func payloadString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// payloadStringEnd returns the length of the JSON string that b starts with, or -1 when b
// does not start with one. b comes from an object json.Unmarshal accepted, so it is valid
// JSON: the string has a closing quote.
func payloadStringEnd(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return -1
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// parseLocation fills out.Lat and out.Lng from the first location form present.
func parseLocation(m map[string]json.RawMessage, out *ParsedPayload) error {
	for _, pair := range [...][2]string{{"lat", "lng"}, {"latitude", "longitude"}} {
		if found, err := parseLatLngPair(m, pair[0], pair[1], out); found || err != nil {
			return err
		}
	}
	for _, key := range [...]string{"location", "geometry"} {
		if raw, ok := payloadField(m, key); ok {
			return parsePoint("payload."+key, raw, out)
		}
	}
	return nil
}

// parseLatLngPair reads two sibling number fields; found reports whether either is present.
func parseLatLngPair(m map[string]json.RawMessage, latKey, lngKey string, out *ParsedPayload) (found bool, err error) {
	latRaw, hasLat := payloadField(m, latKey)
	lngRaw, hasLng := payloadField(m, lngKey)
	switch {
	case !hasLat && !hasLng:
		return false, nil
	case !hasLng:
		return true, Invalid("payload."+lngKey, "payload.%s is required with payload.%s", lngKey, latKey)
	case !hasLat:
		return true, Invalid("payload."+latKey, "payload.%s is required with payload.%s", latKey, lngKey)
	}
	lat, ok := payloadNumber(latRaw)
	if !ok {
		return true, Invalid("payload."+latKey, "payload.%s must be a number", latKey)
	}
	lng, ok := payloadNumber(lngRaw)
	if !ok {
		return true, Invalid("payload."+lngKey, "payload.%s must be a number", lngKey)
	}
	return true, setLatLng(out, lat, lng, "payload."+latKey, "payload."+lngKey)
}

// geoJSONPoint is the GeoJSON Point of payload.location and payload.geometry.
type geoJSONPoint struct {
	Type        string    `json:"type"`
	Coordinates []float64 `json:"coordinates"`
}

// parsePoint reads a GeoJSON Point: {"type":"Point","coordinates":[lng, lat]} with an
// optional altitude.
func parsePoint(field string, raw json.RawMessage, out *ParsedPayload) error {
	var pt geoJSONPoint
	if raw[0] != '{' || json.Unmarshal(raw, &pt) != nil || pt.Type != "Point" ||
		len(pt.Coordinates) < 2 || len(pt.Coordinates) > 3 {
		return Invalid(field, `%s must be a GeoJSON Point {"type": "Point", "coordinates": [lng, lat]}`, field)
	}
	return setLatLng(out, pt.Coordinates[1], pt.Coordinates[0], field, field)
}

// setLatLng checks the ranges and stores the position.
func setLatLng(out *ParsedPayload, lat, lng float64, latField, lngField string) error {
	latName, lngName := latField, lngField
	if latField == lngField { // one GeoJSON field holds both
		latName, lngName = latField+" latitude", lngField+" longitude"
	}
	if !ValidLatLng(lat, 0) {
		return Invalid(latField, "%s must be between -90 and 90", latName)
	}
	if !ValidLatLng(0, lng) {
		return Invalid(lngField, "%s must be between -180 and 180", lngName)
	}
	out.Lat, out.Lng = &lat, &lng
	return nil
}

// parseRequiredEquipment reads an array of non-empty strings or one comma-separated
// string (empty pieces of which are skipped), and normalises it.
func parseRequiredEquipment(raw json.RawMessage) ([]string, error) {
	const field = "payload.required_equipment"
	var items []string
	switch raw[0] {
	case '"':
		s, ok := payloadString(raw)
		if !ok {
			return nil, Invalid(field, "%s must be an array of strings or a comma-separated string", field)
		}
		for piece := range strings.SplitSeq(s, ",") {
			if piece = strings.TrimSpace(piece); piece != "" {
				items = append(items, piece)
			}
		}
	case '[':
		rest := bytes.TrimSpace(raw[1:])
		for len(rest) > 0 && rest[0] != ']' {
			end := payloadStringEnd(rest)
			if end < 0 {
				return nil, Invalid(field, "%s items must be strings", field)
			}
			if len(items) == maxRequiredEquipment {
				return nil, Invalid(field, "%s has more than %d items", field, maxRequiredEquipment)
			}
			s, ok := payloadString(rest[:end])
			if !ok {
				return nil, Invalid(field, "%s items must be strings", field)
			}
			if s = strings.TrimSpace(s); s == "" {
				return nil, Invalid(field, "%s items must not be empty", field)
			}
			items = append(items, s)
			rest = bytes.TrimSpace(rest[end:])
			if len(rest) > 0 && rest[0] == ',' {
				rest = bytes.TrimSpace(rest[1:])
			}
		}
	default:
		return nil, Invalid(field, "%s must be an array of strings or a comma-separated string", field)
	}
	if len(items) > maxRequiredEquipment {
		return nil, Invalid(field, "%s has more than %d items", field, maxRequiredEquipment)
	}
	if len(items) == 0 {
		return nil, nil
	}
	for i, s := range items {
		if utf8.RuneCountInString(s) > maxRequiredEquipmentLen {
			return nil, Invalid(field, "%s items must be at most %d characters", field, maxRequiredEquipmentLen)
		}
		items[i] = strings.ToLower(s)
	}
	slices.Sort(items)
	return slices.Compact(items), nil
}

// severity normalises payload.severity to one of the four levels.
func (p *payloadParser) severity(raw json.RawMessage) (string, error) {
	const field = "payload.severity"
	if s, ok := payloadString(raw); ok {
		if level, ok := p.levels[strings.ToLower(strings.TrimSpace(s))]; ok {
			return level, nil
		}
		return "", Invalid(field, "%s is not a %s severity; accepted: %s", field, p.info.Name, p.accepted)
	}
	if !p.numeric {
		return "", Invalid(field, "%s must be a string, one of: %s", field, p.accepted)
	}
	if n, ok := payloadNumber(raw); ok && n == math.Trunc(n) && n >= 1 && n <= 4 {
		return severityLevels[int(n)-1], nil
	}
	return "", Invalid(field, "%s is not a %s severity; accepted: %s", field, p.info.Name, p.accepted)
}
