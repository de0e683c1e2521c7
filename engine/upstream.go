package engine

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
)

// Kinds of the change log: the item kinds of the upstream wire protocol.
const (
	ChangeEvent    = ItemUpstreamEvent
	ChangeDispatch = ItemUpstreamDispatch
	ChangeMission  = ItemUpstreamMission
)

// SecretUpstream names the installation secret the upstream API keys are encrypted with.
const SecretUpstream = "upstream_secret"

// Limits of the upstream settings.
const (
	maxUpstreamURL = 2048
	maxUpstreamCA  = 64 << 10
)

// LogChange is one entry of a tenant's change log: a record of kind Kind and id ID changed
// at At. Seq is its place in the log, contiguous from 1.
type LogChange struct {
	Seq  int64
	Kind string
	ID   string
	At   Time
}

// UpstreamConfig is a tenant's upstream as stored: the settings and where the push
// stands. The API key is kept only encrypted (KeyCipher); nothing returns it.
type UpstreamConfig struct {
	TenantID  string `json:"tenant_id"`
	URL       string `json:"url"`
	KeyCipher string `json:"key_cipher"`
	KeyPrefix string `json:"key_prefix"`
	CAPEM     string `json:"ca_pem,omitempty"`
	Paused    bool   `json:"paused"`
	// Generation changes with the link (url, key or CA): a push that began under another
	// generation drops its result.
	Generation int64 `json:"generation"`
	// DeviceID is the node's device on the upstream, once registered.
	DeviceID string `json:"device_id,omitempty"`
	// Base maps the log to the device's sequence numbers: sequence_number = Seq − Base.
	Base int64 `json:"base"`
	// AckedThrough is the last change (of the log) the upstream has applied; the log
	// holds nothing at or below it.
	AckedThrough  int64  `json:"acked_through"`
	LastSuccessAt *Time  `json:"last_success_at"`
	LastAttemptAt *Time  `json:"last_attempt_at"`
	LastError     string `json:"last_error,omitempty"`
	NextAttemptAt *Time  `json:"next_attempt_at"`
	Failures      int    `json:"failures"`
	// Rejected counts the items the upstream rejected (they count as processed there);
	// LastRejection says why the latest was.
	Rejected      int64  `json:"rejected"`
	LastRejection string `json:"last_rejection,omitempty"`
	CreatedAt     Time   `json:"created_at"`
	UpdatedAt     Time   `json:"updated_at"`
}

// UpstreamInput is the body of PUT /v1/tenant/upstream. With the url unchanged, an
// absent api_key, ca_pem or paused keeps its current value; a new url starts afresh:
// api_key is required and there is no CA unless ca_pem gives one. An empty ca_pem
// removes the CA.
type UpstreamInput struct {
	URL    string  `json:"url"`
	APIKey string  `json:"api_key"`
	CAPEM  *string `json:"ca_pem"`
	Paused *bool   `json:"paused"`
}

// UpstreamSettings is what GET and PUT /v1/tenant/upstream answer: the settings without
// the key, of which only a prefix is shown.
type UpstreamSettings struct {
	URL          string  `json:"url"`
	APIKeyPrefix string  `json:"api_key_prefix"`
	CAPEM        *string `json:"ca_pem"`
	Paused       bool    `json:"paused"`
	// NodeID is the hardware_id the node registers with upstream (the origin of its
	// records there); DeviceID its device on the upstream once registered.
	NodeID    string  `json:"node_id"`
	DeviceID  *string `json:"device_id"`
	CreatedAt Time    `json:"created_at"`
	UpdatedAt Time    `json:"updated_at"`
}

// Upstream link states of GET /v1/tenant/upstream/status.
const (
	UpstreamUnconfigured = "unconfigured"
	UpstreamPaused       = "paused"
	UpstreamIdle         = "idle"
	UpstreamPushing      = "pushing"
	UpstreamDown         = "down"
)

// UpstreamStatus is the answer of GET /v1/tenant/upstream/status. State is paused when
// paused, down when the last attempt failed, idle when the backlog is empty and pushing
// otherwise.
type UpstreamStatus struct {
	State           string  `json:"state"`
	URL             *string `json:"url"`
	DeviceID        *string `json:"device_id"`
	LastSuccessAt   *Time   `json:"last_success_at"`
	LastAttemptAt   *Time   `json:"last_attempt_at"`
	Backlog         int64   `json:"backlog"`
	BacklogOldestAt *Time   `json:"backlog_oldest_at"`
	LastError       *string `json:"last_error"`
	NextAttemptAt   *Time   `json:"next_attempt_at"`
	// Failures counts the attempts failed in a row; AckedThrough is the change log's
	// last sequence the upstream has applied; Rejected counts the items it rejected.
	Failures      int     `json:"failures"`
	AckedThrough  int64   `json:"acked_through"`
	Rejected      int64   `json:"rejected"`
	LastRejection *string `json:"last_rejection"`
}

