package outbound_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// senderFor returns a sender that trusts srv's certificate, with the given policy.
func senderFor(srv *httptest.Server, p netguard.AddressPolicy) *outbound.HTTPSender {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return outbound.NewHTTPSender(outbound.HTTPSenderOptions{Policy: p, RootCAs: pool})
}

// webhookTo returns a signed message to url.
func webhookTo(url, secret string) model.WebhookMessage {
	return model.WebhookMessage{
		URL:       url,
		ID:        "msg_2hY8Gk1b",
		Timestamp: time.Now(),
		Secret:    secret,
		Body:      []byte(`{"event":"event.created","payload":{"id":"e1"},"tenant_id":"t1","occurred_at":"2026-06-09T10:11:12Z"}`),
	}
}

func TestHTTPSenderWebhook(t *testing.T) {
	type received struct {
		method string
		header http.Header
		body   []byte
	}
	got := make(chan received, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	secret := model.NewWebhookSecret()
	m := webhookTo(srv.URL+"/hooks/in?src=fr", secret)
	res := senderFor(srv, netguard.AddressPolicy{AllowLoopback: true}).SendWebhook(context.Background(), m)
	if !res.OK() || res.StatusCode != http.StatusNoContent || res.Err != nil {
		t.Fatalf("result %+v, want a 204", res)
	}
	r := <-got
	if r.method != http.MethodPost {
		t.Errorf("method %s", r.method)
	}
	if string(r.body) != string(m.Body) {
		t.Errorf("body %q, want %q", r.body, m.Body)
	}
	for k, want := range map[string]string{
		"Content-Type":      "application/json",
		"webhook-id":        m.ID,
		"webhook-timestamp": strconv.FormatInt(m.Timestamp.Unix(), 10),
	} {
		if v := r.header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if !strings.HasPrefix(r.header.Get("webhook-signature"), "v1,") {
		t.Errorf("webhook-signature %q", r.header.Get("webhook-signature"))
	}
	if err := outbound.VerifyWebhook(secret, r.header, r.body); err != nil {
		t.Errorf("the signature received does not verify: %v", err)
	}
	if r.header.Get("User-Agent") == "" {
		t.Error("no User-Agent")
	}
}

func TestHTTPSenderStatuses(t *testing.T) {
	var followed atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/target", http.StatusFound)
		case "/permanent":
			http.Redirect(w, r, "/target", http.StatusPermanentRedirect)
		case "/target":
			followed.Add(1)
		case "/gone":
			w.WriteHeader(http.StatusGone)
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/unavailable":
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/forever":
			w.Header().Set("Retry-After", "999999999999999999999999")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/error":
			w.Header().Set("Retry-After", "7") // ignored: not a 429 or 503
			w.WriteHeader(http.StatusInternalServerError)
		case "/big":
			chunk := strings.Repeat("x", 32<<10)
			for range 64 { // 2 MiB, of which the sender reads 64 KiB
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	s := senderFor(srv, netguard.AddressPolicy{AllowLoopback: true})
	secret := model.NewWebhookSecret()

	tests := []struct {
		path       string
		status     int
		ok, gone   bool
		retryAfter time.Duration
		approx     bool
	}{
		{"/redirect", http.StatusFound, false, false, 0, false},
		{"/permanent", http.StatusPermanentRedirect, false, false, 0, false},
		{"/gone", http.StatusGone, false, true, 0, false},
		{"/busy", http.StatusTooManyRequests, false, false, 7 * time.Second, false},
		{"/unavailable", http.StatusServiceUnavailable, false, false, 90 * time.Second, true},
		{"/forever", http.StatusTooManyRequests, false, false, 24 * time.Hour, false},
		{"/error", http.StatusInternalServerError, false, false, 0, false},
		{"/big", http.StatusOK, true, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			res := s.SendWebhook(context.Background(), webhookTo(srv.URL+tt.path, secret))
			if res.Err != nil || res.StatusCode != tt.status || res.OK() != tt.ok || res.Gone() != tt.gone {
				t.Fatalf("result %+v, want status %d ok=%v gone=%v", res, tt.status, tt.ok, tt.gone)
			}
			if tt.approx {
				if d := res.RetryAfter - tt.retryAfter; d < -3*time.Second || d > time.Second {
					t.Fatalf("RetryAfter %v, want about %v", res.RetryAfter, tt.retryAfter)
				}
			} else if res.RetryAfter != tt.retryAfter {
				t.Fatalf("RetryAfter %v, want %v", res.RetryAfter, tt.retryAfter)
			}
		})
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("a redirect was followed %d times", n)
	}
}

func TestHTTPSenderRefusedAtConnect(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := senderFor(srv, netguard.AddressPolicy{AllowPrivate: true})

	res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret()))
	if res.Err == nil || res.OK() || res.StatusCode != 0 {
		t.Fatalf("result %+v, want a refusal", res)
	}
	if !errors.Is(res.Err, netguard.ErrAddressRefused) {
		t.Errorf("%v does not wrap ErrAddressRefused", res.Err)
	}
	msg := res.Err.Error()
	for _, want := range []string{"127.0.0.1", "loopback", "--allow-loopback-webhooks", "connect time"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if hits.Load() != 0 {
		t.Error("the refused server received a request")
	}
}

func TestHTTPSenderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An HTTP/1.1 server watches for the client going away only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{
		Policy: netguard.AddressPolicy{AllowLoopback: true}, RootCAs: pool, Timeout: 200 * time.Millisecond,
	})

	res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret()))
	if res.Err == nil || res.StatusCode != 0 {
		t.Fatalf("result %+v, want a timeout", res)
	}
	var ne net.Error
	if !errors.As(res.Err, &ne) || !ne.Timeout() {
		t.Errorf("%v is not a timeout", res.Err)
	}
	if !strings.Contains(res.Err.Error(), "timed out") {
		t.Errorf("error %q does not say it timed out", res.Err)
	}
}

