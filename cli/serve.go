package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/fieldrelay/fieldrelay/server/outbound"
	"github.com/fieldrelay/fieldrelay/store"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/spf13/cobra"
)

// Timeouts of serve.
const (
	serveLockTimeout = 2 * time.Second
	shutdownTimeout  = 30 * time.Second
)

func (a *app) newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the node: the HTTPS API and the admin socket",
		Long: "Run the node. Without --tls-cert and --plain-http, a self-signed ECDSA certificate is generated\n" +
			"into DATA/tls on first start and its SHA-256 fingerprint printed; it is valid 397 days, and a start\n" +
			"within 30 days of its end renews it with the same key. Admin commands reach the\n" +
			"running node through DATA/admin.sock. SIGINT or SIGTERM stops it gracefully (30 s at most).\n\n" +
			"With --database postgres://…, the records live in that PostgreSQL database, which several\n" +
			"serve processes share behind a load balancer (the central tier, docs/operations.md); --data\n" +
			"is then each process's own directory (TLS material, admin socket), one per process.",
		Example: `  fieldrelay serve --demo --data .demo
  fieldrelay serve --data /var/lib/fieldrelay --addr 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
  FIELDRELAY_PLAIN_HTTP=true fieldrelay serve --addr 127.0.0.1:8080
  FIELDRELAY_DATABASE=postgres://fieldrelay:secret@db.example/fieldrelay fieldrelay serve --data /var/lib/fieldrelay-1 --plain-http`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			cfg.InternalSecretInArgs = givenOnCommandLine(cmd.Flags(), "internal-secret")
			if cfg.Database == "" && givenOnCommandLine(cmd.Flags(), secretKeyFlag) {
				return model.Invalid(secretKeyFlag, "--secret-key-file goes with --database: a bbolt node's secrets stay in its file, "+
					"readable by the node's user only (docs/decisions/0224-secrets-encrypted-at-rest.md)")
			}
			return a.serve(cmd, cfg)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.DataDir, "data", "./data", "data directory")
	fl.StringVar(&f.Database, "database", "", "postgres:// or postgresql:// URL of the central tier's database (default: the bbolt file in --data)")
	fl.StringVar(&f.DatabaseListenURL, "database-listen-url", "", "postgres:// URL on which to LISTEN for the changes of the other processes, when --database goes through a pooler in transaction mode (PgBouncer), which delivers no notification: the database server itself (default: --database)")
	fl.StringVar(&f.SecretKeyFile, secretKeyFlag, "", "with --database: the key file (the base64 of 32 random bytes, `fieldrelay secrets keygen FILE`) whose key "+
		"encrypts the data key of the database's secrets; required with --database, never stored in the database (a bbolt node refuses it)")
	fl.StringVar(&f.Addr, "addr", "127.0.0.1:8443", "address to listen on")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "TLS certificate (PEM); default: a self-signed one in DATA/tls")
	fl.StringVar(&f.TLSKey, "tls-key", "", "TLS private key (PEM)")
	fl.BoolVar(&f.PlainHTTP, "plain-http", false, "serve plain HTTP (behind a TLS proxy, or for tests)")
	fl.StringVar(&f.InternalSecret, "internal-secret", "", "secret of the x-svc-internal header that /metrics requires, 16 characters at least "+
		"(default: generated and stored in the database). On the command line it shows in ps to every user of the machine: "+
		"set $"+envName("internal-secret")+" instead (serve warns at start when the flag is given)")
	fl.BoolVar(&f.Demo, "demo", false, "create a demo tenant, users, zones and teams on an empty data directory and print their credentials")
	fl.BoolVar(&f.AllowLoopbackWebhooks, "allow-loopback-webhooks", false, "let webhooks reach loopback addresses (127.0.0.0/8, ::1)")
	fl.BoolVar(&f.AllowLinkLocalWebhooks, "allow-link-local-webhooks", false, "let webhooks reach link-local addresses (169.254.0.0/16, fe80::/10); cloud metadata addresses stay refused")
	fl.BoolVar(&f.AllowPrivateWebhooks, "allow-private-webhooks", false, "let webhooks reach private addresses (RFC 1918, fc00::/7)")
	fl.StringVar(&f.retrySchedule, "webhook-retry-schedule", DefaultWebhookRetrySchedule, "delays of the webhook retries after the first try, comma-separated")
	fl.StringVar(&f.smsGateway, "sms-gateway", "none", "SMS gateway: none, a generic http(s) URL, android+http(s)://USER:PASS@PHONE:PORT (SMS Gateway for Android) or twilio://ACCOUNT_SID:AUTH_TOKEN@api.twilio.com?from=+E164 (or messaging_service=MG…)")
	fl.StringVar(&f.plansFile, "plans-file", "", "JSON price list of GET /v1/tenant/billing (default: the compiled-in one)")
	fl.StringVar(&f.smtp.Host, "smtp-host", "", "SMTP relay for password-reset and verification mails (default: none; the log says a token was issued, never the token, and `fieldrelay user reset-link EMAIL` gives one)")
	fl.IntVar(&f.smtp.Port, "smtp-port", 587, "SMTP relay port (465: TLS at once; others: STARTTLS when offered)")
	fl.StringVar(&f.smtp.User, "smtp-user", "", "SMTP user (PLAIN authentication)")
	fl.StringVar(&f.smtp.Password, "smtp-password", "", "SMTP password")
	fl.StringVar(&f.smtp.From, "smtp-from", "", "sender address of the mails")
	fl.BoolVar(&f.LogResetLinks, "log-reset-links", false, "without --smtp-host, write password-reset and verification tokens to the log (for evaluation only: whoever reads the log can take the accounts)")
	fl.DurationVar(&f.BackupEvery, "backup-every", 0, "take a snapshot into DATA/backups at this interval, e.g. 6h (0: never)")
	fl.IntVar(&f.BackupKeep, "backup-keep", 7, "scheduled snapshots to keep (the oldest are removed)")
	fl.DurationVar(&f.OutboxLease, "outbox-lease", engine.DefaultAttemptLease, "how long a delivery attempt in flight holds its message; another process of a shared --database takes the message over after it (at least 2s; webhook and SMS calls time out at half of it, 15s at most)")
	fl.DurationVar(&f.UpstreamRetryMax, "upstream-retry-max", model.DefaultUpstreamRetryMax, "longest wait between attempts of a failing upstream link (at least 1s)")
	fl.Int64Var(&f.DiskMinFreeMB, "disk-min-free-mb", DefaultDiskMinFreeMB, "refuse writes (503 unavailable, Retry-After) while the data directory's filesystem has less free space, in MiB (0: only when a write fails with ENOSPC)")
	fl.Int64Var(&f.DiskWarnFreeMB, "disk-warn-free-mb", DefaultDiskWarnFreeMB, "log a warning and set fieldrelay_disk_low below this free space of the data directory's filesystem, in MiB")
	fl.IntVar(&f.Retention.SyncBatchesDays, "retention-sync-batches-days", model.DefaultSyncBatchesDays, "days the records of POST /v1/sync/batch are kept, unless a tenant sets its own (0: for ever)")
	fl.IntVar(&f.Retention.DeliveryLogDays, "retention-delivery-log-days", model.DefaultDeliveryLogDays, "days the webhook attempt log is kept, unless a tenant sets its own (0: for ever)")
	fl.IntVar(&f.Retention.EventsDays, "retention-events-days", model.DefaultEventsDays, "days settled events without a mission are kept, unless a tenant sets its own (0: for ever); never while owed upstream")
	fl.IntVar(&f.MaxConns, "max-conns", 0, "most client connections open at once; over it a new one closes the longest idle keep-alive connection or is refused (503 unavailable) (0: the smaller of 4096 and the open-file limit less what the node keeps for its own files)")
	fl.IntVar(&f.MaxConnsPerIP, "max-conns-per-ip", DefaultMaxConnsPerIP, "most connections open at once from one client address (IPv6: one /64), loopback included; 0: no cap (behind a reverse proxy or load balancer, whose address every client shares)")
	fl.DurationVar(&f.DownstreamLagAlert, "downstream-lag-alert", model.DefaultLagAlert, "how long a site's upstream link may stay up without catching up with the central node's changes before the downstream_lagging alert")
	fl.IntVar(&f.DownstreamKeep, "downstream-keep", model.DefaultDownKeep, "entries a central node's downstream log keeps per tenant; a site whose cursor is older gets a snapshot")
	fl.DurationVar(&f.LogFlush, "log-flush", DefaultLogFlush, "how long log lines below WARN are held to be written together (at most 1s; 0: each line at once); a warning or an error is written at once")
	fl.IntVar(&f.UpstreamBatch, "upstream-batch", model.DefaultUpstreamBatchSize, "most changes one upstream sync carries, and most records of the history a backfill transaction puts in the change log")
	return cmd
}

