package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// SMTPConfig is the relay that delivers account tokens (`serve --smtp-*`).
type SMTPConfig struct {
	Host string
	Port int
	// User and Password authenticate with PLAIN (both or neither).
	User, Password string
	// From is the sender address.
	From string
}

// smtpTimeout bounds one delivery: the dial, the TLS handshake and the whole exchange.
const smtpTimeout = 30 * time.Second

// SMTPMailer is the engine's Mailer over an SMTP relay (net/smtp). Port 465 speaks TLS
// from the first byte; any other port upgrades with STARTTLS when the server offers it.
// net/smtp's PLAIN authentication refuses to send a password over a connection that is
// not encrypted, except to localhost.
type SMTPMailer struct {
	Config SMTPConfig
	// TLS configures the connection (nil: verify the relay's certificate for Host).
	TLS *tls.Config
}

var _ model.Mailer = SMTPMailer{}

// SendToken mails a reset or verify token to its user.
func (m SMTPMailer) SendToken(ctx context.Context, t *model.IssuedToken) error {
	ctx, cancel := context.WithTimeout(ctx, smtpTimeout)
	defer cancel()
	c := m.Config
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	tlsConf := m.TLS
	if tlsConf == nil {
		tlsConf = &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
	}
	var conn net.Conn
	var err error
	d := &net.Dialer{}
	if c.Port == 465 {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	client, err := smtp.NewClient(conn, c.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp: %w", err)
	}
	defer client.Close()
	if c.Port != 465 {
		if ok, _ := client.Extension("STARTTLS"); ok {
			if err := client.StartTLS(tlsConf); err != nil {
				return fmt.Errorf("smtp: STARTTLS: %w", err)
			}
		}
	}
	if c.User != "" {
		if err := client.Auth(smtp.PlainAuth("", c.User, c.Password, c.Host)); err != nil {
			return fmt.Errorf("smtp: authentication: %w", err)
		}
	}
	if err := client.Mail(c.From); err != nil {
		return fmt.Errorf("smtp: MAIL FROM: %w", err)
	}
	if err := client.Rcpt(t.Email); err != nil {
		return fmt.Errorf("smtp: RCPT TO: %w", err)
	}
	w, err := client.Data()
	if err != nil {
		return fmt.Errorf("smtp: DATA: %w", err)
	}
	if _, err := w.Write(tokenMessage(c.From, t)); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	return client.Quit()
}

// tokenMessage is the mail carrying a token.
func tokenMessage(from string, t *model.IssuedToken) []byte {
	subject, action, endpoint := "Reset your fieldrelay password", "reset your password", "/v1/auth/reset-password"
	if t.Kind == model.TokenVerify {
		subject, action, endpoint = "Activate your fieldrelay account", "activate your account", "/v1/auth/verify"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\n",
		from, t.Email, subject, time.Now().UTC().Format(time.RFC1123Z))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	fmt.Fprintf(&b, "Someone asked to %s on fieldrelay.\r\n\r\n", action)
	fmt.Fprintf(&b, "Token (single use, valid until %s):\r\n\r\n    %s\r\n\r\n", t.ExpiresAt.Format(model.TimeLayout), t.Token)
	fmt.Fprintf(&b, "Send it to POST %s with your new password.\r\n", endpoint)
	b.WriteString("If you did not ask for it, ignore this message.\r\n")
	return b.Bytes()
}

// Validate checks the relay settings; each error names the `serve` flag that sets the
// field.
func (c *SMTPConfig) Validate() error {
	if strings.ContainsAny(c.Host, " /") {
		return model.Invalid("smtp-host", "--smtp-host must be a host name or address")
	}
	if c.Port < 1 || c.Port > 65535 {
		return model.Invalid("smtp-port", "--smtp-port must be between 1 and 65535")
	}
	if (c.User == "") != (c.Password == "") {
		return model.Invalid("smtp-user", "--smtp-user and --smtp-password go together")
	}
	if c.From == "" {
		return model.Invalid("smtp-from", "--smtp-from is required with --smtp-host")
	}
	if a, err := mail.ParseAddress(c.From); err != nil || a.Name != "" {
		return model.Invalid("smtp-from", "--smtp-from must be a bare email address")
	}
	return nil
}
