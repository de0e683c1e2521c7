package upstream

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/url"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Limits of the upstream settings.
const (
	maxUpstreamURL = 2048
	maxUpstreamCA  = 64 << 10
)

// Link states of GET /v1/tenant/upstream/status.
const (
	StateUnconfigured = "unconfigured"
	StatePaused       = "paused"
	StateIdle         = "idle"
	StatePushing      = "pushing"
	StateDown         = "down"
)

// keyPrefixOf is the part of an API key that is ever shown.
func keyPrefixOf(key string) string {
	if len(key) <= model.APIKeyShownPrefix {
		return key[:len(key)/2] + "…"
	}
	return key[:model.APIKeyShownPrefix] + "…"
}

// CheckURL validates an upstream's base URL and returns it without a trailing
// slash: https, or http to a loopback host only (127.0.0.0/8, ::1, localhost: a test, or
// a TLS proxy on the same machine); no user info, query or fragment.
func CheckURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", model.Invalid("url", "url is required")
	}
	if len(raw) > maxUpstreamURL {
		return "", model.Invalid("url", "url is longer than %d characters", maxUpstreamURL)
	}
	if err := model.CheckText("url", raw); err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", model.Invalid("url", "url must be an absolute URL such as https://central.example.org")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", model.Invalid("url", "url must have no user info, query or fragment")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !loopbackHost(u.Hostname()) {
			return "", model.Invalid("url", "url must be https (http is allowed only to a loopback host)")
		}
	default:
		return "", model.Invalid("url", "url must be an https URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return strings.TrimRight(u.String(), "/"), nil
}

// loopbackHost reports whether a URL's host names this machine.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkCA validates a PEM bundle of root certificates.
func checkCA(pem string) error {
	if len(pem) > maxUpstreamCA {
		return model.Invalid("ca_pem", "ca_pem is larger than %d KiB", maxUpstreamCA>>10)
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(pem)) {
		return model.Invalid("ca_pem", "ca_pem holds no PEM certificate")
	}
	return nil
}

// upstreamAEAD returns the cipher of the upstream API keys: AES-256-GCM under a key
// derived with HKDF-SHA256 from the installation secret.
func upstreamAEAD(secret []byte) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, "fieldrelay upstream api key v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealKey encrypts an API key for a tenant (the tenant id is the additional data, so a
// ciphertext copied to another tenant does not open).
func sealKey(aead cipher.AEAD, tenantID, key string) string {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(key)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(key), []byte(tenantID)))
}

// openKey decrypts what sealKey made.
func openKey(aead cipher.AEAD, tenantID, sealed string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", model.Errorf(model.KindInternal, "the stored upstream API key is damaged")
	}
	n := aead.NonceSize()
	key, err := aead.Open(nil, raw[:n], raw[n:], []byte(tenantID))
	if err != nil {
		return "", model.Errorf(model.KindInternal, "the stored upstream API key does not decrypt with this node's secret")
	}
	return string(key), nil
}

// BySlug names the tenant of a slug, within a transaction.
func BySlug(slug string) func(Tx) (string, error) {
	return func(tx Tx) (string, error) {
		t, err := tx.TenantBySlug(slug)
		if err != nil {
			return "", err
		}
		return t.ID, nil
	}
}

// SetIn sets the upstream of the tenant that tenant names, within tx (PUT
// /v1/tenant/upstream and the admin command; the caller checked who may).
func (u *Runner) SetIn(tx Tx, tenant func(Tx) (string, error), in model.UpstreamInput) (*model.UpstreamSettings, error) {
	tenantID, err := tenant(tx)
	if err != nil {
		return nil, err
	}
	return u.set(tx, tenantID, in)
}

func (u *Runner) set(tx Tx, tenantID string, in model.UpstreamInput) (*model.UpstreamSettings, error) {
	u2, err := CheckURL(in.URL)
	if err != nil {
		return nil, err
	}
	cur, err := tx.Upstream(tenantID)
	if err != nil && !model.IsKind(err, model.KindNotFound) {
		return nil, err
	}
	same := cur != nil && cur.URL == u2
	key := strings.TrimSpace(in.APIKey)
	switch {
	case key == "" && !same:
		return nil, model.Invalid("api_key", "api_key is required (an API key of the upstream tenant with devices:manage and devices:sync)")
	case key != "" && !model.LooksLikeAPIKey(key):
		return nil, model.Invalid("api_key", "api_key must be a fieldrelay API key (%s…)", model.APIKeyPrefix)
	}
	if in.CAPEM != nil && *in.CAPEM != "" {
		if err := checkCA(*in.CAPEM); err != nil {
			return nil, err
		}
	}
	now := model.At(u.clock.Now())
	c := cur
	if !same {
		c = &model.UpstreamConfig{TenantID: tenantID, CreatedAt: now}
		if cur != nil {
			// A new upstream: the log that stands stays to be sent to it; the device
			// there is registered afresh.
			c.Generation, c.Base, c.AckedThrough, c.Paused = cur.Generation, cur.Base, cur.AckedThrough, cur.Paused
			c.Rejected, c.CreatedAt = cur.Rejected, cur.CreatedAt
		}
		c.URL = u2
		c.Generation++
		// A new upstream is sent the tenant's history first (backfill.go).
		if c.Backfill, err = startBackfill(tx, tenantID, now); err != nil {
			return nil, err
		}
	}
	if key != "" {
		secret, err := model.MetaSecret(tx, model.SecretUpstream)
		if err != nil {
			return nil, err
		}
		aead, err := upstreamAEAD(secret)
		if err != nil {
			return nil, model.Internal(err)
		}
		c.KeyCipher, c.KeyPrefix = sealKey(aead, tenantID, key), keyPrefixOf(key)
		if same {
			c.Generation++
		}
	}
	if in.CAPEM != nil && *in.CAPEM != c.CAPEM {
		c.CAPEM = *in.CAPEM
		if same && key == "" {
			c.Generation++
		}
	}
	if in.Paused != nil {
		c.Paused = *in.Paused
	}
	if c.Generation != generationOf(cur) {
		// A changed link is tried at once.
		c.LastError, c.Failures, c.NextAttemptAt = "", 0, nil
		if err := u.health(tx, tenantID, ""); err != nil {
			return nil, err
		}
	}
	c.UpdatedAt = now
	return u.put(tx, c)
}

