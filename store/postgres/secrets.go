package postgres

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/jackc/pgx/v5"
)

// The secrets of a central tier's database are sealed at rest (envelope encryption,
// docs/decisions/0224-secrets-encrypted-at-rest.md): each is encrypted with AES-256-GCM
// under the database's data key, which the table secret_key holds wrapped (encrypted) under
// the key of the processes' key file, with that key's id. The key file's key is never
// stored in the database.

// sealedPrefix starts a sealed secret: in meta's bytea, followed by the sealed bytes; in a
// webhook's secret, followed by their base64.
const sealedPrefix = "fr-sealed-1:"

// secretMeta are the installation values of meta that are secrets (the node id is not).
var secretMeta = []string{model.SecretJWT, model.SecretInternal, model.SecretSMSWebhook, model.SecretUpstream}

func isSecretMeta(key string) bool {
	for _, k := range secretMeta {
		if k == key {
			return true
		}
	}
	return false
}

// ErrNoSecretKey refuses Open without Options.SecretKey.
var ErrNoSecretKey = errors.New("the secrets of a central tier's database are encrypted: a secret key file is required")

// SecretKeyMismatchError refuses a key file whose key is not the one that wraps the
// database's data key.
type SecretKeyMismatchError struct {
	Stored, Given string
}

func (e *SecretKeyMismatchError) Error() string {
	return fmt.Sprintf("the database's secrets are encrypted under the key %s; the secret key file given holds the key %s", e.Stored, e.Given)
}

// dataKey seals and opens the secrets of one database.
type dataKey struct{ aead cipher.AEAD }

func (d *dataKey) sealMeta(key string, v []byte) []byte {
	return append([]byte(sealedPrefix), seal(d.aead, v, "meta "+key)...)
}

func (d *dataKey) openMeta(key string, v []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(v, []byte(sealedPrefix))
	if !ok {
		return nil, fmt.Errorf("postgres: the secret %s is stored in plaintext", key)
	}
	plain, err := open(d.aead, rest, "meta "+key)
	if err != nil {
		return nil, fmt.Errorf("postgres: the secret %s does not open with the data key: %w", key, err)
	}
	return plain, nil
}

func webhookAAD(id string) string { return "webhook " + id }

func (d *dataKey) sealWebhook(id, secret string) string {
	return sealedPrefix + base64.StdEncoding.EncodeToString(seal(d.aead, []byte(secret), webhookAAD(id)))
}

