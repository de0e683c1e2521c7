package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
	twilio "github.com/twilio/twilio-go/client"
)

// gatewaySMS is one message a fake gateway accepted.
type gatewaySMS struct{ To, Text, ID, Callback string }

// fakeAndroidPhone speaks the local server of SMS Gateway for Android: POST /message
// ({textMessage: {text}, phoneNumbers}, basic auth) answered 202 with the message's id,
// POST /webhooks ({id, url, event}) answered 201, and GET /health.
type fakeAndroidPhone struct {
	user, pass string
	mu         sync.Mutex
	msgs       []gatewaySMS
	hooks      []map[string]string
	bad        []string
}

func (p *fakeAndroidPhone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	if u, pw, ok := r.BasicAuth(); !ok || u != p.user || pw != p.pass {
		p.bad = append(p.bad, "auth "+r.URL.Path)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/message":
		var m struct {
			ID           string                `json:"id"`
			TextMessage  struct{ Text string } `json:"textMessage"`
			PhoneNumbers []string              `json:"phoneNumbers"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || len(m.PhoneNumbers) != 1 || m.TextMessage.Text == "" {
			p.bad = append(p.bad, fmt.Sprintf("message %q", raw))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"message":"invalid message"}`))
			return
		}
		// The app keeps the id it is given, else makes one.
		id := m.ID
		if id == "" {
			id = "phone-msg-" + strconv.Itoa(len(p.msgs)+1)
		}
		p.msgs = append(p.msgs, gatewaySMS{To: m.PhoneNumbers[0], Text: m.TextMessage.Text, ID: id})
		w.WriteHeader(http.StatusAccepted)
		_, _ = fmt.Fprintf(w, `{"id":%q,"state":"Pending","recipients":[{"phoneNumber":%q,"state":"Pending"}]}`, id, m.PhoneNumbers[0])
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		_, _ = w.Write([]byte(`{"status":"pass","version":"1.40.0","releaseId":1,"checks":{}}`))
	case r.Method == http.MethodPost && r.URL.Path == "/webhooks":
		var h map[string]string
		if err := json.Unmarshal(raw, &h); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		p.hooks = append(p.hooks, h)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(raw)
	default:
		p.bad = append(p.bad, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

func (p *fakeAndroidPhone) sent() []gatewaySMS {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

// fakeTwilioAPI speaks Twilio's Messages resource (POST
// /2010-04-01/Accounts/{sid}/Messages.json, form, basic auth) and answers 201 with a sid.
type fakeTwilioAPI struct {
	sid, token string
	mu         sync.Mutex
	msgs       []gatewaySMS
	bad        []string
}

func (f *fakeTwilioAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, pw, ok := r.BasicAuth()
	if !ok || u != f.sid || pw != f.token || r.URL.Path != "/2010-04-01/Accounts/"+f.sid+"/Messages.json" || r.ParseForm() != nil {
		f.bad = append(f.bad, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	sid := fmt.Sprintf("SM%032d", len(f.msgs)+1)
	f.msgs = append(f.msgs, gatewaySMS{To: r.PostForm.Get("To"), Text: r.PostForm.Get("Body"), ID: sid, Callback: r.PostForm.Get("StatusCallback")})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"sid":%q,"status":"queued","from":%q}`, sid, r.PostForm.Get("From"))
}

func (f *fakeTwilioAPI) sent() []gatewaySMS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

// degradedMissionSMS runs the outbound half of the gateway tests on the demo node: the
// lyon zone reports degraded, a critical event there goes out by SMS (its FR1 line through
// the gateway), SAMU Lyon 1 is dispatched and both members get the mission SMS, which
// makes the mission SENT. It returns the mission's id and code.
func degradedMissionSMS(t *testing.T, s *demoNode, sent func() []gatewaySMS) (missionID, code string) {
	t.Helper()
	key, sup := s.key(), s.login(t, "operational_supervisor")
	st, _, body := s.call(t, "POST", "/v1/connectivity/report", map[string]any{"zone_code": "lyon", "state": "degraded"}, key...)
	expect(t, "report lyon degraded", st, 200, body)
	st, _, body = s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "critical",
		"vertical": "healthcare", "idempotency_key": "gw-e2e-1", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
	expect(t, "event", st, 201, body)
	eventID := body["event_id"].(string)
	if body["channel_selected"] != "sms" {
		t.Fatalf("a critical event in a degraded zone: %v, want the sms channel", body)
	}
	pollUntil(t, s.served, "the event's FR1 line through the gateway", func() bool {
		return slices.ContainsFunc(sent(), func(m gatewaySMS) bool { return strings.HasPrefix(m.Text, "FR1|"+eventRef(eventID)+"|C|") })
	})
	pollUntil(t, s.served, "the event delivered", func() bool {
		_, _, ev := s.call(t, "GET", "/v1/events/"+eventID, nil, key...)
		return ev["status"] == "delivered"
	})

	st, _, body = s.call(t, "GET", "/v1/teams", nil, sup...)
	expect(t, "teams", st, 200, body)
	var teamID string
	for _, it := range body["data"].([]any) {
		if tm := it.(map[string]any); tm["name"] == "SAMU Lyon 1" {
			teamID = tm["id"].(string)
		}
	}
	st, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, sup...)
	expect(t, "dispatch", st, 201, body)
	missionID = body["mission_id"].(string)
	missionSMS := func() []gatewaySMS {
		return slices.DeleteFunc(sent(), func(m gatewaySMS) bool { return !strings.HasPrefix(m.Text, "FR1|M|") })
	}
	pollUntil(t, s.served, "the mission SMS to both members", func() bool { return len(missionSMS()) >= 2 })
	pollUntil(t, s.served, "the mission SENT", func() bool {
		_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
		return m["status"] == "SENT"
	})
	dec, err := smscodec.DecodeMissionSMS(missionSMS()[0].Text)
	if err != nil {
		t.Fatalf("the mission SMS does not decode: %v", err)
	}
	return missionID, dec.Code
}

// postRaw sends a request with a raw body and returns the status, headers and body.
func postRaw(t *testing.T, s *served, path, contentType string, body []byte, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

// waitMission waits until the mission's status is want.
func waitMission(t *testing.T, s *demoNode, missionID, want string) map[string]any {
	t.Helper()
	var m map[string]any
	pollUntil(t, s.served, "the mission "+want, func() bool {
		_, _, m = s.call(t, "GET", "/v1/missions/"+missionID, nil, s.key()...)
		return m["status"] == want
	})
	return m
}

// TestSMSGateways_AndroidEndToEnd: through the binary with --sms-gateway
// android+http://USER:PASS@… and a fake phone speaking SMS Gateway for Android's local
// server: a zone goes degraded, a critical event goes out by SMS through the phone, the
// dispatched team's members get the mission SMS; `fieldrelay sms setup` registers the
// webhook on the phone and prints the signing key; a webhook with a bad signature and a
// replayed one are refused, the member's signed sms:received "FR1 ACK <code>" moves the
// mission to ACK (source sms), and the same webhook sent again is not applied twice. The
// phone's password is in no log and no output.
func TestSMSGateways_AndroidEndToEnd(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { androidEndToEnd(t, bin, st) })
}

func androidEndToEnd(t *testing.T, bin string, store nodeStore) {
	const pass = "ph0ne-s3cret-pass"
	phone := &fakeAndroidPhone{user: "fieldrelay", pass: pass}
	phoneSrv := httptest.NewServer(phone)
	defer phoneSrv.Close()
	gateway := "android+http://fieldrelay:" + pass + "@" + strings.TrimPrefix(phoneSrv.URL, "http://")
	const internal = "metrics-secret-0123456789"
	s := store.serveDemo(t, bin, "--sms-gateway", gateway, "--internal-secret", internal)
	// The phone is probed: readyz and /metrics say it is up.
	pollUntil(t, s.served, "the phone up in /readyz", func() bool {
		_, _, body := s.call(t, "GET", "/readyz", nil)
		return body["sms_gateway"] == "up"
	})
	req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	req.Header.Set("x-svc-internal", internal)
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(metrics), "\nfieldrelay_sms_gateway_up 1\n") || !strings.Contains(string(metrics), "\nfieldrelay_sms_held_total 0\n") {
		t.Fatalf("/metrics of the SMS gateway:\n%s", metrics)
	}
	missionID, code := degradedMissionSMS(t, s, phone.sent)

	out := store.cli(t, bin, "", "sms", "setup", "--tenant", "demo", "--url", s.base, "--sms-gateway", gateway, "--json")
	var setup struct {
		TenantID   string            `json:"tenant_id"`
		WebhookURL string            `json:"webhook_url"`
		Key        string            `json:"android_signing_key"`
		Registered map[string]string `json:"registered_webhooks"`
		Gateway    string            `json:"gateway"`
	}
	if err := json.Unmarshal(out, &setup); err != nil || setup.Key == "" || setup.WebhookURL != s.base+"/v1/sms/android/"+setup.TenantID {
		t.Fatalf("sms setup: %v %s", err, out)
	}
	phone.mu.Lock()
	hooks := slices.Clone(phone.hooks)
	phone.mu.Unlock()
	if len(hooks) != 3 {
		t.Fatalf("webhooks registered on the phone: %v (setup %s)", hooks, out)
	}
	for i, event := range []string{"sms:received", "sms:delivered", "sms:failed"} {
		if h := hooks[i]; h["url"] != setup.WebhookURL || h["event"] != event || h["id"] != setup.Registered[event] || len(h["id"]) > 36 {
			t.Fatalf("webhook %d registered on the phone: %v (setup %s)", i, h, out)
		}
	}

	// The phone signs as its documentation says: hex HMAC-SHA256 of the body followed by
	// X-Timestamp, under the signing key entered in the app.
	sign := func(body []byte, ts string) string {
		m := hmac.New(sha256.New, []byte(setup.Key))
		m.Write(body)
		m.Write([]byte(ts))
		return hex.EncodeToString(m.Sum(nil))
	}
	hook, _ := json.Marshal(map[string]any{"deviceId": "ffffffffceb0b1db", "event": "sms:received", "id": "Ey6ECgOkVVFjz3CL48B8C",
		"webhookId": setup.Registered["sms:received"], "payload": map[string]any{"messageId": "69bde8d0", "message": "FR1 ACK " + code,
			"phoneNumber": "+33612345602", "simNumber": 1, "receivedAt": "2026-11-26T10:00:00.000+01:00"}})
	path := "/v1/sms/android/" + setup.TenantID
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	for name, h := range map[string][]string{
		"a bad signature": {"X-Timestamp", now, "X-Signature", sign(hook, now)[:62] + "00"},
		"another key":     {"X-Timestamp", now, "X-Signature", hex.EncodeToString(hmac.New(sha256.New, []byte("guess")).Sum(hook))},
		"a replay":        {"X-Timestamp", old, "X-Signature", sign(hook, old)},
		"no signature":    {"X-Timestamp", now},
	} {
		status, _, b := postRaw(t, s.served, path, "application/json", hook, h...)
		if status != http.StatusUnauthorized || !strings.Contains(string(b), `"unauthorized"`) {
			t.Fatalf("%s: %d %s, want 401 unauthorized", name, status, b)
		}
	}
	if _, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, s.key()...); m["status"] != "SENT" {
		t.Fatalf("a refused webhook moved the mission to %v", m["status"])
	}

	began := time.Now()
	status, hdr, b := postRaw(t, s.served, path, "application/json", hook, "X-Timestamp", now, "X-Signature", sign(hook, now))
	if status != http.StatusOK || string(b) != `{"request_id":"`+hdr.Get("X-Request-Id")+`"}`+"\n" {
		t.Fatalf("the member's signed reply: %d %s, want 200 with the request id", status, b)
	}
	// The answer comes after the move's commit: the time from the webhook to the move.
	t.Logf("webhook to mission move (answered after commit): %s", time.Since(began))
	m := waitMission(t, s, missionID, "ACK")
	h, _ := m["history"].([]any)
	if last, _ := h[len(h)-1].(map[string]any); last["source"] != "sms" || last["to"] != "ACK" {
		t.Fatalf("mission after the SMS ACK: %v", m)
	}
	// The phone sends a webhook again when it got no answer: the same event is answered
	// as before and not applied twice (a second ACK would be recorded as a refusal).
	again := strconv.FormatInt(time.Now().Unix(), 10)
	first := b
	status, hdr, b = postRaw(t, s.served, path, "application/json", hook, "X-Timestamp", again, "X-Signature", sign(hook, again))
	if status != http.StatusOK || hdr.Get("Idempotent-Replayed") != "true" || !bytes.Equal(b, first) {
		t.Fatalf("the same webhook again: %d %v %s, want the first answer %s", status, hdr, b, first)
	}
	// The phone's delivery reports name the SMS by the node's id: the first mission SMS is
	// delivered, the second failed; GET /v1/sms/outbound shows both.
	mission := slices.DeleteFunc(phone.sent(), func(m gatewaySMS) bool { return !strings.HasPrefix(m.Text, "FR1|M|") })
	report := func(event, id string, extra map[string]any) {
		t.Helper()
		payload := map[string]any{"messageId": id, "phoneNumber": "+33612345601", "deliveredAt": "2026-11-26T10:00:01.000+01:00"}
		for k, v := range extra {
			payload[k] = v
		}
		body, _ := json.Marshal(map[string]any{"deviceId": "ffffffffceb0b1db", "event": event, "id": "ev-" + id, "payload": payload})
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		if status, _, b := postRaw(t, s.served, path, "application/json", body, "X-Timestamp", ts, "X-Signature", sign(body, ts)); status != http.StatusOK || !strings.Contains(string(b), `"request_id"`) {
			t.Fatalf("%s: %d %s", event, status, b)
		}
	}
	report("sms:delivered", mission[0].ID, nil)
	report("sms:failed", mission[1].ID, map[string]any{"reason": "RESULT_ERROR_NO_SERVICE"})
	report("sms:delivered", model.NewID(), nil) // an SMS the tenant did not send: taken, nothing moves
	sup := s.login(t, "operational_supervisor")
	outbound := map[string]map[string]any{}
	pollUntil(t, s.served, "the delivery reports in GET /v1/sms/outbound", func() bool {
		st, _, body := s.call(t, "GET", "/v1/sms/outbound", nil, sup...)
		expect(t, "GET /v1/sms/outbound", st, 200, body)
		for _, it := range body["data"].([]any) {
			m := it.(map[string]any)
			outbound[m["id"].(string)] = m
		}
		return outbound[mission[0].ID]["status"] == "delivered" && outbound[mission[1].ID]["status"] == "failed"
	})
	if m := outbound[mission[1].ID]; m["error"] != "the gateway reported it undelivered: RESULT_ERROR_NO_SERVICE" ||
		m["gateway_message_id"] != mission[1].ID || m["mission_id"] != missionID || m["encoding"] != "GSM-7" || m["segments"] != 1.0 {
		t.Fatalf("the failed SMS: %v", m)
	}

	// Another tenant's path with this tenant's signature: refused.
	status, _, _ = postRaw(t, s.served, "/v1/sms/android/0190a000-0000-7000-8000-000000000001", "application/json", hook,
		"X-Timestamp", now, "X-Signature", sign(hook, now))
	if status != http.StatusUnauthorized {
		t.Fatalf("the signature of another tenant: %d", status)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.logs)
	}
	logs := s.logs.String()
	if strings.Contains(logs, pass) || strings.Contains(string(out), pass) {
		t.Fatalf("the phone's password is in the log or the setup output:\n%s\n%s", logs, out)
	}
	if !strings.Contains(logs, `"gateway_message_id":"`+mission[0].ID+`"`) || !strings.Contains(logs, "android+http://fieldrelay:***@") {
		t.Fatalf("the log names neither the gateway's message id nor the redacted gateway:\n%s", logs)
	}
	phone.mu.Lock()
	defer phone.mu.Unlock()
	if len(phone.bad) != 0 {
		t.Fatalf("the phone got requests it does not understand: %v", phone.bad)
	}
}

// twilioSignature computes X-Twilio-Signature as Twilio documents it: base64 HMAC-SHA1,
// under the auth token, of the URL followed by each POST parameter's name and value,
// sorted by name.
func twilioSignature(token, u string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := u
	for _, k := range keys {
		s += k + form.Get(k)
	}
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestSMSGateways_TwilioEndToEnd: through the binary with --sms-gateway
// twilio+http://SID:TOKEN@<fake Twilio>?from=…: a critical event in a degraded zone and
// the mission SMS go out through Twilio's Messages resource; the inbound message webhook
// with a bad X-Twilio-Signature is refused, the member's signed "FR1 ACK <code>" moves
// the mission and is answered with empty TwiML. The auth token is in no log.
func TestSMSGateways_TwilioEndToEnd(t *testing.T) {
	bin := binary(t)
	const token = "tw-auth-t0ken-s3cret"
	api := &fakeTwilioAPI{sid: "AC0123456789abcdef0123456789abcdef", token: token}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	gateway := "twilio+http://" + api.sid + ":" + token + "@" + strings.TrimPrefix(apiSrv.URL, "http://") + "?from=%2B15005550006&status_callback=http%3A%2F%2Frelay.invalid"
	data := t.TempDir()
	s := serveDemo(t, bin, data, "--sms-gateway", gateway)
	missionID, code := degradedMissionSMS(t, s, api.sent)

	out := mustRun(t, bin, "", "sms", "setup", "--tenant", "demo", "--url", s.base, "--sms-gateway", gateway, "--data", data)
	var hookURL string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0]+" "+f[1] == "webhook URL:" {
			hookURL = f[2]
		}
	}
	if !strings.HasPrefix(hookURL, s.base+"/v1/sms/twilio/") || strings.Contains(string(out), token) {
		t.Fatalf("sms setup printed:\n%s", out)
	}
	path := strings.TrimPrefix(hookURL, s.base)

	form := url.Values{"MessageSid": {"SM" + strings.Repeat("a", 32)}, "AccountSid": {api.sid}, "From": {"+33612345602"},
		"To": {"+15005550006"}, "Body": {"FR1 ACK " + code}, "NumMedia": {"0"}}
	sig := twilioSignature(token, hookURL, form)
	// The signature is Twilio's: its own validator accepts it.
	v := twilio.NewRequestValidator(token)
	if !v.ValidateBody(hookURL, []byte(form.Encode()), sig) {
		t.Fatal("twilio-go's validator refuses the test's signature")
	}
	status, _, b := postRaw(t, s.served, path, "application/x-www-form-urlencoded", []byte(form.Encode()),
		"X-Twilio-Signature", twilioSignature("another-token", hookURL, form))
	if status != http.StatusUnauthorized {
		t.Fatalf("a bad signature: %d %s", status, b)
	}
	tampered := url.Values{}
	for k, vs := range form {
		tampered[k] = vs
	}
	tampered.Set("From", "+33612345603")
	status, _, b = postRaw(t, s.served, path, "application/x-www-form-urlencoded", []byte(tampered.Encode()), "X-Twilio-Signature", sig)
	if status != http.StatusUnauthorized {
		t.Fatalf("a tampered form: %d %s", status, b)
	}
	if _, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, s.key()...); m["status"] != "SENT" {
		t.Fatalf("a refused webhook moved the mission to %v", m["status"])
	}
	status, hdr, b := postRaw(t, s.served, path, "application/x-www-form-urlencoded", []byte(form.Encode()), "X-Twilio-Signature", sig)
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/xml") || !strings.Contains(string(b), "<Response></Response>") {
		t.Fatalf("the member's signed reply: %d %v %s", status, hdr, b)
	}
	waitMission(t, s, missionID, "ACK")

	// Each message asked for status callbacks at the tenant's URL; Twilio posts them
	// there (here to the node's real address, on the same path), signed the same way.
	sent := slices.DeleteFunc(api.sent(), func(m gatewaySMS) bool { return !strings.HasPrefix(m.Text, "FR1|M|") })
	for _, m := range sent {
		if m.Callback != "http://relay.invalid"+path+"/status" {
			t.Fatalf("StatusCallback %q, want the tenant's status URL", m.Callback)
		}
	}
	callback := func(sid, st, code string, sig func(u string, f url.Values) string) int {
		t.Helper()
		f := url.Values{"MessageSid": {sid}, "AccountSid": {api.sid}, "MessageStatus": {st}, "To": {"+33612345601"}}
		if code != "" {
			f.Set("ErrorCode", code)
		}
		st2, _, _ := postRaw(t, s.served, path+"/status", "application/x-www-form-urlencoded", []byte(f.Encode()),
			"X-Twilio-Signature", sig(s.base+path+"/status", f))
		return st2
	}
	good := func(u string, f url.Values) string { return twilioSignature(token, u, f) }
	if st := callback(sent[0].ID, "sent", "", good); st != http.StatusOK {
		t.Fatalf("status sent: %d", st)
	}
	if st := callback(sent[0].ID, "delivered", "", func(u string, f url.Values) string { return twilioSignature("nope", u, f) }); st != http.StatusUnauthorized {
		t.Fatalf("a status callback with a bad signature: %d", st)
	}
	if st := callback(sent[0].ID, "delivered", "", good); st != http.StatusOK {
		t.Fatalf("status delivered: %d", st)
	}
	if st := callback(sent[1].ID, "undelivered", "30003", good); st != http.StatusOK {
		t.Fatalf("status undelivered: %d", st)
	}
	sup := s.login(t, "operational_supervisor")
	bySid := map[string]map[string]any{}
	pollUntil(t, s.served, "Twilio's statuses in GET /v1/sms/outbound", func() bool {
		st, _, body := s.call(t, "GET", "/v1/sms/outbound", nil, sup...)
		expect(t, "GET /v1/sms/outbound", st, 200, body)
		for _, it := range body["data"].([]any) {
			m := it.(map[string]any)
			if sid, _ := m["gateway_message_id"].(string); sid != "" {
				bySid[sid] = m
			}
		}
		return bySid[sent[0].ID]["status"] == "delivered" && bySid[sent[1].ID]["status"] == "failed"
	})
	if e := bySid[sent[1].ID]["error"]; e != "the gateway reported it undelivered: Twilio error 30003" {
		t.Fatalf("the undelivered SMS: %v", bySid[sent[1].ID])
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.logs)
	}
	if logs := s.logs.String(); strings.Contains(logs, token) || !strings.Contains(logs, `"gateway_message_id":"SM`) {
		t.Fatalf("the log shows the auth token or no Twilio sid:\n%s", logs)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bad) != 0 || api.msgs[0].To == "" {
		t.Fatalf("Twilio got %v, bad %v", api.msgs, api.bad)
	}
}
