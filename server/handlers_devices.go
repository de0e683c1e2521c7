package server

import (
	"encoding/json"
	"net/http"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
	"github.com/julienschmidt/httprouter"
)

// deviceBody is the body of POST /v1/devices/register: the input and
// the write's optional body key, in one decode.
type deviceBody struct {
	model.DeviceInput
	bodyKey
}

// handleRegisterDevice registers a device (POST /v1/devices/register): 201 for a new
// device, 200 when its hardware_id names one already registered.
func (s *Server) handleRegisterDevice(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, in, err := decodeBody[deviceBody](r)
	if err != nil {
		return err
	}
	key, err := s.idempotencyKey(r, body)
	if err != nil {
		return err
	}
	reqID := requestID(r)
	wr := &model.Write{Key: key, Render: func(v any) (model.Reply, error) {
		reg := v.(model.DeviceRegistered)
		status := http.StatusOK
		if reg.Created {
			status = http.StatusCreated
		}
		b, err := render(reg.Device, reqID)
		return model.Reply{Status: status, Body: b, RequestID: reqID}, err
	}}
	if _, _, err := s.eng.RegisterDevice(r.Context(), principal(r), in.DeviceInput, wr); err != nil {
		return err
	}
	writeReply(w, wr.Reply)
	return nil
}

// deviceSyncBody is the body of POST /v1/devices/sync: engine.DeviceSyncInput's fields
// (items left raw, each judged alone by the engine) and the write's optional body key,
// in one decode.
type deviceSyncBody struct {
	DeviceID   string            `json:"device_id"`
	Items      []json.RawMessage `json:"items"`
	AckThrough *model.Int        `json:"ack_through"`
	SentAt     *string           `json:"sent_at"`
	bodyKey
}

// handleSyncDevice runs a device sync (POST /v1/devices/sync, bodies up to 8 MiB).
func (s *Server) handleSyncDevice(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	body, err := readRawBody(r, maxBulkBody)
	if err != nil {
		return err
	}
	// Each item is judged alone, its strict JSON too (engine.SyncDevice).
	if err := strictjson.CheckJSONEnvelope(body, "items"); err != nil {
		return err
	}
	var in deviceSyncBody
	if err := decodeJSON(body, &in); err != nil {
		return err
	}
	var key *model.IdempotencyKey
	if r.Header.Get(headerIdempotencyKey) != "" || in.IdempotencyKey != nil {
		if key, err = s.idempotencyKey(r, &reqBody{raw: body, key: in.IdempotencyKey, found: true}); err != nil {
			return err
		}
		// SyncDevice checks its permission and input before the key; a refused key was
		// answered first when the server checked every key, and still is here.
		if key != nil {
			if err := engine.ValidateIdempotencyKey("idempotency_key", key.Key); err != nil {
				return err
			}
		}
	}
	reqID := requestID(r)
	renderAs := func(status int) model.Render {
		return func(v any) (model.Reply, error) {
			b, err := render(v, reqID)
			return model.Reply{Status: status, Body: b, RequestID: reqID}, err
		}
	}
	sync := model.DeviceSyncInput{DeviceID: in.DeviceID, Items: in.Items, AckThrough: in.AckThrough, SentAt: in.SentAt}
	reply, err := s.eng.SyncDevice(r.Context(), principal(r), key, sync,
		model.DeviceSyncRender{Event: renderAs(http.StatusCreated), Answer: renderAs(http.StatusOK)})
	if err != nil {
		return err
	}
	writeReply(w, reply)
	return nil
}

// deviceQueue is the answer of GET /v1/devices/:id/queue.
type deviceQueue struct {
	DeviceID   string             `json:"device_id"`
	Data       []model.QueueEntry `json:"data"`
	Count      int                `json:"count"`
	NextCursor string             `json:"next_cursor,omitempty"`
	RequestID  string             `json:"request_id"`
}

// handleDeviceQueue lists a device's pending queue (GET /v1/devices/:id/queue).
func (s *Server) handleDeviceQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	id := ps.ByName("id")
	items, next, err := s.eng.DeviceQueue(r.Context(), principal(r), id, page)
	if err != nil {
		return err
	}
	writeJSON(w, r, http.StatusOK, deviceQueue{DeviceID: id, Data: items, Count: len(items), NextCursor: next,
		RequestID: requestID(r)})
	return nil
}

// deviceCredential is the answer of POST /v1/devices/:id/credential: the token, shown
// once, and the device with its credential's state.
type deviceCredential struct {
	DeviceID   string        `json:"device_id"`
	Credential string        `json:"credential"`
	ExpiresAt  model.Time    `json:"expires_at"`
	Device     *model.Device `json:"device"`
	RequestID  string        `json:"request_id"`
}

// handleIssueDeviceCredential issues a device credential (POST /v1/devices/:id/credential,
// 201): a signed-in user who may sync the device gets a token that syncs that device and
// reads its queue, and nothing else.
func (s *Server) handleIssueDeviceCredential(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	// No body is needed; one that is sent is held to the rules of every body (a JSON
	// object: malformed JSON is 400 invalid_json, as everywhere).
	if err := noBody(r); err != nil {
		return err
	}
	g, err := s.eng.IssueDeviceCredential(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	token, err := s.issueDeviceToken(g)
	if err != nil {
		return model.Internal(err)
	}
	writeJSON(w, r, http.StatusCreated, deviceCredential{DeviceID: g.DeviceID, Credential: token,
		ExpiresAt: g.ExpiresAt, Device: g.Device, RequestID: requestID(r)})
	return nil
}

// handleRevokeDeviceCredential revokes a device's credential (DELETE
// /v1/devices/:id/credential, devices:manage): 200 with the device's id and deleted true,
// as every DELETE. Revoking again answers the same.
func (s *Server) handleRevokeDeviceCredential(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	d, err := s.eng.RevokeDeviceCredential(r.Context(), principal(r), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, deleted{ID: d.ID, Deleted: true})
}

// handleListDevices lists the tenant's devices, newest first (GET /v1/devices,
// devices:manage), with their sync state and their credentials' state.
func (s *Server) handleListDevices(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	devices, next, err := s.eng.Devices(r.Context(), principal(r), page)
	if err != nil {
		return err
	}
	writeList(w, r, devices, next)
	return nil
}