func (d *dataKey) openWebhook(id, v string) (string, error) {
	rest, ok := strings.CutPrefix(v, sealedPrefix)
	if !ok {
		return "", fmt.Errorf("postgres: the secret of webhook %s is stored in plaintext", id)
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err == nil {
		raw, err = open(d.aead, raw, webhookAAD(id))
	}
	if err != nil {
		return "", fmt.Errorf("postgres: the secret of webhook %s does not open with the data key: %w", id, err)
	}
	return string(raw), nil
}

func newDataKey() (raw []byte, d *dataKey, err error) {
	raw = make([]byte, secretKeyLen)
	_, _ = rand.Read(raw)
	aead, err := newAEAD(raw)
	return raw, &dataKey{aead}, err
}

func wrapAAD(keyID string) string { return "data key under " + keyID }

// unwrapRaw opens the data key wrapped under key.
func unwrapRaw(key *SecretKey, storedID string, wrapped []byte) ([]byte, error) {
	if storedID != key.ID() {
		return nil, &SecretKeyMismatchError{Stored: storedID, Given: key.ID()}
	}
	raw, err := open(key.aead, wrapped, wrapAAD(storedID))
	if err != nil {
		return nil, &SecretKeyMismatchError{Stored: storedID, Given: key.ID() + " (which does not open it)"}
	}
	return raw, nil
}

// unwrap opens the data key wrapped under key.
func unwrap(key *SecretKey, storedID string, wrapped []byte) (*dataKey, error) {
	raw, err := unwrapRaw(key, storedID, wrapped)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(raw)
	if err != nil {
		return nil, err
	}
	return &dataKey{aead}, nil
}

// unlockSecrets opens the database's data key with key. On the first start with a key, it
// makes the data key and encrypts in place the secrets stored in plaintext before, in the
// same transaction.
func (db *DB) unlockSecrets(ctx context.Context, key *SecretKey) error {
	var dk *dataKey
	err := db.Update(ctx, func(mt model.Tx) error {
		t := mt.(*tx)
		var id string
		var wrapped []byte
		found, err := t.scan("SELECT key_id, wrapped FROM secret_key FOR UPDATE", nil, &id, &wrapped)
		if err != nil {
			return err
		}
		if found {
			dk, err = unwrap(key, id, wrapped)
			return err
		}
		raw, d, err := newDataKey()
		if err != nil {
			return err
		}
		if _, err := t.exec("INSERT INTO secret_key (key_id, wrapped) VALUES ($1, $2)", key.ID(), seal(key.aead, raw, wrapAAD(key.ID()))); err != nil {
			return err
		}
		dk = d
		return sealPlaintext(t, d)
	})
	if err != nil {
		return err
	}
	db.secrets = dk
	return nil
}

// sealPlaintext encrypts in place, with to, every secret stored in plaintext.
func sealPlaintext(t *tx, to *dataKey) error {
	type metaRow struct {
		key   string
		value []byte
	}
	var metas []metaRow
	err := t.each("SELECT key, value FROM meta WHERE key = ANY($1)", []any{secretMeta}, func(r pgx.Rows) (bool, error) {
		var m metaRow
		err := r.Scan(&m.key, &m.value)
		metas = append(metas, m)
		return true, err
	})
	if err != nil {
		return err
	}
	for _, m := range metas {
		plain := m.value
		if bytes.HasPrefix(plain, []byte(sealedPrefix)) {
			return fmt.Errorf("postgres: the secret %s is sealed but the database has no data key", m.key)
		}
		if _, err := t.exec("UPDATE meta SET value = $2 WHERE key = $1", m.key, to.sealMeta(m.key, plain)); err != nil {
			return err
		}
	}
	type hookRow struct{ tenant, id, secret string }
	var hooks []hookRow
	err = t.each("SELECT tenant_id::text, id::text, coalesce(doc->>'secret', '') FROM webhooks", nil, func(r pgx.Rows) (bool, error) {
		var h hookRow
		err := r.Scan(&h.tenant, &h.id, &h.secret)
		hooks = append(hooks, h)
		return true, err
	})
	if err != nil {
		return err
	}
	for _, h := range hooks {
		plain := h.secret
		if strings.HasPrefix(plain, sealedPrefix) {
			return fmt.Errorf("postgres: the secret of webhook %s is sealed but the database has no data key", h.id)
		}
		if _, err := t.exec(`UPDATE webhooks SET doc = jsonb_set(doc, '{secret}', to_jsonb($3::text))
			WHERE tenant_id = $1 AND id = $2`, h.tenant, h.id, to.sealWebhook(h.id, plain)); err != nil {
			return err
		}
	}
	return nil
}

// RotateSecretKey wraps the data key of the database at url under newKey instead of
// oldKey, in one transaction. The data key and the secrets it seals stay as they are, so
// the processes serving the database meanwhile go on; each must be started again with
// newKey's file, since oldKey's is refused from then on.
func RotateSecretKey(ctx context.Context, url string, oldKey, newKey *SecretKey, opt Options) error {
	opt.SecretKey = oldKey
	db, err := Open(ctx, url, opt)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(ctx, func(mt model.Tx) error {
		t := mt.(*tx)
		var id string
		var wrapped []byte
		found, err := t.scan("SELECT key_id, wrapped FROM secret_key FOR UPDATE", nil, &id, &wrapped)
		if err != nil {
			return err
		}
		if !found {
			return errors.New("postgres: the database has no data key")
		}
		raw, err := unwrapRaw(oldKey, id, wrapped)
		if err != nil {
			return err
		}
		_, err = t.exec("UPDATE secret_key SET key_id = $1, wrapped = $2", newKey.ID(), seal(newKey.aead, raw, wrapAAD(newKey.ID())))
		return err
	})
}
