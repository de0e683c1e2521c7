package engine

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/payload"
)

// ListParsers is GET /v1/parsers: a page of the parsers of the tenant's verticals, by
// vertical (parsers are not records, so there is no newest; the order is stable), after
// page.Cursor. A vertical given keeps that one, and a vertical the tenant does not have
// (the empty one included) is a validation_error on `vertical`.
func ListParsers(verticals []string, vertical *string, page model.Page) ([]payload.ParserInfo, string, error) {
	all := payload.Parsers(verticals)
	var keep func(*payload.ParserInfo) bool
	if vertical != nil {
		v := *vertical
		found := false
		for _, p := range all {
			found = found || p.Vertical == v
		}
		if !found {
			return nil, "", model.Invalid("vertical", "vertical must be one of the tenant's verticals")
		}
		keep = func(p *payload.ParserInfo) bool { return p.Vertical == v }
	}
	byVertical := model.ListOrder[payload.ParserInfo]{Key: func(p *payload.ParserInfo) string { return p.Vertical }, Valid: model.VerticalRE.MatchString}
	return model.PageList(all, byVertical, keep, page)
}
