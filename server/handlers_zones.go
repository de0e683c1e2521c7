package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/julienschmidt/httprouter"
)

// zoneBody is the body of POST and PATCH /v1/zones: the boundary is decoded apart, so
// that any malformed boundary is a validation_error naming `boundary`; the write's
// optional body key comes in the same decode.
type zoneBody struct {
	Code     *string         `json:"code"`
	Name     *string         `json:"name"`
	Boundary json.RawMessage `json:"boundary"`
	bodyKey
	SiteID *string `json:"site_id"`
}

// polygon decodes a boundary; absent or null is nil.
func (b *zoneBody) polygon() (*model.Polygon, error) {
	raw := bytes.TrimSpace(b.Boundary)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var p model.Polygon
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, model.Invalid("boundary", `boundary must be a GeoJSON Polygon: {"type": "Polygon", "coordinates": [[[lng, lat], ...]]}`)
	}
	return &p, nil
}

func (s *Server) handleCreateZone(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[zoneBody](r)
	if err != nil {
		return err
	}
	boundary, err := in.polygon()
	if err != nil {
		return err
	}
	zi := model.ZoneInput{Boundary: boundary, SiteID: in.SiteID}
	if in.Code != nil {
		zi.Code = *in.Code
	}
	if in.Name != nil {
		zi.Name = *in.Name
	}
	return s.write(w, r, body, http.StatusCreated, nil, func(wr *model.Write) error {
		_, err := s.eng.CreateZone(r.Context(), principal(r), zi, wr)
		return err
	})
}

func (s *Server) handleUpdateZone(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, in, err := decodeBody[zoneBody](r)
	if err != nil {
		return err
	}
	boundary, err := in.polygon()
	if err != nil {
		return err
	}
	patch := model.ZonePatch{Code: in.Code, Name: in.Name, Boundary: boundary, SiteID: in.SiteID}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.UpdateZone(r.Context(), principal(r), ps.ByName("code"), patch, wr)
		return err
	})
}

func (s *Server) handleDeleteZone(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	return s.write(w, r, nil, http.StatusOK, deletedView, func(wr *model.Write) error {
		_, err := s.eng.DeleteZone(r.Context(), principal(r), ps.ByName("code"), wr)
		return err
	})
}

// handleListZones answers GET /v1/zones and GET /v1/tenant/zones alike.
func (s *Server) handleListZones(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	zones, next, err := s.eng.Zones(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, zones, next)
	return nil
}

func (s *Server) handleGetZone(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	z, err := s.eng.Zone(r.Context(), principal(r), ps.ByName("code"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, z)
}

// connectivityBody is the body of POST /v1/connectivity/report: the input and
// the write's optional body key, in one decode.
type connectivityBody struct {
	model.ConnectivityReport
	bodyKey
}

func (s *Server) handleReportConnectivity(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[connectivityBody](r)
	if err != nil {
		return err
	}
	return s.write(w, r, body, http.StatusOK, nil, func(wr *model.Write) error {
		_, err := s.eng.ReportConnectivity(r.Context(), principal(r), in.ConnectivityReport, wr)
		return err
	})
}

// handleConnectivityStatus answers one zone's status with ?zone_code=…, and without it
// (or with it empty) the list of every zone's status, ordered by code.
func (s *Server) handleConnectivityStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if code := r.URL.Query().Get("zone_code"); code != "" {
		st, err := s.eng.ZoneConnectivity(r.Context(), principal(r), code)
		if err != nil {
			return err
		}
		return writeOne(w, r, http.StatusOK, st)
	}
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	sts, next, err := s.eng.ZonesConnectivity(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, sts, next)
	return nil
}