// serve runs the node until SIGINT or SIGTERM (or the command's context) stops it.
func (a *app) serve(cmd *cobra.Command, cfg *ServeConfig) error {
	tuneGC()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &Main{Config: *cfg, EngineOptions: a.engineOptions, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		openStore: a.openStore}
	if err := m.Run(ctx); err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
		m.log.Info("shutting down")
	case serveErr = <-m.served:
		m.log.Error("the HTTP server stopped", "error", serveErr.Error())
	}
	_ = m.Close() // an error closing the store does not change how serve ends
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return model.Internal(serveErr)
	}
	return nil
}

// Main is a node wired together: the store, the engine and its scheduler, the HTTP API,
// the admin socket and the scheduled snapshots. `fieldrelay serve` fills Config from its
// flags and environment, calls Run, waits for a signal and calls Close; a test does the
// same without flags (wtf's cmd/wtfd Main is the model).
type Main struct {
	// Config is the node's configuration (serveFlags.config validates the flags into it).
	Config ServeConfig
	// EngineOptions are the engine's options, to which Run adds the logger, the webhook
	// policy and retry schedule, the upstream retry cap and the plans; a Sender or a Mailer
	// set here wins over the ones the configuration gives.
	EngineOptions engine.Options
	// Stdout receives the banner (the address, the TLS fingerprint, the demo credentials);
	// Stderr the JSON log. Nil discards.
	Stdout, Stderr io.Writer

	// Set by Run: the store, which DB is too when it is bbolt's (nil on a --database).
	Store  model.Store
	DB     *store.DB
	Engine *engine.Engine
	// URL is the base URL through which a client on this machine reaches the API.
	URL string

	openStore   storeOpener // opens Config.Database; nil is openDatabase
	unlockData  func()      // releases the data directory's lock (Config.Database)
	log         *slog.Logger
	flushLog    func() // writes the log lines held (newNodeLog)
	scheduler   bool   // the engine's scheduler runs
	stopBackups func()
	ln          net.Listener
	stopAdmin   context.CancelFunc
	adminDone   chan error
	hs          *http.Server
	served      chan error // the HTTP server's end

	// stopSMSWatch ends the SMS gateway's probes (nil when none run).
	stopSMSWatch func()
}

