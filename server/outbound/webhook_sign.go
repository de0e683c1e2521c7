package outbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Webhook signing follows the Standard Webhooks specification
// (https://www.standardwebhooks.com): the key is the bytes that the base64 after "whsec_"
// decodes to; the signed content is "<webhook-id>.<webhook-timestamp>.<body>" with the
// timestamp in Unix seconds; the header carries "v1,<base64 HMAC-SHA256>", and a receiver
// accepts a message when any of its space-separated signatures matches.

// The headers of a signed webhook.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookTolerance is how far the webhook-timestamp of a message may be from the clock of
// its receiver before VerifyWebhook refuses it (replay protection).
const WebhookTolerance = 5 * time.Minute

// webhookKey returns the HMAC key of a secret. The "whsec_" prefix is expected but, as
// in the reference libraries, a bare base64 key is accepted too.
func webhookKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, model.WebhookSecretPrefix))
	if err != nil {
		return nil, model.Invalid("secret", "a webhook secret is whsec_ followed by standard base64")
	}
	if len(key) == 0 {
		return nil, model.Invalid("secret", "the webhook secret is empty")
	}
	return key, nil
}

// webhookMAC returns HMAC-SHA256(key, id + "." + unixSeconds + "." + body).
func webhookMAC(key []byte, id string, unix int64, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, unix, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// SignWebhook returns the webhook-signature header of one message: "v1," and the base64
// of HMAC-SHA256(key, id + "." + ts in Unix seconds + "." + body).
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	if id == "" {
		return "", model.Invalid("id", "a webhook message needs an id")
	}
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(webhookMAC(key, id, ts.Unix(), body)), nil
}

// VerifyWebhook checks a received webhook against the clock: the webhook-id,
// webhook-timestamp and webhook-signature headers are present, the timestamp is within
// WebhookTolerance of now, and one of the signatures is the v1 signature of the body.
func VerifyWebhook(secret string, header http.Header, body []byte) error {
	return VerifyWebhookAt(secret, header, body, time.Now())
}

// VerifyWebhookAt is VerifyWebhook with the receiver's clock reading given.
func VerifyWebhookAt(secret string, header http.Header, body []byte, now time.Time) error {
	key, err := webhookKey(secret)
	if err != nil {
		return err
	}
	id := header.Get(HeaderWebhookID)
	if id == "" {
		return model.Invalid(HeaderWebhookID, "the webhook-id header is missing")
	}
	rawTS := header.Get(HeaderWebhookTimestamp)
	if rawTS == "" {
		return model.Invalid(HeaderWebhookTimestamp, "the webhook-timestamp header is missing")
	}
	unix, err := strconv.ParseInt(rawTS, 10, 64)
	if err != nil {
		return model.Invalid(HeaderWebhookTimestamp, "the webhook-timestamp header is not a number of seconds")
	}
	ts := time.Unix(unix, 0)
	if ts.Before(now.Add(-WebhookTolerance)) {
		return model.Invalid(HeaderWebhookTimestamp, "the webhook-timestamp is too old")
	}
	if ts.After(now.Add(WebhookTolerance)) {
		return model.Invalid(HeaderWebhookTimestamp, "the webhook-timestamp is in the future")
	}
	sigs := header.Get(HeaderWebhookSignature)
	if sigs == "" {
		return model.Invalid(HeaderWebhookSignature, "the webhook-signature header is missing")
	}
	want := webhookMAC(key, id, unix, body)
	for _, sig := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return model.Errorf(model.KindUnauthorized, "no webhook signature matches")
}
