package cli

import (
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"net"
	"os"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// DefaultWebhookRetrySchedule is the delay before each retry of a webhook message after
// its first try (docs/rules.md, Webhooks).
const DefaultWebhookRetrySchedule = "5s,5m,30m,2h,5h,10h,10h"

// minInternalSecretLen is the shortest --internal-secret accepted.
const minInternalSecretLen = 16

// ServeConfig is the configuration of `fieldrelay serve`, validated. The webhook and SMS
// settings are held here for the delivery engine, which takes them when it lands.
type ServeConfig struct {
	// DataDir holds the database, the admin socket, the self-signed certificate and the
	// demo credentials. With Database it holds all but the database: it is the process's
	// own directory.
	DataDir string
	// Database is the postgres:// URL of a central tier's database; empty means the bbolt
	// file in DataDir. It may hold a password: print it only through redactURL.
	Database string
	// DatabaseListenURL is the URL of the listener of the database's notifications: the
	// database server itself when Database goes through a pooler in transaction mode
	// (PgBouncer), which delivers none; empty means Database
	// (docs/decisions/0220-notifications-fail-closed.md). Printed only through redactURL.
	DatabaseListenURL string
	// SecretKeyFile is the key file that opens the data key of Database's secrets, and
	// SecretKey its key, read by config (docs/decisions/0224-secrets-encrypted-at-rest.md).
	SecretKeyFile string
	SecretKey     *postgres.SecretKey
	// Addr is the TCP address the API listens on.
	Addr string
	// TLSCert and TLSKey are PEM files; both empty means the self-signed certificate.
	TLSCert, TLSKey string
	// PlainHTTP serves without TLS, behind a TLS proxy or in tests.
	PlainHTTP bool
	// InternalSecret guards /metrics; empty means the one stored in the database.
	InternalSecret string
	// InternalSecretInArgs says InternalSecret came from the command line, where ps shows
	// it: Run warns (docs/decisions/0135-internal-secret-flag.md).
	InternalSecretInArgs bool
	// Demo creates the demo tenant on an empty data directory.
	Demo bool

	// AllowLoopbackWebhooks lets webhooks reach loopback addresses (127.0.0.0/8, ::1).
	AllowLoopbackWebhooks bool
	// AllowLinkLocalWebhooks lets webhooks reach link-local addresses (169.254.0.0/16,
	// fe80::/10); cloud metadata addresses stay refused.
	AllowLinkLocalWebhooks bool
	// AllowPrivateWebhooks lets webhooks reach private ranges (RFC 1918, fc00::/7).
	AllowPrivateWebhooks bool
	// WebhookRetrySchedule is the delay before each retry after a message's first try.
	WebhookRetrySchedule []time.Duration
	// SMSGateway is the SMS channel's gateway and driver; nil means no SMS channel. It
	// holds a password or token: print it only through its String.
	SMSGateway *outbound.SMSGateway

	// Plans is the price list of GET /v1/tenant/billing, read from --plans-file; nil
	// means the compiled-in one.
	Plans model.PlanTable
	// SMTP delivers account tokens; nil means none is sent: the log says a token was issued
	// and `user reset-link` gives one.
	SMTP *outbound.SMTPConfig
	// LogResetLinks writes account tokens to the log when there is no SMTP (evaluation).
	LogResetLinks bool
	// BackupEvery takes a snapshot into DATA/backups at this interval (0: never), keeping
	// the newest BackupKeep.
	BackupEvery time.Duration
	BackupKeep  int
	// UpstreamRetryMax caps the delay between attempts of a failing upstream link.
	UpstreamRetryMax time.Duration
	// UpstreamBatch is the most changes one upstream sync carries, and the most records
	// of the history one backfill transaction puts in the change log.
	UpstreamBatch int
	// DownstreamKeep is how many entries the downstream log keeps per tenant.
	DownstreamKeep int
	// LogFlush is how long log lines below WARN are held to be written together; zero
	// writes each line at once (docs/decisions/0251-log-lines-written-together.md).
	LogFlush time.Duration
	// DownstreamLagAlert is how long a site's link may stay up without catching up with
	// its central node before downstream_lagging.
	DownstreamLagAlert time.Duration
	// OutboxLease is how long a delivery attempt in flight holds its message
	// (engine.Options.AttemptLease); webhook and SMS calls time out at half of it. Zero
	// means engine.DefaultAttemptLease.
	OutboxLease time.Duration
	// DiskMinFreeMB refuses writes while the data directory's filesystem has fewer MiB
	// free (0: only a write that failed for want of space does); DiskWarnFreeMB logs a
	// warning and raises fieldrelay_disk_low below it.
	DiskMinFreeMB, DiskWarnFreeMB int64
	// MaxConns caps the client connections open at once (0: the smaller of 4,096 and
	// what the open-file limit leaves); MaxConnsPerIP those of one client address, an
	// IPv6 /64 (0: no cap) (docs/decisions/0141-connection-caps.md).
	MaxConns, MaxConnsPerIP int
	// Retention is the node's default retention of the records the retention sweep
	// deletes (0 days: kept for ever); a tenant's own settings take precedence.
	Retention model.Retention
}

// Default free-space thresholds of the data directory (docs/decisions/0112-full-disk.md).
const (
	DefaultDiskMinFreeMB  = 64
	DefaultDiskWarnFreeMB = 1024
)

// DefaultLogFlush is how long `serve` holds log lines below WARN to write them together,
// and maxLogFlush the longest it may (docs/decisions/0251-log-lines-written-together.md).
const (
	DefaultLogFlush = 100 * time.Millisecond
	maxLogFlush     = time.Second
)

// minOutboxLease is the shortest --outbox-lease: a call has half of it.
const minOutboxLease = 2 * time.Second

// WebhookPolicy is the address policy of webhook destinations that the flags set.
func (c *ServeConfig) WebhookPolicy() netguard.AddressPolicy {
	return netguard.AddressPolicy{AllowLoopback: c.AllowLoopbackWebhooks, AllowLinkLocal: c.AllowLinkLocalWebhooks,
		AllowPrivate: c.AllowPrivateWebhooks}
}

// serveFlags are the raw flags of `fieldrelay serve`.
type serveFlags struct {
	ServeConfig
	retrySchedule string
	smsGateway    string
	plansFile     string
	smtp          outbound.SMTPConfig
}

// config validates the flags into a ServeConfig.
func (f *serveFlags) config() (*ServeConfig, error) {
	c := f.ServeConfig
	if c.DataDir == "" {
		return nil, model.Invalid("data", "--data is required")
	}
	if c.Database == "" && c.DatabaseListenURL != "" {
		return nil, model.Invalid("database-listen-url", "--database-listen-url goes with --database")
	}
	if c.Database != "" {
		if err := checkDatabaseURL(c.Database); err != nil {
			return nil, err
		}
		if c.DatabaseListenURL != "" {
			if err := checkDatabaseURL(c.DatabaseListenURL); err != nil {
				return nil, model.Invalid("database-listen-url", "--database-listen-url must be a postgres:// or postgresql:// URL, such as postgres://fieldrelay@db.example:5432/fieldrelay")
			}
		}
		key, err := readSecretKey(c.SecretKeyFile)
		if err != nil {
			return nil, err
		}
		c.SecretKey = key
		if c.BackupEvery > 0 {
			return nil, model.Invalid("backup-every", "--backup-every takes snapshots of the bbolt file of --data; with --database, back up the database with its own tools (pg_dump, pg_basebackup and WAL archiving: docs/operations.md)")
		}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return nil, model.Invalid("addr", "--addr must be host:port: %v", err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, model.Invalid("tls-cert", "--tls-cert and --tls-key go together")
	}
	if c.PlainHTTP && c.TLSCert != "" {
		return nil, model.Invalid("plain-http", "--plain-http cannot be combined with --tls-cert")
	}
	if c.InternalSecret != "" && len(c.InternalSecret) < minInternalSecretLen {
		return nil, model.Invalid("internal-secret", "--internal-secret must have at least %d characters", minInternalSecretLen)
	}
	var err error
	if c.WebhookRetrySchedule, err = parseRetrySchedule(f.retrySchedule); err != nil {
		return nil, err
	}
	if c.SMSGateway, err = outbound.ParseSMSGateway(f.smsGateway); err != nil {
		return nil, err
	}
	if f.plansFile != "" {
		data, err := os.ReadFile(f.plansFile)
		if err != nil {
			return nil, model.Invalid("plans-file", "--plans-file: %v", err)
		}
		if c.Plans, err = engine.ParsePlans(data); err != nil {
			return nil, model.Invalid("plans-file", "--plans-file %s: %v", f.plansFile, err)
		}
	}
	if f.smtp.Host != "" {
		s := f.smtp
		if err := s.Validate(); err != nil {
			return nil, err
		}
		c.SMTP = &s
	} else if f.smtp.From != "" || f.smtp.User != "" || f.smtp.Password != "" {
		return nil, model.Invalid("smtp-host", "--smtp-host is required with the other --smtp-* flags")
	}
	if c.LogResetLinks && c.SMTP != nil {
		return nil, model.Invalid("log-reset-links", "--log-reset-links writes tokens to the log of a node without SMTP; with --smtp-host they go by mail")
	}
	if c.BackupEvery < 0 || (c.BackupEvery > 0 && c.BackupEvery < minBackupEvery) {
		return nil, model.Invalid("backup-every", "--backup-every must be 0 (no scheduled backups) or at least %s", minBackupEvery)
	}
	if c.UpstreamRetryMax == 0 {
		c.UpstreamRetryMax = model.DefaultUpstreamRetryMax
	}
	if c.UpstreamRetryMax < model.DefaultUpstreamRetryMin {
		return nil, model.Invalid("upstream-retry-max", "--upstream-retry-max must be at least %s", model.DefaultUpstreamRetryMin)
	}
	if c.DownstreamKeep == 0 {
		c.DownstreamKeep = model.DefaultDownKeep
	}
	if c.DownstreamKeep < 1 {
		return nil, model.Invalid("downstream-keep", "--downstream-keep must be at least 1")
	}
	if c.DownstreamLagAlert == 0 {
		c.DownstreamLagAlert = model.DefaultLagAlert
	}
	if c.DownstreamLagAlert < time.Second {
		return nil, model.Invalid("downstream-lag-alert", "--downstream-lag-alert must be at least 1s")
	}
	if c.LogFlush < 0 || c.LogFlush > maxLogFlush {
		return nil, model.Invalid("log-flush", "--log-flush must be between 0 and %s", maxLogFlush)
	}
	if c.UpstreamBatch == 0 {
		c.UpstreamBatch = model.DefaultUpstreamBatchSize
	}
	if c.UpstreamBatch < 1 || c.UpstreamBatch > model.MaxSyncItems {
		return nil, model.Invalid("upstream-batch", "--upstream-batch must be between 1 and %d", model.MaxSyncItems)
	}
	if c.OutboxLease == 0 {
		c.OutboxLease = engine.DefaultAttemptLease
	}
	if c.OutboxLease < minOutboxLease {
		return nil, model.Invalid("outbox-lease", "--outbox-lease must be at least %s", minOutboxLease)
	}
	if c.DiskMinFreeMB < 0 || c.DiskWarnFreeMB < 0 {
		return nil, model.Invalid("disk-min-free-mb", "--disk-min-free-mb and --disk-warn-free-mb must not be negative")
	}
	for _, d := range []struct {
		flag string
		v    int
	}{{"retention-sync-batches-days", c.Retention.SyncBatchesDays}, {"retention-delivery-log-days", c.Retention.DeliveryLogDays},
		{"retention-events-days", c.Retention.EventsDays}} {
		if d.v < 0 || d.v > model.MaxRetentionDays {
			return nil, model.Invalid(d.flag, "--%s must be between 0 (kept for ever) and %d", d.flag, model.MaxRetentionDays)
		}
	}
	if c.BackupEvery > 0 && c.BackupKeep < 1 {
		return nil, model.Invalid("backup-keep", "--backup-keep must be at least 1")
	}
	return &c, nil
}

// parseRetrySchedule parses comma-separated Go durations, each positive.
func parseRetrySchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 {
			return nil, model.Invalid("webhook-retry-schedule",
				"--webhook-retry-schedule must be comma-separated positive durations such as %s (got %s)", DefaultWebhookRetrySchedule, model.Quote(part))
		}
		out = append(out, d)
	}
	return out, nil
}