// Run opens the store, starts the engine, the scheduled snapshots, the admin socket and
// the HTTP API, and prints the banner; it returns once the node serves. ctx is the node's
// life: when it ends the scheduled snapshots stop (Close stops everything else). On an
// error Run closes what it opened.
func (m *Main) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	cfg := &m.Config
	out, errOut := cmp.Or[io.Writer](m.Stdout, io.Discard), cmp.Or[io.Writer](m.Stderr, io.Discard)
	log, flushLog := newNodeLog(errOut, cfg.LogFlush)
	m.log, m.flushLog = log, flushLog
	files := openFileLimits()
	conns, err := connLimits(cfg.MaxConns, cfg.MaxConnsPerIP, files)
	if err != nil {
		return err
	}

	// A database may not answer yet: the node listens first, answers /healthz and says why
	// it is not ready until the database opens (openWaiting).
	var l *listening
	var db model.Store
	if cfg.Database != "" {
		if err := checkDatabaseURL(cfg.Database); err != nil {
			return err
		}
		if l, err = m.listen(clockOf(m.EngineOptions).Now()); err != nil {
			return err
		}
		db, err = m.openWaiting(ctx, log, l)
	} else {
		db, err = m.open(ctx, log)
	}
	if err != nil {
		return err
	}
	m.Store = db // closed last: after HTTP and the admin socket
	opts := m.EngineOptions
	opts.Logger = log
	opts.WebhookPolicy = cfg.WebhookPolicy()
	opts.RetrySchedule = cfg.WebhookRetrySchedule
	opts.AttemptLease = cfg.OutboxLease
	opts.Retention = cfg.Retention
	opts.Upstream.RetryMax = cfg.UpstreamRetryMax
	opts.Upstream.BatchSize = cfg.UpstreamBatch
	opts.Upstream.DownKeep = cfg.DownstreamKeep
	opts.Upstream.LagAlert = cfg.DownstreamLagAlert
	if opts.Upstream.Transport == nil {
		opts.Upstream.Transport = outbound.UpstreamHTTP{}
	}
	if opts.Sender == nil {
		// A call ends within its attempt's lease, so that no other process takes over a
		// message whose call is still running.
		hs := outbound.NewHTTPSender(outbound.HTTPSenderOptions{Policy: opts.WebhookPolicy, SMSGateway: cfg.SMSGateway,
			Timeout: min(outbound.DefaultSendTimeout, cfg.OutboxLease/2)})
		opts.Sender = hs
		if cfg.SMSGateway != nil {
			wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
			done := make(chan struct{})
			go func() { defer close(done); hs.WatchSMS(wctx, outbound.SMSProbeEvery) }()
			m.stopSMSWatch = func() { stop(); <-done }
		}
	}
	if cfg.Plans != nil {
		opts.Plans = cfg.Plans
	}
	if opts.Mailer == nil {
		if cfg.SMTP != nil {
			opts.Mailer = outbound.SMTPMailer{Config: *cfg.SMTP}
		} else {
			opts.Mailer = engine.LogMailer{Log: log, ShowTokens: cfg.LogResetLinks}
		}
	}
	eng := engine.New(db, opts)
	m.Engine = eng
	// The scheduler stops after HTTP and the admin socket, before the store closes; its
	// stop flushes the API requests counted in memory.
	if err := eng.StartScheduler(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	m.scheduler = true
	// Scheduled snapshots stop with ctx (or Close), a snapshot under way finishing first.
	m.stopBackups = startBackups(ctx, eng, cfg, log)

	var demo *demoCredentials
	if cfg.Demo {
		if demo, err = ensureDemo(ctx, eng, cfg.DataDir); err != nil {
			return err
		}
	}
	secret := cfg.InternalSecret
	if secret == "" {
		b, err := eng.Secret(ctx, engine.SecretInternal)
		if err != nil {
			return err
		}
		secret = string(b)
	}
	srv, err := server.New(ctx, eng, server.Config{InternalSecret: secret, Logger: log, SMSGateway: cfg.SMSGateway,
		Conns: conns})
	if err != nil {
		return err
	}
	now := eng.Clock().Now() // the node's clock, a test's fake one included
	if l == nil {
		if l, err = m.listen(now); err != nil {
			return err
		}
	}
	ln, tlsConfig, fingerprint, selfSigned := l.ln, l.tlsConfig, l.fingerprint, l.selfSigned
	caFile := ""
	if selfSigned != nil {
		caFile = selfSigned.CertFile
	}
	adminLn, err := server.ListenAdmin(adminSocket(cfg.DataDir))
	if err != nil { // e.g. a path longer than a unix socket allows (about 100 bytes)
		return model.Errorf(model.KindUnavailable, "cannot open the admin socket %s: %v", adminSocket(cfg.DataDir), err)
	}
	// The admin socket outlives ctx: it closes after HTTP has drained, before the store.
	adminCtx, stopAdmin := context.WithCancel(context.WithoutCancel(ctx))
	m.stopAdmin, m.adminDone = stopAdmin, make(chan error, 1)
	go func() { m.adminDone <- server.ServeAdmin(adminCtx, adminLn, eng, log) }()

	hs := srv.HTTPServer(cfg.Addr)
	m.hs, m.served = hs, make(chan error, 1)
	go func() { m.served <- srv.Serve(hs, ln, tlsConfig) }()

	// The banner goes out in one write: whoever waits for the "listening" line (a script,
	// a test) then also has the fingerprint and the demo credentials.
	base := baseURL(ln.Addr(), tlsConfig != nil)
	m.URL = base
	var banner bytes.Buffer
	if cfg.Database != "" {
		fmt.Fprintf(&banner, "fieldrelay %s listening on %s (data %s, database %s)\n", version, base, cfg.DataDir, redactURL(cfg.Database))
	} else {
		fmt.Fprintf(&banner, "fieldrelay %s listening on %s (data %s)\n", version, base, cfg.DataDir)
	}
	if selfSigned != nil && selfSigned.Renewed {
		fmt.Fprintf(&banner, "TLS certificate renewed with the same key, valid until %s (it was %s)\n",
			selfSigned.NotAfter.UTC().Format(time.DateOnly), selfSigned.PreviousFingerprint)
	}
	if fingerprint != "" {
		fmt.Fprintf(&banner, "TLS certificate SHA-256 fingerprint: %s\n", fingerprint)
	}
	if selfSigned != nil {
		fmt.Fprintf(&banner, "TLS public key SHA-256 (curl --pinnedpubkey; renewals keep it): %s\n", selfSigned.KeyPin)
	}
	if cfg.Demo {
		printDemo(&banner, cfg.DataDir, demo, base, caFile, secret)
	}
	_, _ = out.Write(banner.Bytes())
	log.Info("serving", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "data", cfg.DataDir, "database", redactURL(cfg.Database),
		"admin_socket", adminSocket(cfg.DataDir), "webhook_retry_schedule", fmt.Sprint(cfg.WebhookRetrySchedule),
		"sms_gateway", cfg.SMSGateway.String(), "allow_loopback_webhooks", cfg.AllowLoopbackWebhooks,
		"allow_link_local_webhooks", cfg.AllowLinkLocalWebhooks, "allow_private_webhooks", cfg.AllowPrivateWebhooks,
		"smtp", cfg.SMTP != nil, "log_reset_links", cfg.LogResetLinks, "plans_file", cfg.Plans != nil,
		"backup_every", cfg.BackupEvery.String(), "backup_keep", cfg.BackupKeep,
		"upstream_retry_max", cfg.UpstreamRetryMax.String(), "upstream_batch", cfg.UpstreamBatch, "outbox_lease", cfg.OutboxLease.String(),
		"max_conns", conns.Total, "max_conns_per_ip", conns.PerAddress, "open_files_limit", files.soft, "open_files_limit_hard", files.hard)
	if cfg.LogResetLinks {
		log.Warn("--log-reset-links: password-reset and verification tokens are written to this log; whoever reads it can take the accounts (for evaluation only)")
	}
	if cfg.InternalSecretInArgs {
		log.Warn("--internal-secret on the command line shows in ps to every user of this machine: set " +
			envName("internal-secret") + " in the environment instead, or leave it out to use the secret stored in the database")
	}
	logCertificate(log, tlsConfig, selfSigned, now)
	return nil
}

