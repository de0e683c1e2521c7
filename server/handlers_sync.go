package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
	"github.com/julienschmidt/httprouter"
)

// syncRoute scopes the Idempotency-Key of a batch.
const syncRoute = "POST /v1/sync/batch"

// syncBody is the body of POST /v1/sync/batch with the optional body form of its
// Idempotency-Key.
type syncBody struct {
	model.SyncBatchInput
	Key *string `json:"idempotency_key"`
}

// syncEnvelope is the body with its items left undecoded, read when the whole body does
// not decode at once.
type syncEnvelope struct {
	Events     []json.RawMessage `json:"events"`
	DeviceID   string            `json:"device_id"`
	CapturedAt string            `json:"captured_at"`
	SentAt     *string           `json:"sent_at"`
	Key        *string           `json:"idempotency_key"`
}

func (s *Server) handleSyncBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := principal(r)
	// Refuse a token before reading up to 8 MiB.
	if err := engine.CanSyncBatch(p); err != nil {
		return err
	}
	body, err := readRawBody(r, engine.MaxBatchBytes)
	if model.IsKind(err, model.KindPayloadTooLarge) {
		return engine.BatchTooLarge()
	}
	if err != nil {
		return err
	}
	in, err := decodeSyncBatch(body)
	if err != nil {
		return err
	}
	key := r.Header.Get(headerIdempotencyKey)
	if key == "" && in.Key != nil {
		key = *in.Key
	}
	var k *model.IdempotencyKey
	if key != "" {
		k = &model.IdempotencyKey{Route: syncRoute, Key: key, Fingerprint: engine.Fingerprint(s.fpSecret, body)}
	}
	reqID := requestID(r)
	reply, err := s.eng.SyncBatch(r.Context(), p, in.SyncBatchInput, k, model.SyncRender{
		Batch: func(v any) (model.Reply, error) {
			b, err := render(v, reqID)
			return model.Reply{Status: http.StatusOK, Body: b, RequestID: reqID}, err
		},
		Event: func(v any) (model.Reply, error) {
			b, err := renderAccepted(v, reqID)
			return model.Reply{Status: http.StatusCreated, Body: b, RequestID: reqID}, err
		},
	})
	if err != nil {
		return err
	}
	writeReply(w, reply)
	return nil
}

// decodeSyncBatch decodes a batch in one pass. When that fails, the envelope is decoded
// alone and then each item by itself: an item whose JSON does not fit (a field of the wrong
// type) or is not strict JSON (engine.CheckJSONItem) carries its error and is rejected
// alone, while a body that is not JSON, or whose own fields do not fit or are not strict
// JSON, is refused whole.
func decodeSyncBatch(body []byte) (syncBody, error) {
	var in syncBody
	if len(bytes.TrimSpace(body)) == 0 {
		return in, nil
	}
	if err := notObject(body); err != nil {
		return in, err
	}
	if strictjson.CheckJSON(body) == nil {
		// json.Unmarshal reads body in place (a Decoder would copy up to 8 MiB first) and
		// refuses anything after the object, as decodeJSON does.
		err := json.Unmarshal(body, &in)
		if err == nil {
			return in, nil
		}
		if err = jsonError(err); model.IsKind(err, model.KindInvalidJSON) {
			return in, err
		}
	} else if err := strictjson.CheckJSONEnvelope(body, "events"); err != nil {
		return in, err
	}
	var env syncEnvelope
	if err := decodeJSON(body, &env); err != nil {
		return in, err
	}
	in = syncBody{SyncBatchInput: model.SyncBatchInput{DeviceID: env.DeviceID, CapturedAt: env.CapturedAt, SentAt: env.SentAt}, Key: env.Key}
	if env.Events != nil {
		in.Events = make([]model.SyncItemInput, len(env.Events))
	}
	for i, raw := range env.Events {
		it := &in.Events[i]
		if err := json.Unmarshal(raw, it); err != nil {
			it.Err = itemJSONError(err)
		}
		if err := strictjson.CheckJSONItem(raw, "events"); err != nil {
			it.Err = err
		}
	}
	return in, nil
}

// itemJSONError is the reason of an item that does not decode.
func itemJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return model.Invalid("", "each item of events must be a JSON object")
	}
	return jsonError(err)
}

// renderAccepted is render for the answer to an accepted event (POST /v1/events, each
// item of a batch), written by hand when auto-dispatch did not run and the payload raised
// no warning (the common case): the same bytes without reflection. Its fields are then
// ids, enums and a timestamp, none needing escapes. The buffer has room for the newline
// writeBody adds.
func renderAccepted(v any, reqID string) ([]byte, error) {
	a, ok := v.(model.EventAccepted)
	if !ok || a.Dispatch != nil || a.RequiresManual || len(a.PayloadWarnings) > 0 {
		return render(v, reqID)
	}
	b := make([]byte, 0, 161+len(reqID))
	b = append(b, `{"event_id":"`...)
	b = append(b, a.EventID...)
	b = append(b, `","status":"`...)
	b = append(b, a.Status...)
	b = append(b, `","channel_selected":"`...)
	b = append(b, a.ChannelSelected...)
	b = append(b, `","created_at":"`...)
	b = a.CreatedAt.UTC().AppendFormat(b, model.TimeLayout)
	b = append(b, `","request_id":`...)
	b = strconv.AppendQuote(b, reqID)
	return append(b, '}'), nil
}

func (s *Server) handleSyncStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b, err := s.eng.SyncStatus(r.Context(), principal(r), r.URL.Query().Get("batch_id"))
	if err != nil {
		return err
	}
	return writeOne(w, r, http.StatusOK, b)
}