func TestHTTPSenderRefusesPlainHTTP(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{Policy: netguard.AddressPolicy{AllowLoopback: true}})
	res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret()))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "https") || hits.Load() != 0 {
		t.Fatalf("result %+v, hits %d: want an https error and no request", res, hits.Load())
	}
}

func TestHTTPSenderUntrustedCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake is expected
	srv.StartTLS()
	defer srv.Close()
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{
		Policy: netguard.AddressPolicy{AllowLoopback: true}, RootCAs: x509.NewCertPool(),
	})
	res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret()))
	if res.Err == nil || res.OK() {
		t.Fatalf("result %+v, want a certificate error", res)
	}
}

func TestHTTPSenderBadSecret(t *testing.T) {
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{})
	res := s.SendWebhook(context.Background(), webhookTo("https://93.184.216.34/", "whsec_%%%"))
	if !model.IsKind(res.Err, model.KindValidation) {
		t.Fatalf("result %+v, want a validation_error before any connection", res)
	}
}

func TestHTTPSenderKeepAlive(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	s := senderFor(srv, netguard.AddressPolicy{AllowLoopback: true})
	for i := range 5 {
		if res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret())); !res.OK() {
			t.Fatalf("send %d: %+v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential sends, want 1", n)
	}
}

// TestHTTPSenderConcurrentKeepAlive: concurrent sends to one receiver have at most
// MaxConnsPerReceiver calls in flight, and every connection they open stays alive for the
// next round: a second round opens none.
func TestHTTPSenderConcurrentKeepAlive(t *testing.T) {
	const sends = outbound.MaxConnsPerReceiver + 16
	var conns, inflight, most atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n >= outbound.MaxConnsPerReceiver {
			once.Do(func() { close(release) })
		}
		select { // the first calls wait until the bound is reached: they overlap
		case <-release:
		case <-time.After(10 * time.Second): // a bound below MaxConnsPerReceiver: never reached
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	s := senderFor(srv, netguard.AddressPolicy{AllowLoopback: true})
	round := func() {
		var wg sync.WaitGroup
		for range sends {
			wg.Go(func() {
				if res := s.SendWebhook(context.Background(), webhookTo(srv.URL, model.NewWebhookSecret())); !res.OK() {
					t.Errorf("send: %+v", res)
				}
			})
		}
		wg.Wait()
	}
	round()
	if m := most.Load(); m != outbound.MaxConnsPerReceiver {
		t.Fatalf("%d calls in flight at most, want %d", m, outbound.MaxConnsPerReceiver)
	}
	first := conns.Load()
	round()
	if n := conns.Load(); first > outbound.MaxConnsPerReceiver || n != first {
		t.Fatalf("connections: %d after the first round, %d after the second; want at most %d, none new",
			first, n, outbound.MaxConnsPerReceiver)
	}
}

func TestHTTPSenderSMSSend(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]string
	var contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, m)
		contentType = r.Header.Get("Content-Type")
		mu.Unlock()
		if m["to"] == "+33000000000" {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	gw, err := outbound.ParseSMSGateway(srv.URL + "/sms")
	if err != nil {
		t.Fatal(err)
	}
	// The default policy refuses loopback webhooks, but the gateway is the operator's.
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{SMSGateway: gw})
	if !s.SMSAvailable() {
		t.Fatal("SMSAvailable is false with a gateway")
	}
	line := "FR1|0a1b2c3d|C|FIRE|Z1|45.76404,4.83566|1A2B"
	res := s.SendSMS(context.Background(), model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: line})
	if !res.OK() || res.StatusCode != http.StatusAccepted {
		t.Fatalf("result %+v, want a 202", res)
	}
	if res := s.SendSMS(context.Background(), model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33000000000", Body: line}); res.OK() || res.StatusCode != http.StatusBadGateway {
		t.Fatalf("result %+v, want a failed 502", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0]["to"] != "+33612345678" || got[0]["body"] != line || len(got[0]) != 2 {
		t.Fatalf("gateway received %v", got)
	}
	if contentType != "application/json" {
		t.Errorf("Content-Type %q", contentType)
	}
}

func TestHTTPSenderSMSSendNoGateway(t *testing.T) {
	s := outbound.NewHTTPSender(outbound.HTTPSenderOptions{})
	if s.SMSAvailable() {
		t.Fatal("SMSAvailable is true without a gateway")
	}
	res := s.SendSMS(context.Background(), model.OutboundSMS{TenantID: "t1", ID: "m1", To: "+33612345678", Body: "hello"})
	if res.OK() || !errors.Is(res.Err, outbound.ErrNoSMSGateway) || !strings.Contains(res.Err.Error(), "no SMS gateway") {
		t.Fatalf("result %+v, want no SMS gateway", res)
	}
}

func TestHTTPSenderParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"86400", 24 * time.Hour},
		{"86401", 24 * time.Hour},
		{"99999999999999999999999", 24 * time.Hour},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour},
		{now.Add(time.Minute).Format(time.RFC850), time.Minute},
	}
	for _, tt := range tests {
		if got := outbound.ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