// listen makes the node's TLS configuration and listens on its address; Close closes the
// listener.
func (m *Main) listen(now time.Time) (*listening, error) {
	cfg := &m.Config
	tlsConfig, fingerprint, selfSigned, err := serveTLS(cfg, now)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, model.Errorf(model.KindUnavailable, "cannot listen on %s: %v", cfg.Addr, err)
	}
	m.ln = ln
	return &listening{ln: ln, tlsConfig: tlsConfig, fingerprint: fingerprint, selfSigned: selfSigned}, nil
}

// clockOf is the clock the engine of opts will use.
func clockOf(opts engine.Options) model.Clock {
	if opts.Clock != nil {
		return opts.Clock
	}
	return model.SystemClock{}
}

// certWarnBefore is how long before its end a certificate of the operator's (--tls-cert)
// makes every start warn; the self-signed one is renewed instead.
const certWarnBefore = 30 * 24 * time.Hour

// logCertificate logs a renewal of the self-signed certificate, and warns when the
// certificate served ends within certWarnBefore or has ended.
func logCertificate(log *slog.Logger, c *tls.Config, ss *server.SelfSigned, now time.Time) {
	if ss != nil && ss.Renewed {
		log.Info("renewed the self-signed TLS certificate with the same key", "fingerprint", ss.Fingerprint,
			"previous_fingerprint", ss.PreviousFingerprint, "not_after", ss.NotAfter.UTC().Format(time.RFC3339))
	}
	if c == nil || len(c.Certificates) == 0 || c.Certificates[0].Leaf == nil {
		return
	}
	if end := c.Certificates[0].Leaf.NotAfter; now.After(end.Add(-certWarnBefore)) {
		log.Warn("the TLS certificate ends soon or has ended: renew it and restart", "not_after", end.UTC().Format(time.RFC3339))
	}
}

