package model_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/model/modeltest"
)

// The geometry fixtures of engine/model/modeltest under short names.
var (
	square  = modeltest.Square
	polygon = modeltest.Polygon
)

func near(a, b, eps float64) bool { return math.Abs(a-b) <= eps }

func TestPolygon_Validate(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for name, p := range map[string]*model.Polygon{
			"Square":     polygon(square(2.0, 48.0, 1)),
			"Clockwise":  polygon([][]float64{{0, 0}, {0, 1}, {1, 1}, {1, 0}, {0, 0}}),
			"Triangle":   polygon([][]float64{{0, 0}, {1, 0}, {0, 1}, {0, 0}}),
			"WithHole":   polygon(square(0, 0, 10), square(4, 4, 2)),
			"Altitude":   polygon([][]float64{{0, 0, 100}, {1, 0, 100}, {1, 1, 100}, {0, 0, 100}}),
			"Extremes":   polygon([][]float64{{-180, -90}, {180, -90}, {180, 90}, {-180, -90}}),
			"TinyButNot": polygon(square(2.35, 48.85, 0.0001)), // about 11 m a side
		} {
			if err := p.Validate("boundary"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	for name, p := range map[string]*model.Polygon{
		"ErrWrongType":      {Type: "MultiPolygon", Coordinates: [][][]float64{square(0, 0, 1)}},
		"ErrNoType":         {Coordinates: [][][]float64{square(0, 0, 1)}},
		"ErrNoRings":        polygon(),
		"ErrOpenRing":       polygon([][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}}),
		"ErrOpenRingLng":    polygon([][]float64{{0, 0}, {1, 0}, {1, 1}, {0.5, 0}}),
		"ErrThreePositions": polygon([][]float64{{0, 0}, {1, 0}, {0, 0}}),
		"ErrEmptyRing":      polygon([][]float64{}),
		"ErrShortPosition":  polygon([][]float64{{0, 0}, {1}, {1, 1}, {0, 0}}),
		"ErrLongPosition":   polygon([][]float64{{0, 0}, {1, 0, 0, 0}, {1, 1}, {0, 0}}),
		"ErrLatOutOfRange":  polygon([][]float64{{0, 0}, {1, 0}, {1, 91}, {0, 0}}),
		"ErrLngOutOfRange":  polygon([][]float64{{0, 0}, {181, 0}, {1, 1}, {0, 0}}),
		"ErrNaN":            polygon([][]float64{{0, 0}, {math.NaN(), 0}, {1, 1}, {0, 0}}),
		"ErrInf":            polygon([][]float64{{0, 0}, {1, math.Inf(1)}, {1, 1}, {0, 0}}),
		"ErrZeroArea":       polygon([][]float64{{0, 0}, {1, 1}, {2, 2}, {0, 0}}),
		"ErrSamePoint":      polygon([][]float64{{3, 4}, {3, 4}, {3, 4}, {3, 4}}),
		"ErrBadHole":        polygon(square(0, 0, 10), [][]float64{{4, 4}, {5, 4}, {4, 4}}),
		"ErrOpenHole":       polygon(square(0, 0, 10), [][]float64{{4, 4}, {5, 4}, {5, 5}, {4, 5}}),
	} {
		t.Run(name, func(t *testing.T) {
			modeltest.AssertInvalid(t, p.Validate("boundary"), "boundary")
		})
	}
}

func TestPolygon_Centroid(t *testing.T) {
	t.Run("Square", func(t *testing.T) {
		c := polygon(square(2, 48, 2)).Centroid()
		if !near(c.Lat, 49, 1e-9) || !near(c.Lng, 3, 1e-9) {
			t.Fatalf("centroid = %+v, want lat 49, lng 3", c)
		}
	})
	t.Run("Clockwise", func(t *testing.T) {
		c := polygon([][]float64{{0, 0}, {0, 2}, {2, 2}, {2, 0}, {0, 0}}).Centroid()
		if !near(c.Lat, 1, 1e-9) || !near(c.Lng, 1, 1e-9) {
			t.Fatalf("centroid = %+v, want (1, 1)", c)
		}
	})
	t.Run("AreaNotVertexMean", func(t *testing.T) {
		// An L-shape: the area centroid differs from the mean of its vertices.
		l := [][]float64{{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}, {0, 0}}
		c := polygon(l).Centroid()
		if !near(c.Lat, 5.0/6, 1e-9) || !near(c.Lng, 5.0/6, 1e-9) {
			t.Fatalf("centroid = %+v, want (5/6, 5/6)", c)
		}
	})
	t.Run("Triangle", func(t *testing.T) {
		c := polygon([][]float64{{0, 0}, {3, 0}, {0, 3}, {0, 0}}).Centroid()
		if !near(c.Lat, 1, 1e-9) || !near(c.Lng, 1, 1e-9) {
			t.Fatalf("centroid = %+v, want (1, 1)", c)
		}
	})
	t.Run("FarFromOrigin", func(t *testing.T) {
		c := polygon(square(179.998, -89.998, 0.001)).Centroid()
		if !near(c.Lat, -89.9975, 1e-9) || !near(c.Lng, 179.9985, 1e-9) {
			t.Fatalf("centroid = %+v", c)
		}
	})
}

func TestPolygon_Contains(t *testing.T) {
	// A 10° square with a 2° hole at (4..6, 4..6).
	p := polygon(square(0, 0, 10), square(4, 4, 2))
	for name, tc := range map[string]struct {
		lat, lng float64
		want     bool
	}{
		"Inside":         {1, 1, true},
		"InsideNearHole": {5, 3.9, true},
		"InHole":         {5, 5, false},
		"Outside":        {11, 5, false},
		"OutsideWest":    {5, -0.1, false},
		"OutsideSouth":   {-1, 5, false},
		"AboveHole":      {7, 5, true},
		"SwappedOrder":   {5, 11, false}, // lat/lng are not [lng, lat]
	} {
		if got := p.Contains(tc.lat, tc.lng); got != tc.want {
			t.Errorf("%s: Contains(%v, %v) = %v, want %v", name, tc.lat, tc.lng, got, tc.want)
		}
	}
	t.Run("LngLatOrder", func(t *testing.T) {
		// A tall thin zone around Paris: lng 2.2..2.5, lat 48.8..48.9.
		paris := polygon([][]float64{{2.2, 48.8}, {2.5, 48.8}, {2.5, 48.9}, {2.2, 48.9}, {2.2, 48.8}})
		if !paris.Contains(48.8566, 2.3522) {
			t.Fatal("Paris is not in its zone")
		}
		if paris.Contains(2.3522, 48.8566) {
			t.Fatal("Contains mixed up lat and lng")
		}
	})
	t.Run("Concave", func(t *testing.T) {
		l := polygon([][]float64{{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}, {0, 0}})
		if !l.Contains(1.5, 0.5) || l.Contains(1.5, 1.5) {
			t.Fatal("the notch of an L-shape is misjudged")
		}
	})
	t.Run("Empty", func(t *testing.T) {
		if (&model.Polygon{Type: "Polygon"}).Contains(0, 0) {
			t.Fatal("an empty polygon contains a point")
		}
	})
}

func TestPolygon_JSON(t *testing.T) {
	var p model.Polygon
	raw := `{"type":"Polygon","coordinates":[[[2.2,48.8],[2.5,48.8],[2.5,48.9],[2.2,48.8]]]}`
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate("boundary"); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	if string(b) != raw {
		t.Fatalf("round trip = %s, want %s", b, raw)
	}
}

func TestValidLatLng(t *testing.T) {
	for _, tc := range []struct {
		lat, lng float64
		want     bool
	}{
		{0, 0, true}, {90, 180, true}, {-90, -180, true}, {48.8566, 2.3522, true},
		{90.0001, 0, false}, {-90.0001, 0, false}, {0, 180.0001, false}, {0, -180.0001, false},
		{math.NaN(), 0, false}, {0, math.NaN(), false}, {math.Inf(1), 0, false}, {0, math.Inf(-1), false},
	} {
		if got := model.ValidLatLng(tc.lat, tc.lng); got != tc.want {
			t.Errorf("ValidLatLng(%v, %v) = %v, want %v", tc.lat, tc.lng, got, tc.want)
		}
	}
}

func TestDistanceKm(t *testing.T) {
	t.Run("ParisLondon", func(t *testing.T) {
		d := model.DistanceKm(48.8566, 2.3522, 51.5074, -0.1278)
		if math.Abs(d-343.5)/343.5 > 0.005 {
			t.Fatalf("Paris–London = %.2f km, want 343.5 km ± 0.5%%", d)
		}
		if back := model.DistanceKm(51.5074, -0.1278, 48.8566, 2.3522); !near(back, d, 1e-9) {
			t.Fatalf("distance is not symmetric: %v vs %v", back, d)
		}
	})
	t.Run("Zero", func(t *testing.T) {
		if d := model.DistanceKm(48.8566, 2.3522, 48.8566, 2.3522); d != 0 {
			t.Fatalf("distance to itself = %v", d)
		}
	})
	t.Run("OneDegreeOfLatitude", func(t *testing.T) {
		if d := model.DistanceKm(0, 0, 1, 0); !near(d, 111.195, 0.01) {
			t.Fatalf("one degree of latitude = %v km, want 111.195", d)
		}
	})
	t.Run("Antipodes", func(t *testing.T) {
		d := model.DistanceKm(0, 0, 0, 180)
		if !near(d, math.Pi*6371.0088, 1e-6) || math.IsNaN(d) {
			t.Fatalf("half the circumference = %v km", d)
		}
	})
	t.Run("AcrossTheAntimeridian", func(t *testing.T) {
		if d := model.DistanceKm(0, 179.5, 0, -179.5); !near(d, 111.195, 0.01) {
			t.Fatalf("across the antimeridian = %v km, want about 111", d)
		}
	})
}
