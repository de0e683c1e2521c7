package payload

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// ParsedPayload is what a vertical's parser reads from an event payload.
type ParsedPayload struct {
	Lat, Lng          *float64 // both or neither
	RequiredEquipment []string // lowercase, trimmed, deduplicated, sorted; nil when absent
	Severity          string   // normalised; "" when absent or unusable
	// Warnings say, one short sentence each naming its field, which fields the parser
	// reads were in a form it cannot use and were ignored; nil when none.
	Warnings []string
}

// ParserInfo describes one parser for GET /v1/parsers.
type ParserInfo struct {
	Vertical    string   `json:"vertical"`
	Name        string   `json:"name"` // e.g. "healthcare.v1"
	Description string   `json:"description"`
	Location    []string `json:"location"` // accepted location forms, e.g. ["lat/lng","latitude/longitude","location: GeoJSON Point"]
	Fields      []string `json:"fields"`   // payload fields it reads
	// Severities are the severity values the parser maps, as compared after
	// normalisation (trimmed, lowercase): the four levels first, then the vertical's
	// synonyms. Every one of them is stored as one of critical, high, medium, low.
	Severities []string `json:"severities"`
}

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
	accepted string // the values it maps, for warnings
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
	out := make([]ParserInfo, 0, len(model.StandardVerticals)+len(verticals))
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
	for _, v := range model.StandardVerticals {
		add(v)
	}
	for _, v := range verticals {
		add(v)
	}
	slices.SortFunc(out, func(a, b ParserInfo) int { return cmp.Compare(a.Vertical, b.Vertical) })
	return out
}