// Close stops the node in the reverse order of Run: the HTTP API drains (for
// shutdownTimeout at most, then the requests still running are cut), the admin socket
// and the listener close, the scheduled snapshots and the scheduler stop, and the store
// closes last. It returns the store's close error; a second Close does nothing.
func (m *Main) Close() error {
	if m.hs != nil {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := m.hs.Shutdown(sctx); err != nil {
			m.log.Warn("requests still running at the shutdown deadline were cut", "error", err.Error())
			_ = m.hs.Close()
		}
		cancel()
		m.hs = nil
	}
	if m.stopAdmin != nil {
		m.stopAdmin()
		if err := <-m.adminDone; err != nil {
			m.log.Error("admin socket", "error", err.Error())
		}
		m.stopAdmin = nil
	}
	if m.ln != nil {
		_ = m.ln.Close()
		m.ln = nil
	}
	if m.stopSMSWatch != nil {
		m.stopSMSWatch()
		m.stopSMSWatch = nil
	}
	if m.stopBackups != nil {
		m.stopBackups()
		m.stopBackups = nil
	}
	if m.scheduler {
		m.Engine.StopScheduler()
		m.scheduler = false
	}
	var err error
	if m.Store != nil {
		err = m.Store.Close()
		m.Store, m.DB = nil, nil
	}
	if m.unlockData != nil {
		m.unlockData()
		m.unlockData = nil
	}
	if m.flushLog != nil {
		m.flushLog()
	}
	return err
}

