package engine

// ListParsers is GET /v1/parsers: a page of the parsers of the tenant's verticals, by
// vertical (parsers are not records, so there is no newest; the order is stable), after
// page.Cursor. A vertical given keeps that one, and a vertical the tenant does not have
// (the empty one included) is a validation_error on `vertical`.
func ListParsers(verticals []string, vertical *string, page Page) ([]ParserInfo, string, error) {
	all := Parsers(verticals)
	var keep func(*ParserInfo) bool
	if vertical != nil {
		v := *vertical
		found := false
		for _, p := range all {
			found = found || p.Vertical == v
		}
		if !found {
			return nil, "", Invalid("vertical", "vertical must be one of the tenant's verticals")
		}
		keep = func(p *ParserInfo) bool { return p.Vertical == v }
	}
	byVertical := listOrder[ParserInfo]{key: func(p *ParserInfo) string { return p.Vertical }, valid: verticalRE.MatchString}
	return pageList(all, byVertical, keep, page)
}
