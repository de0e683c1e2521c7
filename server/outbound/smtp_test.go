package outbound

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// fakeSMTP is an SMTP server on 127.0.0.1 that accepts every mail and hands it over.
type fakeSMTP struct {
	ln   net.Listener
	port int
	got  chan fakeMail
}

type fakeMail struct {
	from string
	to   []string
	auth string // the decoded PLAIN response
	data string
}

func startFakeSMTP(t *testing.T) *fakeSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSMTP{ln: ln, port: ln.Addr().(*net.TCPAddr).Port, got: make(chan fakeMail, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *fakeSMTP) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 fake.test ESMTP")
	var m fakeMail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		up := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(up, "EHLO"), strings.HasPrefix(up, "HELO"):
			say("250-fake.test")
			say("250 AUTH PLAIN")
		case strings.HasPrefix(up, "AUTH PLAIN "):
			raw, _ := base64.StdEncoding.DecodeString(line[len("AUTH PLAIN "):])
			m.auth = string(raw)
			say("235 2.7.0 authenticated")
		case strings.HasPrefix(up, "MAIL FROM:"):
			m.from = strings.Trim(line[len("MAIL FROM:"):], "<> ")
			say("250 ok")
		case strings.HasPrefix(up, "RCPT TO:"):
			m.to = append(m.to, strings.Trim(line[len("RCPT TO:"):], "<> "))
			say("250 ok")
		case up == "DATA":
			say("354 go ahead")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				data.WriteString(l)
			}
			m.data = data.String()
			say("250 queued")
			s.got <- m
			m = fakeMail{}
		case up == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// next waits for the next mail (at most 10 s).
func (s *fakeSMTP) next(t *testing.T) fakeMail {
	t.Helper()
	select {
	case m := <-s.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no mail arrived")
		return fakeMail{}
	}
}

var tokenLineRE = regexp.MustCompile(`(?m)^    (\S+)\r$`)

func TestSMTPMailer(t *testing.T) {
	s := startFakeSMTP(t)
	m := SMTPMailer{Config: SMTPConfig{Host: "127.0.0.1", Port: s.port, User: "relay-user", Password: "relay-pass",
		From: "noreply@fieldrelay.test"}}
	tok := &model.IssuedToken{Email: "ann@acme.example", Kind: model.TokenReset, Token: "tok-123",
		ExpiresAt: model.At(time.Date(2026, 6, 9, 11, 0, 0, 0, time.UTC))}
	if err := m.SendToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	mail := s.next(t)
	if mail.from != "noreply@fieldrelay.test" || len(mail.to) != 1 || mail.to[0] != "ann@acme.example" {
		t.Fatalf("envelope: %+v", mail)
	}
	if mail.auth != "\x00relay-user\x00relay-pass" {
		t.Fatalf("auth %q", mail.auth)
	}
	if !strings.Contains(mail.data, "Subject: Reset your fieldrelay password") ||
		tokenLineRE.FindStringSubmatch(mail.data)[1] != "tok-123" || !strings.Contains(mail.data, "2026-06-09T11:00:00.000Z") {
		t.Fatalf("message:\n%s", mail.data)
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