// Parse runs the parser of vertical over payload (raw JSON; nil/empty or JSON null
// = no payload). The payload is opaque (docs/rules.md): the only error is a payload that is
// not a JSON object, Invalid("payload", ...). What the parser reads (ParserInfo.Fields) in
// a form it cannot use is left out of the result and reported in ParsedPayload.Warnings;
// the event is accepted all the same.
//
// Location comes from the first usable form of lat+lng, latitude+longitude (JSON numbers
// or strings holding one), location, geometry (a GeoJSON Point, coordinates [lng, lat]);
// JSON null counts as absent, a form present but unusable is warned about and the next
// one tried, and the forms after the one used are not read.
func Parse(vertical string, payload json.RawMessage) (ParsedPayload, error) {
	var out ParsedPayload
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || string(payload) == "null" {
		return out, nil
	}
	if payload[0] != '{' {
		return out, model.Invalid("payload", "payload must be a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return out, model.Invalid("payload", "payload is not a valid JSON object")
	}
	p := payloadParserOf(vertical)
	parseLocation(m, &out)
	if raw, ok := payloadField(m, "required_equipment"); ok {
		eq, warning := parseRequiredEquipment(raw)
		out.RequiredEquipment = eq
		out.warn(warning)
	}
	if raw, ok := payloadField(m, "severity"); ok {
		sev, warning := p.severity(raw)
		out.Severity = sev
		out.warn(warning)
	}
	return out, nil
}

// warn adds a warning about a field that was ignored; "" adds nothing.
func (out *ParsedPayload) warn(warning string) {
	if warning != "" {
		out.Warnings = append(out.Warnings, warning+"; ignored")
	}
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

// payloadCoordinate reads a JSON number, or a JSON string holding exactly one in JSON's
// own syntax, spaces around it allowed ("45.7", " -4.8 "): a form that cannot be read
// two ways. "45,7", "0x2D", "Inf" and "45.7N" are not numbers.
func payloadCoordinate(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return payloadNumber(raw)
	}
	s, ok := payloadString(raw)
	if !ok {
		return 0, false
	}
	b := []byte(strings.TrimSpace(s))
	if !json.Valid(b) {
		return 0, false
	}
	return payloadNumber(b)
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

// parseLocation fills out.Lat and out.Lng from the first usable location form, warning
// about each form before it that is present but unusable.
func parseLocation(m map[string]json.RawMessage, out *ParsedPayload) {
	for _, pair := range [...][2]string{{"lat", "lng"}, {"latitude", "longitude"}} {
		if parseLatLngPair(m, pair[0], pair[1], out) {
			return
		}
	}
	for _, key := range [...]string{"location", "geometry"} {
		if raw, ok := payloadField(m, key); ok {
			warning := parsePoint("payload."+key, raw, out)
			if warning == "" {
				return
			}
			out.warn(warning)
		}
	}
}

// parseLatLngPair reads two sibling coordinate fields into out and reports whether it
// did; a pair present but unusable is warned about.
func parseLatLngPair(m map[string]json.RawMessage, latKey, lngKey string, out *ParsedPayload) bool {
	latRaw, hasLat := payloadField(m, latKey)
	lngRaw, hasLng := payloadField(m, lngKey)
	switch {
	case !hasLat && !hasLng:
		return false
	case !hasLng:
		out.warn("payload." + latKey + " is given without payload." + lngKey)
		return false
	case !hasLat:
		out.warn("payload." + lngKey + " is given without payload." + latKey)
		return false
	}
	lat, latOK := payloadCoordinate(latRaw)
	latOK = latOK && model.ValidLatLng(lat, 0)
	lng, lngOK := payloadCoordinate(lngRaw)
	lngOK = lngOK && model.ValidLatLng(0, lng)
	// A position is both coordinates: one unusable leaves the other unused too.
	ignored := "; payload." + latKey + " and payload." + lngKey + " ignored"
	if !latOK {
		out.Warnings = append(out.Warnings, "payload."+latKey+" must be a number between -90 and 90"+ignored)
	}
	if !lngOK {
		out.Warnings = append(out.Warnings, "payload."+lngKey+" must be a number between -180 and 180"+ignored)
	}
	if !latOK || !lngOK {
		return false
	}
	out.Lat, out.Lng = &lat, &lng
	return true
}

// geoJSONPoint is the GeoJSON Point of payload.location and payload.geometry.
type geoJSONPoint struct {
	Type        string    `json:"type"`
	Coordinates []float64 `json:"coordinates"`
}

// parsePoint reads a GeoJSON Point, {"type":"Point","coordinates":[lng, lat]} with an
// optional altitude, into out; it answers why it could not ("" when it did).
func parsePoint(field string, raw json.RawMessage, out *ParsedPayload) string {
	var pt geoJSONPoint
	if raw[0] != '{' || json.Unmarshal(raw, &pt) != nil || pt.Type != "Point" ||
		len(pt.Coordinates) < 2 || len(pt.Coordinates) > 3 {
		return field + ` must be a GeoJSON Point {"type": "Point", "coordinates": [lng, lat]}`
	}
	lat, lng := pt.Coordinates[1], pt.Coordinates[0]
	if !model.ValidLatLng(lat, 0) {
		return field + " latitude must be between -90 and 90"
	}
	if !model.ValidLatLng(0, lng) {
		return field + " longitude must be between -180 and 180"
	}
	out.Lat, out.Lng = &lat, &lng
	return ""
}

// parseRequiredEquipment reads an array of non-empty strings or one comma-separated
// string (empty pieces of which are skipped), and normalises it. A value it cannot use
// as a whole gives nil and the reason.
func parseRequiredEquipment(raw json.RawMessage) ([]string, string) {
	const field = "payload.required_equipment"
	var items []string
	switch raw[0] {
	case '"':
		s, ok := payloadString(raw)
		if !ok {
			return nil, field + " must be an array of strings or a comma-separated string"
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
				return nil, field + " items must be strings"
			}
			if len(items) == model.MaxRequiredEquipment {
				return nil, fmt.Sprintf("%s has more than %d items", field, model.MaxRequiredEquipment)
			}
			s, ok := payloadString(rest[:end])
			if !ok {
				return nil, field + " items must be strings"
			}
			if s = strings.TrimSpace(s); s == "" {
				return nil, field + " items must not be empty"
			}
			items = append(items, s)
			rest = bytes.TrimSpace(rest[end:])
			if len(rest) > 0 && rest[0] == ',' {
				rest = bytes.TrimSpace(rest[1:])
			}
		}
	default:
		return nil, field + " must be an array of strings or a comma-separated string"
	}
	if len(items) > model.MaxRequiredEquipment {
		return nil, fmt.Sprintf("%s has more than %d items", field, model.MaxRequiredEquipment)
	}
	if len(items) == 0 {
		return nil, ""
	}
	for i, s := range items {
		if utf8.RuneCountInString(s) > model.MaxRequiredEquipmentLen {
			return nil, fmt.Sprintf("%s items must be at most %d characters", field, model.MaxRequiredEquipmentLen)
		}
		items[i] = strings.ToLower(s)
	}
	slices.Sort(items)
	return slices.Compact(items), ""
}

// severity normalises payload.severity to one of the four levels; a value it cannot map
// gives "" and the reason, which lists the values it can.
func (p *payloadParser) severity(raw json.RawMessage) (string, string) {
	if s, ok := payloadString(raw); ok {
		if level, ok := p.levels[strings.ToLower(strings.TrimSpace(s))]; ok {
			return level, ""
		}
	} else if n, ok := payloadNumber(raw); ok && p.numeric && n == math.Trunc(n) && n >= 1 && n <= 4 {
		return severityLevels[int(n)-1], ""
	}
	return "", "payload.severity is not one of the " + p.info.Name + " severities (" + p.accepted + ")"
}
