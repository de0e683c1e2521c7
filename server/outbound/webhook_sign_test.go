package outbound_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// The vector of the Standard Webhooks reference libraries
// (standard-webhooks/standard-webhooks: libraries/go/webhook_test.go, TestWebhookSign).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorUnix      = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestWebhookSignVector(t *testing.T) {
	sig, err := outbound.SignWebhook(vectorSecret, vectorID, time.Unix(vectorUnix, 0), []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if sig != vectorSignature {
		t.Fatalf("signature %s, want %s", sig, vectorSignature)
	}
	// The timestamp is whole seconds: the fraction does not change the signature.
	sig, err = outbound.SignWebhook(vectorSecret, vectorID, time.Unix(vectorUnix, 999_999_999), []byte(vectorBody))
	if err != nil || sig != vectorSignature {
		t.Fatalf("with a fraction of a second: %s, %v", sig, err)
	}
	h := webhookHeader(vectorID, vectorUnix, vectorSignature)
	if err := outbound.VerifyWebhookAt(vectorSecret, h, []byte(vectorBody), time.Unix(vectorUnix+60, 0)); err != nil {
		t.Fatalf("the reference vector does not verify: %v", err)
	}
}

func webhookHeader(id string, unix int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(unix, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestNewWebhookSecret(t *testing.T) {
	a, b := model.NewWebhookSecret(), model.NewWebhookSecret()
	if a == b {
		t.Fatal("two secrets are equal")
	}
	for _, s := range []string{a, b} {
		rest, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q lacks the whsec_ prefix", s)
		}
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(key) != 32 {
			t.Fatalf("secret %q: %d bytes, %v; want 32 bytes of standard base64", s, len(key), err)
		}
	}
}

func TestWebhookVerify(t *testing.T) {
	secret := model.NewWebhookSecret()
	now := time.Now()
	body := []byte(`{"event":"event.created","payload":{"id":"e1"}}`)
	sig, err := outbound.SignWebhook(secret, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := outbound.VerifyWebhook(secret, webhookHeader("msg_1", now.Unix(), sig), body); err != nil {
		t.Fatalf("round trip: %v", err)
	}

	other := model.NewWebhookSecret()
	otherSig, _ := outbound.SignWebhook(other, "msg_1", now, body)
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
		ok     bool
	}{
		{"OK", secret, webhookHeader("msg_1", now.Unix(), sig), string(body), true},
		{"OKSeveralSignatures", secret, webhookHeader("msg_1", now.Unix(),
			"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,abc "+sig+" v1,!!!"), string(body), true},
		{"OKWithinTolerance", secret, webhookHeaderAt(t, secret, "msg_1", now.Add(-4*time.Minute), body), string(body), true},
		{"ErrBodyTampered", secret, webhookHeader("msg_1", now.Unix(), sig), string(body) + " ", false},
		{"ErrBodyByteFlipped", secret, webhookHeader("msg_1", now.Unix(), sig), strings.Replace(string(body), "e1", "e2", 1), false},
		{"ErrIDTampered", secret, webhookHeader("msg_2", now.Unix(), sig), string(body), false},
		{"ErrTimestampTampered", secret, webhookHeader("msg_1", now.Unix()+1, sig), string(body), false},
		{"ErrOtherSecret", secret, webhookHeader("msg_1", now.Unix(), otherSig), string(body), false},
		{"ErrWrongVersion", secret, webhookHeader("msg_1", now.Unix(), "v2"+strings.TrimPrefix(sig, "v1")), string(body), false},
		{"ErrTooOld", secret, webhookHeaderAt(t, secret, "msg_1", now.Add(-6*time.Minute), body), string(body), false},
		{"ErrFuture", secret, webhookHeaderAt(t, secret, "msg_1", now.Add(6*time.Minute), body), string(body), false},
		{"ErrNoID", secret, webhookHeaderWithout(webhookHeader("msg_1", now.Unix(), sig), "webhook-id"), string(body), false},
		{"ErrNoTimestamp", secret, webhookHeaderWithout(webhookHeader("msg_1", now.Unix(), sig), "webhook-timestamp"), string(body), false},
		{"ErrNoSignature", secret, webhookHeaderWithout(webhookHeader("msg_1", now.Unix(), sig), "webhook-signature"), string(body), false},
		{"ErrBadTimestamp", secret, webhookHeader("msg_1", 0, sig), string(body), false},
		{"ErrBadSecret", "whsec_not base64", webhookHeader("msg_1", now.Unix(), sig), string(body), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := outbound.VerifyWebhook(tt.secret, tt.header, []byte(tt.body))
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func webhookHeaderAt(t *testing.T, secret, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	sig, err := outbound.SignWebhook(secret, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	return webhookHeader(id, ts.Unix(), sig)
}

func webhookHeaderWithout(h http.Header, key string) http.Header {
	h.Del(key)
	return h
}

func TestWebhookSignErrors(t *testing.T) {
	for _, secret := range []string{"", "whsec_", "whsec_%%%", "plain text"} {
		if _, err := outbound.SignWebhook(secret, "msg_1", time.Now(), nil); !model.IsKind(err, model.KindValidation) {
			t.Errorf("secret %q: %v, want a validation_error", secret, err)
		}
	}
	if _, err := outbound.SignWebhook(model.NewWebhookSecret(), "", time.Now(), nil); !model.IsKind(err, model.KindValidation) {
		t.Errorf("empty id: %v, want a validation_error", err)
	}
}