// open opens the store of the configuration: the bbolt file of the data directory, or the
// database of Config.Database, whose process then holds the data directory by a lock file
// of its own (two processes on one --data would take each other's admin socket).
func (m *Main) open(ctx context.Context, log *slog.Logger) (model.Store, error) {
	cfg := &m.Config
	if cfg.Database == "" {
		db, err := store.Open(cfg.DataDir, store.Options{LockTimeout: serveLockTimeout, Space: spaceOptions(cfg, log)})
		if err != nil {
			return nil, storeOpenError(cfg.DataDir, err)
		}
		m.DB = db
		return db, nil
	}
	if err := checkDatabaseURL(cfg.Database); err != nil {
		return nil, err
	}
	if m.unlockData == nil { // held from the first attempt (openWaiting tries again)
		unlock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		m.unlockData = unlock
	}
	unreachable := false
	db, err := openDatabaseURL(ctx, func(ctx context.Context, url string, key *postgres.SecretKey, log *slog.Logger) (model.Store, error) {
		var db model.Store
		var err error
		if m.openStore != nil {
			db, err = m.openStore(ctx, url, key, log)
		} else {
			db, err = openDatabaseListen(ctx, url, cfg.DatabaseListenURL, key, log)
		}
		if err == nil {
			return db, nil
		}
		unreachable = postgres.Unreachable(err)
		if cfg.DatabaseListenURL != "" {
			err = errors.New(scrubURL(err.Error(), cfg.DatabaseListenURL))
		}
		return nil, err
	}, cfg.Database, cfg.SecretKey, log)
	if err != nil && unreachable {
		return nil, &dbUnreachable{err}
	}
	return db, err
}

// tuneGC sets the garbage collector for a node (and for bench, which shares its machine):
// its live heap is small (a few tens of MB)
// and its allocation rate high, so collecting at 400 % growth instead of 100 % takes about
// a tenth of the node's CPU back, within a soft memory limit of 64 MiB. GOGC and
// GOMEMLIMIT in the environment win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
}

// serveTLS returns the TLS configuration of serve (nil for plain HTTP), the certificate's
// fingerprint, and the self-signed certificate as of now (created, renewed or as it was)
// when serve uses it, nil otherwise. A certificate of the operator's is never touched.
func serveTLS(cfg *ServeConfig, now time.Time) (c *tls.Config, fingerprint string, ss *server.SelfSigned, err error) {
	switch {
	case cfg.PlainHTTP:
		return nil, "", nil, nil
	case cfg.TLSCert != "":
		c, fingerprint, err = server.LoadTLSConfig(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, "", nil, model.Invalid("tls-cert", "%v", err)
		}
		return c, fingerprint, nil, nil
	}
	ss, err = server.EnsureSelfSigned(filepath.Join(cfg.DataDir, "tls"), now)
	if err != nil {
		return nil, "", nil, err
	}
	c, fingerprint, err = server.LoadTLSConfig(ss.CertFile, ss.KeyFile)
	return c, fingerprint, ss, err
}

// baseURL is the URL a client on this machine uses to reach addr.
func baseURL(addr net.Addr, withTLS bool) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if withTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