// keyPrefixOf is the part of an API key that is ever shown.
func keyPrefixOf(key string) string {
	if len(key) <= APIKeyShownPrefix {
		return key[:len(key)/2] + "…"
	}
	return key[:APIKeyShownPrefix] + "…"
}

// settings renders c without its key.
func (c *UpstreamConfig) settings(nodeID string) *UpstreamSettings {
	s := &UpstreamSettings{URL: c.URL, APIKeyPrefix: c.KeyPrefix, Paused: c.Paused, NodeID: nodeID,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if c.CAPEM != "" {
		s.CAPEM = ptrTo(c.CAPEM)
	}
	if c.DeviceID != "" {
		s.DeviceID = ptrTo(c.DeviceID)
	}
	return s
}

// CheckUpstreamURL validates an upstream's base URL and returns it without a trailing
// slash: https, or http to a loopback host only (127.0.0.0/8, ::1, localhost: a test, or
// a TLS proxy on the same machine); no user info, query or fragment.
func CheckUpstreamURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", Invalid("url", "url is required")
	}
	if len(raw) > maxUpstreamURL {
		return "", Invalid("url", "url is longer than %d characters", maxUpstreamURL)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", Invalid("url", "url must be an absolute URL such as https://central.example.org")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", Invalid("url", "url must have no user info, query or fragment")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !loopbackHost(u.Hostname()) {
			return "", Invalid("url", "url must be https (http is allowed only to a loopback host)")
		}
	default:
		return "", Invalid("url", "url must be an https URL")
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
		return Invalid("ca_pem", "ca_pem is larger than %d KiB", maxUpstreamCA>>10)
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(pem)) {
		return Invalid("ca_pem", "ca_pem holds no PEM certificate")
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
		return "", Errorf(KindInternal, "the stored upstream API key is damaged")
	}
	n := aead.NonceSize()
	key, err := aead.Open(nil, raw[:n], raw[n:], []byte(tenantID))
	if err != nil {
		return "", Errorf(KindInternal, "the stored upstream API key does not decrypt with this node's secret")
	}
	return string(key), nil
}

// metaSecret returns an installation secret within tx, creating it when tx may write.
func metaSecret(tx Tx, name string) ([]byte, error) {
	v, err := tx.Meta(name)
	if err != nil || v != nil {
		return v, err
	}
	v = newSecret(name)
	return v, tx.PutMeta(name, v)
}

// SetUpstream sets the upstream of p's tenant (PUT /v1/tenant/upstream) within tx. It
// needs tenant:admin.
func (e *Engine) SetUpstream(tx Tx, p Principal, in UpstreamInput) (*UpstreamSettings, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.setUpstream(tx, p.TenantID, in)
}

// SetUpstreamIn is SetUpstream for the tenant of a slug (the admin command).
func (e *Engine) SetUpstreamIn(tx Tx, slug string, in UpstreamInput) (*UpstreamSettings, error) {
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	return e.setUpstream(tx, t.ID, in)
}

