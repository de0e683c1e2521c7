package postgres_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// storedSecrets are the secrets putSecrets stores.
type storedSecrets struct {
	tenant, webhook string
	meta            map[string]string
	webhookSecret   string
}

// putSecrets stores a tenant's webhook and the installation secrets through db.
func putSecrets(t *testing.T, db model.Store) storedSecrets {
	t.Helper()
	s := storedSecrets{tenant: model.NewID(), webhook: model.NewID(), webhookSecret: model.NewWebhookSecret(), meta: map[string]string{}}
	for _, k := range []string{model.SecretJWT, model.SecretInternal, model.SecretSMSWebhook, model.SecretUpstream} {
		s.meta[k] = k + "-plaintext-" + model.RandomToken(12)
	}
	err := db.Update(context.Background(), func(tx model.Tx) error {
		if err := tx.PutTenant(&model.Tenant{ID: s.tenant, Name: "Acme", Slug: "acme-" + s.tenant[:8], Status: "active"}); err != nil {
			return err
		}
		for k, v := range s.meta {
			if err := tx.PutMeta(k, []byte(v)); err != nil {
				return err
			}
		}
		return tx.PutWebhook(s.tenant, &model.Webhook{ID: s.webhook, URL: "https://hooks.example/a", Events: []string{"event.created"},
			Secret: s.webhookSecret, Status: "active"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readable checks that db reads back the secrets of s.
func (s storedSecrets) readable(t *testing.T, db model.Store) {
	t.Helper()
	err := db.View(context.Background(), func(tx model.Tx) error {
		for k, want := range s.meta {
			if v, err := tx.Meta(k); err != nil || string(v) != want {
				t.Errorf("Meta(%s) = %q, %v; want %q", k, v, err, want)
			}
		}
		w, err := tx.Webhook(s.tenant, s.webhook)
		if err != nil || w.Secret != s.webhookSecret {
			t.Errorf("Webhook = %+v, %v; want the secret %q", w, err, s.webhookSecret)
		}
		ws, err := tx.Webhooks(s.tenant)
		if err != nil || len(ws) != 1 || ws[0].Secret != s.webhookSecret {
			t.Errorf("Webhooks = %+v, %v", ws, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// absentFrom fails when dump holds any secret of s, as text or as bytea's hex.
func (s storedSecrets) absentFrom(t *testing.T, what, dump string) {
	t.Helper()
	all := []string{s.webhookSecret, strings.TrimPrefix(s.webhookSecret, model.WebhookSecretPrefix)}
	for _, v := range s.meta {
		all = append(all, v, hex.EncodeToString([]byte(v)))
	}
	for _, v := range all {
		if strings.Contains(dump, v) {
			t.Errorf("%s holds the secret %q", what, v)
		}
	}
}

// pgDump is the plain SQL dump of the database at url.
func pgDump(t *testing.T, url string) string {
	t.Helper()
	out, err := exec.Command(pgtest.Bin("pg_dump"), "--data-only", "--dbname", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !strings.Contains(string(out), "COPY public.webhooks") {
		t.Fatalf("pg_dump did not dump the webhooks:\n%s", out)
	}
	return string(out)
}

// tableContents is the text of every row of the tables that hold secrets.
func tableContents(t *testing.T, db *postgres.DB) string {
	t.Helper()
	var s string
	err := db.Pool().QueryRow(context.Background(), `SELECT
		(SELECT string_agg(key || '=' || encode(value, 'escape') || ' ' || encode(value, 'hex'), ' ') FROM meta) || ' ' ||
		(SELECT string_agg(doc::text, ' ') FROM webhooks)`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openWith(url string, key *postgres.SecretKey) (*postgres.DB, error) {
	return postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4, SecretKey: key})
}

func newKey(t *testing.T) *postgres.SecretKey {
	t.Helper()
	k, err := postgres.ParseSecretKey(postgres.NewSecretKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSecrets_EncryptedAtRest: the secrets stored through the store are read back, and
// neither the tables' contents nor a pg_dump of the database holds any of them.
func TestSecrets_EncryptedAtRest(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url)
	s := putSecrets(t, db)
	s.readable(t, db)
	s.absentFrom(t, "the tables", tableContents(t, db))
	s.absentFrom(t, "pg_dump", pgDump(t, url))
}

// TestSecrets_KeyRequired: Open refuses to go without a key, and with a key that is not
// the database's.
func TestSecrets_KeyRequired(t *testing.T) {
	url := pgtest.URL(t)
	_ = open(t, url)
	if _, err := postgres.Open(context.Background(), url, postgres.Options{}); !errors.Is(err, postgres.ErrNoSecretKey) {
		t.Fatalf("Open without a key = %v, want ErrNoSecretKey", err)
	}
	other := newKey(t)
	_, err := openWith(url, other)
	var mismatch *postgres.SecretKeyMismatchError
	if !errors.As(err, &mismatch) || mismatch.Stored != pgtest.SecretKey().ID() || !strings.Contains(err.Error(), other.ID()) {
		t.Fatalf("Open with another key = %v, want a mismatch naming both keys", err)
	}
}

// TestSecrets_Rotate: after rotation the new key opens the secrets, which are unchanged,
// and the old key is refused.
func TestSecrets_Rotate(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url)
	s := putSecrets(t, db)
	before := tableContents(t, db)
	next := newKey(t)
	if err := postgres.RotateSecretKey(context.Background(), url, newKey(t), next, postgres.Options{}); err == nil {
		t.Fatal("rotation from a key that is not the database's succeeded")
	}
	if err := postgres.RotateSecretKey(context.Background(), url, pgtest.SecretKey(), next, postgres.Options{}); err != nil {
		t.Fatal(err)
	}
	s.readable(t, db) // a process that was serving goes on
	var mismatch *postgres.SecretKeyMismatchError
	if _, err := openWith(url, pgtest.SecretKey()); !errors.As(err, &mismatch) {
		t.Fatalf("Open with the old key after rotation = %v, want a mismatch", err)
	}
	rotated, err := openWith(url, next)
	if err != nil {
		t.Fatal(err)
	}
	defer rotated.Close()
	s.readable(t, rotated)
	if got := tableContents(t, rotated); got != before {
		t.Fatalf("rotation rewrote the sealed secrets:\n%s\n%s", before, got)
	}
	var keyID string
	if err := rotated.Pool().QueryRow(context.Background(), "SELECT key_id FROM secret_key").Scan(&keyID); err != nil || keyID != next.ID() {
		t.Fatalf("secret_key names %q, %v; want %s", keyID, err, next.ID())
	}
}

// TestSecrets_PlaintextSealedInPlace: a database whose secrets were stored in plaintext
// (before encryption, with no data key) has them encrypted by the first Open with a key.
func TestSecrets_PlaintextSealedInPlace(t *testing.T) {
	url := pgtest.URL(t)
	db := open(t, url)
	s := putSecrets(t, db)
	ctx := context.Background()
	// What an older binary left: no data key, the secrets in plaintext.
	if _, err := db.Pool().Exec(ctx, "DELETE FROM secret_key"); err != nil {
		t.Fatal(err)
	}
	for k, v := range s.meta {
		if _, err := db.Pool().Exec(ctx, "UPDATE meta SET value = $2 WHERE key = $1", k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE webhooks SET doc = jsonb_set(doc, '{secret}', to_jsonb($1::text))`, s.webhookSecret); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tableContents(t, db), s.webhookSecret) {
		t.Fatal("the plaintext was not planted")
	}
	key := newKey(t)
	sealed, err := openWith(url, key)
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.Close()
	s.readable(t, sealed)
	s.absentFrom(t, "the tables after the first start with a key", tableContents(t, sealed))
	if _, err := openWith(url, pgtest.SecretKey()); err == nil {
		t.Fatal("a second key opened the database")
	}
}
