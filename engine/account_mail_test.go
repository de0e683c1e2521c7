package engine_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// flakyMailer fails its first fail calls, then keeps what it is given.
type flakyMailer struct {
	mu    sync.Mutex
	fail  int
	tried []model.IssuedToken
	sent  []model.IssuedToken
}

func (m *flakyMailer) SendToken(_ context.Context, t *model.IssuedToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tried = append(m.tried, *t)
	if m.fail > 0 {
		m.fail--
		return errors.New("smtp: relay down")
	}
	m.sent = append(m.sent, *t)
	return nil
}

// TestAccountMailThroughOutbox: forgot-password writes an outbox entry and returns without
// calling the mailer; the scheduler's attempt issues the token and sends it, a failed
// attempt is retried on the outbox's schedule with a new token, the token sent works, and
// the store never holds a token in plaintext (docs/decisions/0090-account-mail-outbox.md).
func TestAccountMailThroughOutbox(t *testing.T) {
	ctx := context.Background()
	clock := model.NewFakeClock(epoch)
	m := &flakyMailer{fail: 1}
	e := engine.New(MustOpenDB(t), engine.Options{Clock: clock, Password: cheapPasswords, Mailer: m,
		Logger: slog.New(slog.DiscardHandler), RetrySchedule: []time.Duration{time.Second}})
	const email = "ann@acme.example"
	mustDo(t, func() error {
		if _, err := e.AdminCreateTenant(context.Background(), model.CreateTenantInput{Name: "Acme", Slug: "acme", Email: "ops@acme.example",
			Country: "FR", Plan: "core"}); err != nil {
			return err
		}
		_, err := e.AdminCreateUser(context.Background(), "acme", model.CreateUserInput{Email: email, Name: "Ann", Role: model.Roles[0],
			Password: testPassword})
		return err
	})
	mustDo(t, func() error { return e.ForgotPassword(context.Background(), model.ForgotPasswordInput{Email: email}) })
	if len(m.tried) != 0 || e.ScheduledCount() != 1 {
		t.Fatalf("after the request: %d calls, %d scheduled; want 0 and 1", len(m.tried), e.ScheduledCount())
	}
	if n := e.RunDue(ctx); n != 1 || len(m.tried) != 1 || len(m.sent) != 0 {
		t.Fatalf("first attempt: %d attempts, %d calls, %d sent", n, len(m.tried), len(m.sent))
	}
	if n := e.RunDue(ctx); n != 0 {
		t.Fatalf("the retry ran before its time: %d attempts", n)
	}
	clock.Advance(time.Second)
	if n := e.RunDue(ctx); n != 1 || len(m.sent) != 1 || e.ScheduledCount() != 0 {
		t.Fatalf("retry: %d attempts, %d sent, %d scheduled", n, len(m.sent), e.ScheduledCount())
	}
	tok := m.sent[0]
	if tok.Email != email || tok.Kind != engine.TokenReset || tok.Token == m.tried[0].Token ||
		!tok.ExpiresAt.Equal(clock.Now().Add(engine.AuthTokenTTL)) {
		t.Fatalf("sent %+v after %+v", tok, m.tried[0])
	}
	var backup bytes.Buffer
	if _, err := e.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	for _, tried := range m.tried {
		if bytes.Contains(backup.Bytes(), []byte(tried.Token)) {
			t.Fatal("the store holds a token in plaintext")
		}
	}
	mustDo(t, func() error {
		_, err := e.ResetPassword(context.Background(), model.ResetPasswordInput{Token: tok.Token, NewPassword: "a brand new password"})
		return err
	})
}