func (e *Engine) setUpstream(tx Tx, tenantID string, in UpstreamInput) (*UpstreamSettings, error) {
	u, err := CheckUpstreamURL(in.URL)
	if err != nil {
		return nil, err
	}
	cur, err := tx.Upstream(tenantID)
	if err != nil && !IsKind(err, KindNotFound) {
		return nil, err
	}
	same := cur != nil && cur.URL == u
	key := strings.TrimSpace(in.APIKey)
	switch {
	case key == "" && !same:
		return nil, Invalid("api_key", "api_key is required (an API key of the upstream tenant with devices:manage and devices:sync)")
	case key != "" && !LooksLikeAPIKey(key):
		return nil, Invalid("api_key", "api_key must be a fieldrelay API key (%s…)", APIKeyPrefix)
	}
	if in.CAPEM != nil && *in.CAPEM != "" {
		if err := checkCA(*in.CAPEM); err != nil {
			return nil, err
		}
	}
	now := At(e.clock.Now())
	c := cur
	if !same {
		c = &UpstreamConfig{TenantID: tenantID, CreatedAt: now}
		if cur != nil {
			// A new upstream: the log that stands stays to be sent to it; the device
			// there is registered afresh.
			c.Generation, c.Base, c.AckedThrough, c.Paused = cur.Generation, cur.Base, cur.AckedThrough, cur.Paused
			c.Rejected, c.CreatedAt = cur.Rejected, cur.CreatedAt
		}
		c.URL = u
		c.Generation++
	}
	if key != "" {
		secret, err := metaSecret(tx, SecretUpstream)
		if err != nil {
			return nil, err
		}
		aead, err := upstreamAEAD(secret)
		if err != nil {
			return nil, Internal(err)
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
	}
	c.UpdatedAt = now
	return e.putUpstream(tx, c)
}

func generationOf(c *UpstreamConfig) int64 {
	if c == nil {
		return 0
	}
	return c.Generation
}

// putUpstream stores settings changed by an administrator: the change log starts or
// keeps being written from this transaction on, and the pusher looks again.
func (e *Engine) putUpstream(tx Tx, c *UpstreamConfig) (*UpstreamSettings, error) {
	if err := tx.PutUpstream(c); err != nil {
		return nil, err
	}
	nodeID, err := metaSecret(tx, SecretNodeID)
	if err != nil {
		return nil, err
	}
	e.up.settingsChanged(tx)
	return c.settings(string(nodeID)), nil
}

// PauseUpstreamIn pauses or resumes the push of the tenant of a slug (the admin
// command); the change log keeps being written while paused.
func (e *Engine) PauseUpstreamIn(tx Tx, slug string, paused bool) (*UpstreamSettings, error) {
	t, err := tx.TenantBySlug(slug)
	if err != nil {
		return nil, err
	}
	c, err := tx.Upstream(t.ID)
	if IsKind(err, KindNotFound) {
		return nil, Errorf(KindNotFound, "tenant %s has no upstream (fieldrelay upstream set)", Quote(slug))
	}
	if err != nil {
		return nil, err
	}
	c.Paused, c.UpdatedAt = paused, At(e.clock.Now())
	if !paused {
		c.NextAttemptAt = nil
	}
	return e.putUpstream(tx, c)
}

// Upstream returns the upstream settings of p's tenant (GET /v1/tenant/upstream);
// KindNotFound when it has none. It needs tenant:admin.
func (e *Engine) Upstream(ctx context.Context, p Principal) (*UpstreamSettings, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.upstreamOf(ctx, func(Tx) (string, error) { return p.TenantID, nil })
}

// UpstreamOf is Upstream for the tenant of a slug (the admin command).
func (e *Engine) UpstreamOf(ctx context.Context, slug string) (*UpstreamSettings, error) {
	return e.upstreamOf(ctx, bySlug(slug))
}

func bySlug(slug string) func(Tx) (string, error) {
	return func(tx Tx) (string, error) {
		t, err := tx.TenantBySlug(slug)
		if err != nil {
			return "", err
		}
		return t.ID, nil
	}
}

func (e *Engine) upstreamOf(ctx context.Context, tenant func(Tx) (string, error)) (*UpstreamSettings, error) {
	var out *UpstreamSettings
	err := e.store.View(ctx, func(tx Tx) error {
		id, err := tenant(tx)
		if err != nil {
			return err
		}
		c, err := tx.Upstream(id)
		if IsKind(err, KindNotFound) {
			return Errorf(KindNotFound, "no upstream is configured")
		}
		if err != nil {
			return err
		}
		nodeID, err := tx.Meta(SecretNodeID)
		if err != nil {
			return err
		}
		out = c.settings(string(nodeID))
		return nil
	})
	return out, err
}

// UpstreamStatus returns where the upstream sync of p's tenant stands (GET
// /v1/tenant/upstream/status). It needs tenant:admin.
func (e *Engine) UpstreamStatus(ctx context.Context, p Principal) (*UpstreamStatus, error) {
	if err := p.Require(PermTenantAdmin); err != nil {
		return nil, err
	}
	return e.upstreamStatus(ctx, func(Tx) (string, error) { return p.TenantID, nil })
}

// UpstreamStatusOf is UpstreamStatus for the tenant of a slug (the admin command).
func (e *Engine) UpstreamStatusOf(ctx context.Context, slug string) (*UpstreamStatus, error) {
	return e.upstreamStatus(ctx, bySlug(slug))
}

func (e *Engine) upstreamStatus(ctx context.Context, tenant func(Tx) (string, error)) (*UpstreamStatus, error) {
	var out *UpstreamStatus
	err := e.store.View(ctx, func(tx Tx) error {
		id, err := tenant(tx)
		if err != nil {
			return err
		}
		out, err = upstreamStatusIn(tx, id)
		return err
	})
	return out, err
}

// upstreamStatusIn reads a tenant's status within tx.
func upstreamStatusIn(tx Tx, tenantID string) (*UpstreamStatus, error) {
	c, err := tx.Upstream(tenantID)
	if IsKind(err, KindNotFound) {
		return &UpstreamStatus{State: UpstreamUnconfigured}, nil
	}
	if err != nil {
		return nil, err
	}
	end, err := tx.ChangeLogEnd(tenantID)
	if err != nil {
		return nil, err
	}
	st := &UpstreamStatus{URL: ptrTo(c.URL), LastSuccessAt: c.LastSuccessAt, LastAttemptAt: c.LastAttemptAt,
		Backlog: max(end-c.AckedThrough, 0), NextAttemptAt: c.NextAttemptAt, Failures: c.Failures,
		AckedThrough: c.AckedThrough, Rejected: c.Rejected}
	if c.DeviceID != "" {
		st.DeviceID = ptrTo(c.DeviceID)
	}
	if c.LastError != "" {
		st.LastError = ptrTo(c.LastError)
	}
	if c.LastRejection != "" {
		st.LastRejection = ptrTo(c.LastRejection)
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
	switch {
	case c.Paused:
		st.State = UpstreamPaused
	case c.LastError != "":
		st.State = UpstreamDown
	case st.Backlog == 0:
		st.State = UpstreamIdle
	default:
		st.State = UpstreamPushing
	}
	return st, nil
}
