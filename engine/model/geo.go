package model

import "math"

// LatLng is a position in degrees.
type LatLng struct {
	Lat float64 `json:"lat"`
	Lng float64 `json:"lng"`
}

// Polygon is a GeoJSON Polygon: rings of [lng, lat] positions, the first the outer
// boundary, the others holes.
type Polygon struct {
	Type        string        `json:"type"`
	Coordinates [][][]float64 `json:"coordinates"`
}

// ValidLatLng reports whether lat and lng are finite and in range.
func ValidLatLng(lat, lng float64) bool {
	return lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180
}

// Validate checks that p is a GeoJSON Polygon with closed rings of at least four valid
// positions and an outer ring of non-zero area.
func (p *Polygon) Validate(field string) error {
	if p.Type != "Polygon" {
		return Invalid(field, "%s must be a GeoJSON Polygon", field)
	}
	if len(p.Coordinates) == 0 {
		return Invalid(field, "%s needs an outer ring", field)
	}
	for i, ring := range p.Coordinates {
		if len(ring) < 4 {
			return Invalid(field, "%s ring %d needs at least 4 positions", field, i)
		}
		for _, pos := range ring {
			if len(pos) < 2 || len(pos) > 3 {
				return Invalid(field, "%s positions must be [lng, lat]", field)
			}
			if !ValidLatLng(pos[1], pos[0]) {
				return Invalid(field, "%s has a position out of range (lng -180..180, lat -90..90)", field)
			}
		}
		first, last := ring[0], ring[len(ring)-1]
		if first[0] != last[0] || first[1] != last[1] {
			return Invalid(field, "%s ring %d is not closed (first and last positions differ)", field, i)
		}
	}
	if _, ok := ringCentroid(p.Coordinates[0]); !ok {
		return Invalid(field, "%s outer ring has no area", field)
	}
	return nil
}

// Centroid returns the area centroid of the outer ring.
func (p *Polygon) Centroid() LatLng {
	c, _ := ringCentroid(p.Coordinates[0])
	return c
}

// ringCentroid computes the area centroid of a closed ring in the plane of its degrees;
// ok is false for a ring of zero area.
func ringCentroid(ring [][]float64) (LatLng, bool) {
	var a, cx, cy float64
	x0, y0 := ring[0][0], ring[0][1] // relative to the first vertex, for precision
	for i := 0; i+1 < len(ring); i++ {
		x1, y1 := ring[i][0]-x0, ring[i][1]-y0
		x2, y2 := ring[i+1][0]-x0, ring[i+1][1]-y0
		cross := x1*y2 - x2*y1
		a += cross
		cx += (x1 + x2) * cross
		cy += (y1 + y2) * cross
	}
	if math.Abs(a) < 1e-12 {
		return LatLng{}, false
	}
	a /= 2
	return LatLng{Lat: y0 + cy/(6*a), Lng: x0 + cx/(6*a)}, true
}

// Contains reports whether the point lies inside the polygon (inside the outer ring and
// outside every hole), by ray casting.
func (p *Polygon) Contains(lat, lng float64) bool {
	if len(p.Coordinates) == 0 || !inRing(p.Coordinates[0], lat, lng) {
		return false
	}
	for _, hole := range p.Coordinates[1:] {
		if inRing(hole, lat, lng) {
			return false
		}
	}
	return true
}

func inRing(ring [][]float64, lat, lng float64) bool {
	for _, pos := range ring {
		if len(pos) < 2 { // never in a validated polygon; a malformed one holds nothing
			return false
		}
	}
	in := false
	for i, j := 0, len(ring)-1; i < len(ring); j, i = i, i+1 {
		xi, yi := ring[i][0], ring[i][1]
		xj, yj := ring[j][0], ring[j][1]
		if (yi > lat) != (yj > lat) && lng < (xj-xi)*(lat-yi)/(yj-yi)+xi {
			in = !in
		}
	}
	return in
}

// DistanceKm is the great-circle distance between two positions (haversine, mean Earth
// radius 6371.0088 km).
func DistanceKm(lat1, lng1, lat2, lng2 float64) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLng := (lng2 - lng1) * rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(h)))
}
