package servertest

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// SMTP is an SMTP server on 127.0.0.1 that accepts every mail (AUTH PLAIN included) and
// hands it over: the relay of the mail tests.
type SMTP struct {
	ln   net.Listener
	Port int
	got  chan Mail
}

// Mail is one mail the fake SMTP server received.
type Mail struct {
	From string
	To   []string
	Auth string // the decoded PLAIN response
	Data string
}

// StartSMTP starts a fake SMTP server, closed when the test ends.
func StartSMTP(t testing.TB) *SMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTP{ln: ln, Port: ln.Addr().(*net.TCPAddr).Port, got: make(chan Mail, 16)}
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

func (s *SMTP) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 fake.test ESMTP")
	var m Mail
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
			m.Auth = string(raw)
			say("235 2.7.0 authenticated")
		case strings.HasPrefix(up, "MAIL FROM:"):
			m.From = strings.Trim(line[len("MAIL FROM:"):], "<> ")
			say("250 ok")
		case strings.HasPrefix(up, "RCPT TO:"):
			m.To = append(m.To, strings.Trim(line[len("RCPT TO:"):], "<> "))
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
			m.Data = data.String()
			say("250 queued")
			s.got <- m
			m = Mail{}
		case up == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// Next waits for the next mail (at most 10 s).
func (s *SMTP) Next(t testing.TB) Mail {
	t.Helper()
	select {
	case m := <-s.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no mail arrived")
		return Mail{}
	}
}

// Pending returns a mail received and not yet taken by Next, if there is one, without
// waiting.
func (s *SMTP) Pending() (Mail, bool) {
	select {
	case m := <-s.got:
		return m, true
	default:
		return Mail{}, false
	}
}

// tokenLineRE is the line of an account mail that holds the token alone, indented.
var tokenLineRE = regexp.MustCompile(`(?m)^    (\S+)\r$`)

// Token returns the token an account mail carries ("" when it carries none).
func (m Mail) Token() string {
	if sub := tokenLineRE.FindStringSubmatch(m.Data); sub != nil {
		return sub[1]
	}
	return ""
}