func generationOf(c *model.UpstreamConfig) int64 {
	if c == nil {
		return 0
	}
	return c.Generation
}

// put stores settings changed by an administrator: the change log starts or keeps
// being written from this transaction on, and the pusher looks again.
func (u *Runner) put(tx Tx, c *model.UpstreamConfig) (*model.UpstreamSettings, error) {
	if err := tx.PutUpstream(c); err != nil {
		return nil, err
	}
	nodeID, err := model.MetaSecret(tx, model.SecretNodeID)
	if err != nil {
		return nil, err
	}
	u.settingsChanged(tx)
	return c.Settings(string(nodeID)), nil
}

// PauseIn pauses or resumes the push of the tenant of a slug within tx (the admin
// command); the change log keeps being written while paused.
func (u *Runner) PauseIn(tx Tx, slug string, paused bool) (*model.UpstreamSettings, error) {
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	c, err := tx.Upstream(t.ID)
	if model.IsKind(err, model.KindNotFound) {
		return nil, model.Errorf(model.KindNotFound, "tenant %s has no upstream (fieldrelay upstream set)", model.Quote(slug))
	}
	if err != nil {
		return nil, err
	}
	c.Paused, c.UpdatedAt = paused, model.At(u.clock.Now())
	if !paused {
		c.NextAttemptAt = nil
	}
	return u.put(tx, c)
}

// Settings returns the upstream settings of the tenant that tenant names; KindNotFound
// when it has none.
func (u *Runner) Settings(ctx context.Context, tenant func(Tx) (string, error)) (*model.UpstreamSettings, error) {
	var out *model.UpstreamSettings
	err := u.store.View(ctx, func(tx model.Tx) error {
		id, err := tenant(tx)
		if err != nil {
			return err
		}
		c, err := tx.Upstream(id)
		if model.IsKind(err, model.KindNotFound) {
			return model.Errorf(model.KindNotFound, "no upstream is configured")
		}
		if err != nil {
			return err
		}
		nodeID, err := tx.Meta(model.SecretNodeID)
		if err != nil {
			return err
		}
		out = c.Settings(string(nodeID))
		return nil
	})
	return out, err
}

// Status returns where the upstream sync of the tenant that tenant names stands.
func (u *Runner) Status(ctx context.Context, tenant func(Tx) (string, error)) (*model.UpstreamStatus, error) {
	var out *model.UpstreamStatus
	err := u.store.View(ctx, func(tx model.Tx) error {
		id, err := tenant(tx)
		if err != nil {
			return err
		}
		out, err = statusIn(tx, id)
		return err
	})
	return out, err
}

// statusIn reads a tenant's status within tx.
func statusIn(tx Tx, tenantID string) (*model.UpstreamStatus, error) {
	c, err := tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		return &model.UpstreamStatus{State: StateUnconfigured}, nil
	}
	if err != nil {
		return nil, err
	}
	end, err := tx.ChangeLogEnd(tenantID)
	if err != nil {
		return nil, err
	}
	st := &model.UpstreamStatus{URL: model.PtrTo(c.URL), LastSuccessAt: c.LastSuccessAt, LastAttemptAt: c.LastAttemptAt,
		Backlog: max(end-c.AckedThrough, 0), NextAttemptAt: c.NextAttemptAt, Failures: c.Failures,
		AckedThrough: c.AckedThrough, Rejected: c.Rejected}
	if c.DeviceID != "" {
		st.DeviceID = model.PtrTo(c.DeviceID)
	}
	if c.LastError != "" {
		st.LastError = model.PtrTo(c.LastError)
	}
	if c.LastRejection != "" {
		st.LastRejection = model.PtrTo(c.LastRejection)
	}
	if st.Backlog > 0 {
		first, err := tx.Changes(tenantID, c.AckedThrough, 1)
		if err != nil {
			return nil, err
		}
		if len(first) > 0 {
			st.BacklogOldestAt = &first[0].At
		}
	}
	st.Backfill = c.Backfill.Status(c.AckedThrough)
	st.Downstream = c.Down.Status()
	switch {
	case c.Paused:
		st.State = StatePaused
	case c.LastError != "":
		st.State = StateDown
	case st.Backlog == 0 && !c.Backfill.Walking():
		st.State = StateIdle
	default:
		st.State = StatePushing
	}
	return st, nil
}

// Owes reports whether a tenant with an upstream has changes it has not had
// acknowledged, or history its backfill has not yet put in the change log.
func Owes(tx interface {
	Upstream(tenantID string) (*model.UpstreamConfig, error)
	ChangeLogEnd(tenantID string) (int64, error)
}, tenantID string) (bool, error) {
	cfg, err := tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if cfg.Backfill != nil && cfg.Backfill.Walking() {
		return true, nil
	}
	end, err := tx.ChangeLogEnd(tenantID)
	return end > cfg.AckedThrough, err
}
