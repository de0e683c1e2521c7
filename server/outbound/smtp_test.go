package outbound

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server/servertest"
)

func TestSMTPMailer(t *testing.T) {
	s := servertest.StartSMTP(t)
	m := SMTPMailer{Config: SMTPConfig{Host: "127.0.0.1", Port: s.Port, User: "relay-user", Password: "relay-pass",
		From: "noreply@fieldrelay.test"}}
	tok := &model.IssuedToken{Email: "ann@acme.example", Kind: model.TokenReset, Token: "tok-123",
		ExpiresAt: model.At(time.Date(2026, 6, 9, 11, 0, 0, 0, time.UTC))}
	if err := m.SendToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	mail := s.Next(t)
	if mail.From != "noreply@fieldrelay.test" || len(mail.To) != 1 || mail.To[0] != "ann@acme.example" {
		t.Fatalf("envelope: %+v", mail)
	}
	if mail.Auth != "\x00relay-user\x00relay-pass" {
		t.Fatalf("auth %q", mail.Auth)
	}
	if !strings.Contains(mail.Data, "Subject: Reset your fieldrelay password") ||
		mail.Token() != "tok-123" || !strings.Contains(mail.Data, "2026-06-09T11:00:00.000Z") {
		t.Fatalf("message:\n%s", mail.Data)
	}
	t.Run("ErrRelayDown", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		down := SMTPMailer{Config: SMTPConfig{Host: "127.0.0.1", Port: port, From: "noreply@fieldrelay.test"}}
		if err := down.SendToken(context.Background(), tok); err == nil || !strings.HasPrefix(err.Error(), "smtp:") {
			t.Fatalf("err %v", err)
		}
	})
}
