// Package bench is the load generator of `fieldrelay bench`: it drives a running node with
// keep-alive connections, each owned by one worker, and reports throughput, latency and,
// when it can see the server process, the server's CPU time and disk writes per request.
// The command in package cli parses the flags into a Config and calls Run.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// BodySize is the size in bytes of the events bench posts.
const BodySize = 500

// Config is a bench run as the flags of `fieldrelay bench` give it; Run checks it. Its
// validation errors name the flags.
type Config struct {
	URL      string        // base URL of the node (--url)
	Path     string        // path that the events are posted to (--path)
	Conns    int           // keep-alive connections, one worker each (--conns)
	Duration time.Duration // length of the measured run (--duration)
	Count    int64         // measured requests (cycles with the lifecycle workload) to send; 0: run for Duration
	Warmup   time.Duration // warm-up before the measured run, left out of the figures
	Timeout  time.Duration // timeout of one request
	APIKeys  []string      // keys to rotate over; none: create Tenants tenants on the node of Data
	Data     string        // data directory of the running node (--data)
	Tenants  int           // tenants to create with Data
	Insecure bool          // skip the verification of the node's TLS certificate
	CA       string        // PEM file of the CA to trust (default with Data: DATA/tls/cert.pem)
	JSON     bool          // print the report as JSON
	Workload string        // WorkloadEvents or WorkloadLifecycle
	// ServerPID is the server process to measure (0: find it behind AdminSocket).
	ServerPID int

	// AdminSocket is the admin socket of the node running on Data, behind which the
	// server's pid is found.
	AdminSocket string
	// CreateTenant creates a tenant on the node running on Data (through its admin socket),
	// or in the database of a central tier; nil: the keys are given.
	CreateTenant func(ctx context.Context, in model.CreateTenantInput) (model.CreatedTenant, error)
	// Version is the build's version, sent in the User-Agent.
	Version string
}

// runConfig is a validated bench run.
type runConfig struct {
	target   string // URL the events are posted to
	base     string // URL of the node, without a trailing slash
	workload string // WorkloadEvents or WorkloadLifecycle
	// teams are the lifecycle teams of the workers, by worker id (made by
	// createBenchTeams; a worker without one creates it on its first cycle).
	teams    []string
	conns    int
	duration time.Duration
	count    int64 // 0: run for duration
	warmup   time.Duration
	timeout  time.Duration
	keys     []string
	tls      *tls.Config
	runID    string
	// userAgent is sent with every request.
	userAgent string
	// progressEvery is the period of the progress line (0: none); tty rewrites it in place.
	progressEvery time.Duration
	tty           bool
	// probe measures the server over the measured run (nil: not at all).
	probe *serverProbe
}

// Run runs the bench that f describes until its duration or count, or ctx, ends it: the
// progress line and what bench creates go to stderr, the report to stdout.
func Run(ctx context.Context, f Config, stdout, stderr io.Writer) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	cfg.tty = isTerminal(stderr)

	var created []string
	if len(cfg.keys) == 0 {
		created, cfg.keys, err = createBenchTenants(ctx, f.CreateTenant, cfg.runID, f.Tenants)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created %d mission-critical tenants: %s\n", len(created), strings.Join(created, ", "))
	}
	if cfg.workload == WorkloadLifecycle {
		if cfg.teams, err = createBenchTeams(ctx, cfg); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created %d teams, one per worker\n", len(cfg.teams))
	}
	cfg.probe = newServerProbe(ctx, f.ServerPID, f.Data, f.AdminSocket)
	rep := runBench(ctx, cfg, stderr)
	rep.TenantsCreated = created
	if f.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.printText(stdout)
	return nil
}

// config checks the flags.
func (f *Config) config() (*runConfig, error) {
	cfg := &runConfig{conns: f.Conns, duration: f.Duration, count: f.Count, warmup: f.Warmup,
		timeout: f.Timeout, progressEvery: time.Second, userAgent: "fieldrelay-bench/" + f.Version}
	u, err := url.Parse(f.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, model.Invalid("url", "--url must be an http:// or https:// URL with a host, not %s", model.Quote(f.URL))
	}
	if !strings.HasPrefix(f.Path, "/") {
		return nil, model.Invalid("path", "--path must start with /")
	}
	cfg.base = strings.TrimRight(f.URL, "/")
	cfg.target = cfg.base + f.Path
	switch cfg.workload = strings.TrimSpace(f.Workload); cfg.workload {
	case WorkloadEvents, WorkloadLifecycle:
	default:
		return nil, model.Invalid("workload", "--workload must be %s or %s, not %s", WorkloadEvents, WorkloadLifecycle, model.Quote(f.Workload))
	}
	switch {
	case f.Conns < 1 || f.Conns > 100000:
		return nil, model.Invalid("conns", "--conns must be between 1 and 100000")
	case f.Count < 0:
		return nil, model.Invalid("count", "--count must not be negative")
	case f.Count == 0 && f.Duration <= 0:
		return nil, model.Invalid("duration", "--duration must be positive (or set --count)")
	case f.Warmup < 0:
		return nil, model.Invalid("warmup", "--warmup must not be negative")
	case f.Timeout <= 0:
		return nil, model.Invalid("timeout", "--timeout must be positive")
	case f.ServerPID < 0:
		return nil, model.Invalid("server-pid", "--server-pid must be a process id")
	}
	for _, k := range f.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			cfg.keys = append(cfg.keys, k)
		}
	}
	if len(cfg.keys) == 0 {
		if f.CreateTenant == nil {
			return nil, model.Invalid("api-key", "give --api-key KEY (repeatable), or --data DIR --tenants T to create tenants on the node running on DIR, "+
				"or --database URL --tenants T to create them in a central tier's database")
		}
		if f.Tenants < 1 || f.Tenants > 1000 {
			return nil, model.Invalid("tenants", "--tenants must be between 1 and 1000")
		}
	}
	if cfg.runID, err = benchRunID(); err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		if cfg.tls, err = f.tlsConfig(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// tlsConfig trusts --ca, or DATA/tls/cert.pem with --data, on top of the system's roots.
func (f *Config) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.Insecure {
		c.InsecureSkipVerify = true
		return c, nil
	}
	ca, flag := f.CA, "ca"
	if ca == "" && f.Data != "" {
		if p := filepath.Join(f.Data, "tls", "cert.pem"); fileExists(p) {
			ca, flag = p, "data"
		}
	}
	if ca == "" {
		return c, nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, model.Invalid(flag, "cannot read the CA file: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, model.Invalid(flag, "%s holds no PEM certificate", ca)
	}
	c.RootCAs = pool
	return c, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// isTerminal reports whether w is a terminal (a character device), where the progress
// line is rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// benchRunID is 8 random lowercase letters and digits: it names the run's tenants and
// starts its idempotency keys.
func benchRunID() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b), nil
}

// createBenchTenants creates n mission-critical tenants bench-<runID>-<i> with create (through
// the admin socket of the server running on --data) and returns their slugs and first keys.
func createBenchTenants(ctx context.Context, create func(context.Context, model.CreateTenantInput) (model.CreatedTenant, error),
	runID string, n int) (slugs, keys []string, err error) {
	for i := 1; i <= n; i++ {
		slug := fmt.Sprintf("bench-%s-%d", runID, i)
		in := model.CreateTenantInput{Name: slug, Slug: slug, Email: "ops@" + slug + ".bench.invalid",
			Country: "FR", Plan: engine.PlanMissionCritical}
		res, err := create(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		slugs = append(slugs, slug)
		keys = append(keys, res.APIKey)
	}
	return slugs, keys, nil
}

// Report is what a run measured; it is the JSON of --json.
type Report struct {
	URL               string            `json:"url"`
	Workload          string            `json:"workload"`
	Conns             int               `json:"conns"`
	ConnectionsOpened uint64            `json:"connections_opened"`
	Tenants           int               `json:"tenants"` // API keys rotated over
	TenantsCreated    []string          `json:"tenants_created,omitempty"`
	RunID             string            `json:"run_id"`
	WarmupSeconds     float64           `json:"warmup_s"`
	DurationSeconds   float64           `json:"duration_s"` // measured part, warm-up excluded
	Interrupted       bool              `json:"interrupted"`
	Requests          uint64            `json:"requests"`
	OK                uint64            `json:"ok"`
	Errors            uint64            `json:"errors"`
	ErrorsByStatus    map[string]uint64 `json:"errors_by_status"`
	TransportErrors   map[string]uint64 `json:"transport_errors"`
	TransportExamples map[string]string `json:"transport_error_examples,omitempty"`
	RequestsPerSec    float64           `json:"requests_per_sec"`
	LatencyMS         LatencySummary    `json:"latency_ms"` // of the 201 answers
	BodyBytes         int               `json:"body_bytes"`
	// Lifecycle holds the cycles and the figures of each step, with --workload lifecycle.
	Lifecycle *LifecycleReport `json:"lifecycle,omitempty"`
	// Server is what the server process and its database file did over the measured run,
	// with --server-pid or --data.
	Server *ServerReport `json:"server,omitempty"`
}

func (r *Report) printText(w io.Writer) {
	if r.Lifecycle != nil {
		fmt.Fprintf(w, "fieldrelay bench: lifecycle workload, POST %s then dispatch and four mission moves\n", r.URL)
	} else {
		fmt.Fprintf(w, "fieldrelay bench: POST %s\n", r.URL)
	}
	fmt.Fprintf(w, "  conns:       %d (%d connections opened)\n", r.Conns, r.ConnectionsOpened)
	tenants := fmt.Sprintf("%d (one per API key given)", r.Tenants)
	if len(r.TenantsCreated) > 0 {
		tenants = fmt.Sprintf("%d created: %s", len(r.TenantsCreated), strings.Join(r.TenantsCreated, ", "))
	}
	fmt.Fprintf(w, "  tenants:     %s\n", tenants)
	stopped := ""
	if r.Interrupted {
		stopped = ", interrupted"
	}
	if r.Lifecycle != nil {
		r.Lifecycle.printTeams(w)
	}
	fmt.Fprintf(w, "  duration:    %.2fs (warm-up %.2fs excluded%s)\n", r.DurationSeconds, r.WarmupSeconds, stopped)
	if r.Lifecycle != nil {
		r.Lifecycle.printCycles(w)
	}
	fmt.Fprintf(w, "  requests:    %d (%d ok, %d-byte bodies)\n", r.Requests, r.OK, r.BodyBytes)
	fmt.Fprintf(w, "  errors:      %d", r.Errors)
	var kinds []string
	for _, s := range slices.Sorted(maps.Keys(r.ErrorsByStatus)) {
		kinds = append(kinds, fmt.Sprintf("HTTP %s: %d", s, r.ErrorsByStatus[s]))
	}
	for _, k := range slices.Sorted(maps.Keys(r.TransportErrors)) {
		kinds = append(kinds, fmt.Sprintf("transport %s: %d", k, r.TransportErrors[k]))
	}
	if len(kinds) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(kinds, ", "))
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(r.TransportExamples)) {
		fmt.Fprintf(w, "    first %s error: %s\n", k, r.TransportExamples[k])
	}
	fmt.Fprintf(w, "  throughput:  %.2f req/s\n", r.RequestsPerSec)
	l := r.LatencyMS
	fmt.Fprintf(w, "  latency ms:  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  (min %.2f, mean %.2f, of %d ok)\n",
		l.P50, l.P90, l.P99, l.Max, l.Min, l.Mean, r.OK)
	if r.Lifecycle != nil {
		r.Lifecycle.printSteps(w)
	}
	if r.Server != nil {
		r.Server.printText(w)
	}
}

// benchWorker is one worker: one connection, its own random source and its own figures.
// Its counters are atomic for the progress line; the rest is read only after it stopped.
type benchWorker struct {
	id     int
	client *http.Client
	tr     *http.Transport
	rng    *mrand.Rand
	seq    uint64 // requests sent, idempotency key counter
	// userAgent is sent with every request.
	userAgent string

	done  atomic.Uint64 // measured requests completed
	errs  atomic.Uint64 // measured errors
	warm  atomic.Uint64 // warm-up requests completed
	dials atomic.Uint64 // connections opened
	// cycles counts measured lifecycle cycles whose six requests all succeeded.
	cycles atomic.Uint64

	hist      latencyHistogram // latencies of 201 answers (of every step's success with --workload lifecycle)
	byStatus  map[int]uint64
	transport map[string]uint64
	examples  map[string]string

	// lc is the worker's lifecycle state and figures, with --workload lifecycle.
	lc *benchLifecycleWorker
}

// benchRun is the state the workers share.
type benchRun struct {
	cfg          *runConfig
	ctx          context.Context // Ctrl-C: abandon requests under way
	measureStart time.Time
	stopped      atomic.Bool   // no new requests
	issued       atomic.Int64  // measured requests started, with --count
	finished     chan struct{} // closed when the workers have returned
}

// runBench runs the workers until duration, count or ctx ends the run, with a progress line
// on progress, and returns the report.
func runBench(ctx context.Context, cfg *runConfig, progress io.Writer) *Report {
	start := time.Now()
	r := &benchRun{cfg: cfg, ctx: ctx, measureStart: start.Add(cfg.warmup), finished: make(chan struct{})}
	workers := make([]*benchWorker, cfg.conns)
	seed := mrand.Uint64()
	for i := range workers {
		workers[i] = newBenchWorker(i, cfg, mrand.New(mrand.NewPCG(seed, uint64(i))))
	}
	if cfg.count == 0 {
		t := time.AfterFunc(cfg.warmup+cfg.duration, func() { r.stopped.Store(true) })
		defer t.Stop()
	}
	stopOnCancel := context.AfterFunc(ctx, func() { r.stopped.Store(true) })
	defer stopOnCancel()

	// The server is sampled when the measured run starts (right after the warm-up) and
	// when it ends.
	var before serverSample
	var beforeTimer *time.Timer
	beforeTaken := make(chan struct{})
	if cfg.probe != nil {
		if cfg.warmup <= 0 {
			before = cfg.probe.sample()
			close(beforeTaken)
		} else {
			beforeTimer = time.AfterFunc(time.Until(r.measureStart), func() {
				before = cfg.probe.sample()
				close(beforeTaken)
			})
		}
	}

	var progressDone chan struct{}
	if cfg.progressEvery > 0 && progress != nil {
		progressDone = make(chan struct{})
		go func() {
			defer close(progressDone)
			r.progress(progress, start, workers)
		}()
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		if w.lc != nil {
			wg.Go(func() { w.lifecycleLoop(r) })
		} else {
			wg.Go(func() { w.loop(r) })
		}
	}
	wg.Wait()
	end := time.Now()
	var after serverSample
	if cfg.probe != nil {
		after = cfg.probe.sample()
		if beforeTimer != nil && beforeTimer.Stop() {
			before = after // the run ended during the warm-up: nothing was measured
		} else {
			<-beforeTaken
		}
	}
	close(r.finished)
	if progressDone != nil {
		<-progressDone
	}
	for _, w := range workers {
		w.tr.CloseIdleConnections()
	}
	rep := r.report(workers, end)
	if cfg.probe != nil {
		rep.Server = cfg.probe.report(before, after, rep.Requests, rep.DurationSeconds)
	}
	return rep
}

func newBenchWorker(id int, cfg *runConfig, rng *mrand.Rand) *benchWorker {
	w := &benchWorker{id: id, rng: rng, userAgent: cfg.userAgent, byStatus: map[int]uint64{}, transport: map[string]uint64{}, examples: map[string]string{}}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var protocols http.Protocols
	protocols.SetHTTP1(true) // one request at a time on one connection per worker
	w.tr = &http.Transport{
		Proxy: nil, // a benchmark talks to the node, never through a proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			w.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     cfg.tls,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxConnsPerHost:     1,
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		Protocols:           &protocols,
	}
	w.client = &http.Client{
		Transport:     w.tr,
		Timeout:       cfg.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.workload == WorkloadLifecycle {
		w.lc = newBenchLifecycleWorker(id, cfg)
	}
	return w
}

// loop posts events until the run stops.
func (w *benchWorker) loop(r *benchRun) {
	cfg := r.cfg
	for !r.stopped.Load() {
		measured := !time.Now().Before(r.measureStart)
		if measured && cfg.count > 0 {
			n := r.issued.Add(1)
			if n >= cfg.count {
				r.stopped.Store(true) // the others stop; this one sends the last request
			}
			if n > cfg.count {
				return
			}
		}
		key := cfg.keys[(w.id+int(w.seq))%len(cfg.keys)]
		body := w.event(cfg.runID)
		t0 := time.Now()
		status, err := w.post(r.ctx, cfg.target, key, body)
		lat := time.Since(t0)
		if err != nil && r.ctx.Err() != nil {
			return // interrupted: the request is abandoned, not counted
		}
		if !measured {
			w.warm.Add(1)
			continue
		}
		switch {
		case err != nil:
			kind := transportErrorKind(err)
			w.transport[kind]++
			if _, ok := w.examples[kind]; !ok {
				w.examples[kind] = err.Error()
			}
			w.errs.Add(1)
		case status != http.StatusCreated:
			w.byStatus[status]++
			w.errs.Add(1)
		default:
			w.hist.record(lat)
		}
		w.done.Add(1)
	}
}

// post sends one event and drains the answer so that the connection is kept.
func (w *benchWorker) post(ctx context.Context, target, key string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-svc-api-key", key)
	req.Header.Set("User-Agent", w.userAgent)
	res, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// transportErrorKind sorts a failed request into a few kinds, so that the report stays
// short whatever happens.
func transportErrorKind(err error) string {
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.As(err, &certErr), errors.As(err, &recordErr), strings.Contains(err.Error(), "tls:"):
		return "tls"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}

// progress prints a line every progressEvery until the workers have returned.
func (r *benchRun) progress(w io.Writer, start time.Time, workers []*benchWorker) {
	t := time.NewTicker(r.cfg.progressEvery)
	defer t.Stop()
	var last uint64
	lastAt := start
	printed := false
	for {
		select {
		case <-r.finished:
			if printed && r.cfg.tty {
				fmt.Fprintln(w)
			}
			return
		case now := <-t.C:
			var done, errs, warm, cycles uint64
			for _, wk := range workers {
				done += wk.done.Load()
				errs += wk.errs.Load()
				warm += wk.warm.Load()
				cycles += wk.cycles.Load()
			}
			rate := float64(done+warm-last) / now.Sub(lastAt).Seconds()
			last, lastAt = done+warm, now
			phase := ""
			if now.Before(r.measureStart) {
				phase = fmt.Sprintf("  warm-up (%d requests)", warm)
			}
			requests := strconv.FormatUint(done, 10)
			if r.cfg.count > 0 {
				requests += "/" + strconv.FormatInt(r.cfg.count, 10)
			}
			line := fmt.Sprintf("%6.1fs  requests %s  %.0f req/s  errors %d%s",
				now.Sub(start).Seconds(), requests, rate, errs, phase)
			if r.cfg.workload == WorkloadLifecycle {
				// --count counts cycles here.
				c := strconv.FormatUint(cycles, 10)
				if r.cfg.count > 0 {
					c += "/" + strconv.FormatInt(r.cfg.count, 10)
				}
				line = fmt.Sprintf("%6.1fs  cycles %s  requests %d  %.0f req/s  errors %d%s",
					now.Sub(start).Seconds(), c, done, rate, errs, phase)
			}
			if r.cfg.tty {
				fmt.Fprintf(w, "\r%-78s", line)
			} else {
				fmt.Fprintln(w, line)
			}
			printed = true
		}
	}
}

// report merges the workers' figures.
func (r *benchRun) report(workers []*benchWorker, end time.Time) *Report {
	cfg := r.cfg
	rep := &Report{URL: cfg.target, Workload: cfg.workload, Conns: cfg.conns, Tenants: len(cfg.keys), RunID: cfg.runID,
		WarmupSeconds: cfg.warmup.Seconds(), Interrupted: r.ctx.Err() != nil,
		ErrorsByStatus: map[string]uint64{}, TransportErrors: map[string]uint64{}, TransportExamples: map[string]string{},
		BodyBytes: BodySize}
	var hist latencyHistogram
	for _, w := range workers {
		hist.merge(&w.hist)
		rep.ConnectionsOpened += w.dials.Load()
		rep.Requests += w.done.Load()
		rep.Errors += w.errs.Load()
		for s, n := range w.byStatus {
			rep.ErrorsByStatus[strconv.Itoa(s)] += n
		}
		for k, n := range w.transport {
			rep.TransportErrors[k] += n
			if _, ok := rep.TransportExamples[k]; !ok {
				rep.TransportExamples[k] = w.examples[k]
			}
		}
	}
	rep.OK = rep.Requests - rep.Errors
	if elapsed := end.Sub(r.measureStart); elapsed > 0 {
		rep.DurationSeconds = math.Round(elapsed.Seconds()*1000) / 1000
		rep.RequestsPerSec = math.Round(float64(rep.Requests)/elapsed.Seconds()*100) / 100
	}
	rep.LatencyMS = hist.summary()
	if cfg.workload == WorkloadLifecycle {
		rep.Lifecycle = lifecycleReport(workers, len(cfg.teams), rep.DurationSeconds)
	}
	return rep
}

// Events that bench posts: what a multi-vertical dispatch site sends, each type with its
// vertical and the equipment it may call for.
var benchEventTypes = []struct {
	typ, vertical string
	equipment     []string
}{
	{"FIRE_ALARM", "emergency", []string{"extinguisher", "breathing_apparatus", "thermal_camera", "ladder"}},
	{"MEDICAL", "healthcare", []string{"defibrillator", "first_aid_kit", "oxygen", "stretcher"}},
	{"PATIENT_TRANSFER", "healthcare", []string{"stretcher", "oxygen", "wheelchair"}},
	{"ATM_FAILURE", "banking", []string{"atm_keys", "cash_cassette", "diagnostic_laptop"}},
	{"INTRUSION", "banking", []string{"radio", "body_camera", "flashlight"}},
	{"PARCEL_DAMAGED", "delivery", []string{"handheld_scanner", "packaging_kit"}},
	{"DELIVERY_FAILED", "delivery", []string{"handheld_scanner", "van"}},
	{"FLEET_BREAKDOWN", "logistics", []string{"tow_truck", "toolkit", "spare_tyre"}},
	{"COLD_CHAIN_BREACH", "logistics", []string{"thermometer", "reefer_unit", "van"}},
	{"NETWORK_OUTAGE", "telecom", []string{"fiber_splicer", "otdr", "ladder", "generator"}},
	{"ANTENNA_FAULT", "telecom", []string{"climbing_gear", "spectrum_analyzer"}},
	{"ROAD_HAZARD", "gov", []string{"traffic_cones", "signage", "high_visibility_vest"}},
	{"FLOOD", "emergency", []string{"pump", "sandbags", "boat", "waders"}},
	{"GAS_LEAK", "emergency", []string{"gas_detector", "breathing_apparatus", "valve_wrench"}},
}

// benchPriorities are drawn with these weights (out of 100).
var benchPriorities = []struct {
	name   string
	weight int
}{{"normal", 55}, {"high", 25}, {"low", 12}, {"critical", 8}}

var benchSites = []string{"Part-Dieu", "Confluence", "Vaise", "Gerland", "Croix-Rousse", "Bellecour",
	"Villeurbanne", "Monplaisir", "Fourviere", "Perrache", "Brotteaux", "Guillotiere"}

// benchFiller pads descriptions: plain words, nothing that JSON escapes.
var benchFiller = strings.Repeat("Caller reports the situation on site, access through the main gate, "+
	"a supervisor is informed and waits for the team at the entrance; keep the radio on channel 4 and "+
	"confirm arrival to the dispatch desk. ", 6)

type benchEvent struct {
	Type           string       `json:"type"`
	Priority       string       `json:"priority"`
	Vertical       string       `json:"vertical"`
	IdempotencyKey string       `json:"idempotency_key"`
	Payload        benchPayload `json:"payload"`
}

type benchPayload struct {
	Lat               float64  `json:"lat"`
	Lng               float64  `json:"lng"`
	Severity          string   `json:"severity"`
	RequiredEquipment []string `json:"required_equipment"`
	Site              string   `json:"site"`
	ReporterRef       string   `json:"reporter_ref"`
	Description       string   `json:"description"` // last: padded in place
}

// benchSeverities is the severity scale every vertical's parser accepts.
var benchSeverities = []string{"critical", "high", "medium", "low"}

// event builds the worker's next event, BodySize bytes long, and advances its counter.
func (w *benchWorker) event(runID string) []byte {
	rng := w.rng
	var ti int
	if w.lc != nil { // the events of the worker's vertical, which its team serves
		ti = w.lc.vertical.types[rng.IntN(len(w.lc.vertical.types))]
	} else {
		ti = rng.IntN(len(benchEventTypes))
	}
	et := benchEventTypes[ti]
	prio, p := "normal", rng.IntN(100)
	for _, bp := range benchPriorities {
		if p < bp.weight {
			prio = bp.name
			break
		}
		p -= bp.weight
	}
	eq := make([]string, 0, 2)
	for _, i := range rng.Perm(len(et.equipment))[:1+rng.IntN(min(2, len(et.equipment)))] {
		eq = append(eq, et.equipment[i])
	}
	ev := benchEvent{
		Type: et.typ, Priority: prio, Vertical: et.vertical,
		IdempotencyKey: "bench-" + runID + "-" + strconv.Itoa(w.id) + "-" + strconv.FormatUint(w.seq, 10),
		Payload: benchPayload{
			Lat:               math.Round((45.70+rng.Float64()*0.10)*1e6) / 1e6,
			Lng:               math.Round((4.80+rng.Float64()*0.10)*1e6) / 1e6,
			Severity:          benchSeverities[rng.IntN(len(benchSeverities))],
			RequiredEquipment: eq,
			Site:              benchSites[rng.IntN(len(benchSites))],
			ReporterRef:       "CALL-" + strconv.Itoa(100000+rng.IntN(900000)),
		},
	}
	w.seq++
	b, err := json.Marshal(&ev)
	if err != nil { // cannot happen: plain strings and numbers
		panic(err)
	}
	// b ends with `"description":""}}`: pad the description in place.
	pad := BodySize - len(b)
	if pad <= 0 {
		return b
	}
	off := rng.IntN(len(benchFiller) - pad)
	out := make([]byte, 0, BodySize)
	out = append(out, b[:len(b)-3]...)
	out = append(out, benchFiller[off:off+pad]...)
	return append(out, b[len(b)-3:]...)
}

// The server's side of a run: CPU time and disk writes of the server process, read from
// /proc/PID/stat and /proc/PID/io (Linux), and the size of its database file, sampled when
// the measured run starts and when it ends.

// serverProbe samples the server process and its database file.
type serverProbe struct {
	pid      int    // 0: unknown, see pidErr
	pidFrom  string // "--server-pid" or the admin socket's path
	pidErr   string // why the pid is unknown
	dbPath   string // DATA/fieldrelay.db; "" without --data
	procRoot string // "/proc"
	clkTck   int64  // clock ticks per second of the CPU times
}

// newServerProbe is the probe of the server given by --server-pid, or found behind the admin
// socket of --data; nil when there is neither.
func newServerProbe(ctx context.Context, pid int, dataDir, sock string) *serverProbe {
	if pid == 0 && dataDir == "" {
		return nil
	}
	p := &serverProbe{pid: pid, pidFrom: "--server-pid", procRoot: "/proc", clkTck: clockTicks("/proc/self/auxv")}
	if dataDir != "" {
		p.dbPath = filepath.Join(dataDir, store.FileName)
	}
	if pid == 0 {
		var err error
		if p.pid, err = adminSocketPID(ctx, sock); err != nil {
			p.pidErr = fmt.Sprintf("server pid unknown (%v): pass --server-pid for its CPU and disk figures", err)
		}
		p.pidFrom = sock
	}
	return p
}

// adminSocketPID is the pid of the process listening on the unix socket at path.
func adminSocketPID(ctx context.Context, path string) (int, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(dctx, "unix", path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("%s: not a unix connection", path)
	}
	return unixPeerPID(uc)
}

// defaultClockTicks is USER_HZ, the unit of the CPU times of /proc/PID/stat, on every
// Linux build in use (`getconf CLK_TCK`).
const defaultClockTicks = 100

// clockTicks reads CLK_TCK from the auxiliary vector that the kernel gave this process
// (AT_CLKTCK), or returns defaultClockTicks.
func clockTicks(auxvPath string) int64 {
	b, err := os.ReadFile(auxvPath)
	if err != nil {
		return defaultClockTicks
	}
	if hz, ok := auxvClockTicks(b, strconv.IntSize/8, binary.NativeEndian); ok {
		return hz
	}
	return defaultClockTicks
}

// auxvClockTicks finds AT_CLKTCK in an auxiliary vector: (type, value) pairs of machine
// words, ended by AT_NULL.
func auxvClockTicks(b []byte, word int, order binary.ByteOrder) (int64, bool) {
	const atNull, atClkTck = 0, 17
	read := func(p []byte) uint64 {
		if word == 4 {
			return uint64(order.Uint32(p))
		}
		return order.Uint64(p)
	}
	for ; len(b) >= 2*word; b = b[2*word:] {
		switch typ, val := read(b), read(b[word:]); typ {
		case atNull:
			return 0, false
		case atClkTck:
			if val == 0 || val > 1e6 {
				return 0, false
			}
			return int64(val), true
		}
	}
	return 0, false
}

// procCPU is the CPU time of a process in clock ticks.
type procCPU struct{ utime, stime uint64 }

// parseProcStat reads utime and stime, fields 14 and 15 of /proc/PID/stat. The command
// name, field 2, is in parentheses and may hold spaces and parentheses: the fields are
// counted after its last ')'.
func parseProcStat(s string) (procCPU, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procCPU{}, errors.New("no command name in parentheses")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return procCPU{}, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procCPU{}, fmt.Errorf("utime/stime: %w", err)
	}
	return procCPU{utime: u, stime: st}, nil
}

// procIO is what bench reads of /proc/PID/io.
type procIO struct {
	writeBytes, wchar       uint64
	hasWriteBytes, hasWchar bool
}

// parseProcIO reads write_bytes (bytes the process sent to the block layer) and wchar
// (bytes passed to write calls, sockets and pipes included) from /proc/PID/io.
func parseProcIO(s string) (procIO, error) {
	var out procIO
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch strings.TrimSpace(k) {
		case "write_bytes":
			out.writeBytes, out.hasWriteBytes = n, true
		case "wchar":
			out.wchar, out.hasWchar = n, true
		}
	}
	if !out.hasWriteBytes && !out.hasWchar {
		return out, errors.New("neither write_bytes nor wchar in it")
	}
	return out, nil
}

// serverSample is one reading of the server; each part may have failed on its own.
type serverSample struct {
	cpu    procCPU
	cpuErr error
	io     procIO
	ioErr  error
	dbSize int64
	dbErr  error
}

func (p *serverProbe) sample() serverSample {
	var s serverSample
	if p.pid > 0 {
		dir := filepath.Join(p.procRoot, strconv.Itoa(p.pid))
		if b, err := os.ReadFile(filepath.Join(dir, "stat")); err != nil {
			s.cpuErr = err
		} else if s.cpu, err = parseProcStat(string(b)); err != nil {
			s.cpuErr = fmt.Errorf("%s: %w", filepath.Join(dir, "stat"), err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "io")); err != nil {
			s.ioErr = err
		} else if s.io, err = parseProcIO(string(b)); err != nil {
			s.ioErr = fmt.Errorf("%s: %w", filepath.Join(dir, "io"), err)
		}
	}
	if p.dbPath != "" {
		if st, err := os.Stat(p.dbPath); err != nil {
			s.dbErr = err
		} else {
			s.dbSize = st.Size()
		}
	}
	return s
}

// ServerReport is the "server" object of the JSON report. Figures that could not be
// measured are left out, and notes say why.
type ServerReport struct {
	PID     int    `json:"pid,omitempty"`
	PIDFrom string `json:"pid_from,omitempty"` // "--server-pid" or the admin socket
	ClkTck  int64  `json:"clk_tck,omitempty"`  // clock ticks per second of the CPU times

	// CPU time (utime+stime) of the whole server process over the measured run.
	CPUSeconds          *float64 `json:"cpu_s,omitempty"`
	CPUUserSeconds      *float64 `json:"cpu_user_s,omitempty"`
	CPUSystemSeconds    *float64 `json:"cpu_system_s,omitempty"`
	CPUCores            *float64 `json:"cpu_cores,omitempty"`          // cpu_s / duration_s
	CPUMicrosPerRequest *float64 `json:"cpu_us_per_request,omitempty"` // over all measured requests, ok or not

	// Deltas of /proc/PID/io; disk_bytes is write_bytes, or wchar when write_bytes is
	// missing or did not move (disk_bytes_source says which).
	WriteBytes          *uint64  `json:"write_bytes,omitempty"`
	WChar               *uint64  `json:"wchar,omitempty"`
	DiskBytes           *uint64  `json:"disk_bytes,omitempty"`
	DiskBytesSource     string   `json:"disk_bytes_source,omitempty"`
	DiskBytesPerRequest *float64 `json:"disk_bytes_per_request,omitempty"`

	// Size of DATA/fieldrelay.db, with --data.
	DBFile             string   `json:"db_file,omitempty"`
	DBBytesBefore      *int64   `json:"db_bytes_before,omitempty"`
	DBBytesAfter       *int64   `json:"db_bytes_after,omitempty"`
	DBGrowthBytes      *int64   `json:"db_growth_bytes,omitempty"`
	DBGrowthPerRequest *float64 `json:"db_growth_bytes_per_request,omitempty"`

	Notes []string `json:"notes,omitempty"`
}

func benchRound(v float64, decimals int) *float64 {
	p := math.Pow(10, float64(decimals))
	r := math.Round(v*p) / p
	return &r
}

// report turns the samples taken around the measured run into figures per request.
func (p *serverProbe) report(before, after serverSample, requests uint64, seconds float64) *ServerReport {
	r := &ServerReport{PID: p.pid, PIDFrom: p.pidFrom, DBFile: p.dbPath}
	if p.pidErr != "" {
		r.Notes = append(r.Notes, p.pidErr)
	}
	perRequest := func(v float64, decimals int) *float64 {
		if requests == 0 {
			return nil
		}
		return benchRound(v/float64(requests), decimals)
	}
	if p.pid > 0 {
		switch err := cmp.Or(before.cpuErr, after.cpuErr); {
		case err != nil:
			r.Notes = append(r.Notes, fmt.Sprintf("no server CPU figures: /proc unreadable: %v", err))
		case after.cpu.utime < before.cpu.utime || after.cpu.stime < before.cpu.stime:
			r.Notes = append(r.Notes, fmt.Sprintf("no server CPU figures: the CPU time of pid %d went backwards (a new process?)", p.pid))
		default:
			r.ClkTck = p.clkTck
			hz := float64(p.clkTck)
			user := float64(after.cpu.utime-before.cpu.utime) / hz
			sys := float64(after.cpu.stime-before.cpu.stime) / hz
			r.CPUSeconds, r.CPUUserSeconds, r.CPUSystemSeconds = benchRound(user+sys, 3), benchRound(user, 3), benchRound(sys, 3)
			if seconds > 0 {
				r.CPUCores = benchRound((user+sys)/seconds, 2)
			}
			r.CPUMicrosPerRequest = perRequest((user+sys)*1e6, 1)
		}
		switch err := cmp.Or(before.ioErr, after.ioErr); {
		case err != nil:
			r.Notes = append(r.Notes, fmt.Sprintf("no server disk figures: /proc unreadable: %v", err))
		case after.io.writeBytes < before.io.writeBytes || after.io.wchar < before.io.wchar:
			r.Notes = append(r.Notes, fmt.Sprintf("no server disk figures: the counters of pid %d went backwards (a new process?)", p.pid))
		default:
			var wb, wc uint64
			if before.io.hasWriteBytes && after.io.hasWriteBytes {
				wb = after.io.writeBytes - before.io.writeBytes
				r.WriteBytes = &wb
			}
			if before.io.hasWchar && after.io.hasWchar {
				wc = after.io.wchar - before.io.wchar
				r.WChar = &wc
			}
			switch {
			case r.WriteBytes != nil && (wb > 0 || r.WChar == nil || wc == 0):
				r.DiskBytes, r.DiskBytesSource = r.WriteBytes, "write_bytes"
			case r.WChar != nil:
				r.DiskBytes, r.DiskBytesSource = r.WChar, "wchar"
				why := "is missing"
				if r.WriteBytes != nil {
					why = "did not move (no block I/O accounting here, or a data directory on tmpfs)"
				}
				r.Notes = append(r.Notes, "write_bytes "+why+": the disk figure is wchar, every byte passed to write calls, HTTP answers included")
			}
			if r.DiskBytes != nil {
				r.DiskBytesPerRequest = perRequest(float64(*r.DiskBytes), 1)
			}
		}
	}
	if p.dbPath != "" {
		if err := cmp.Or(before.dbErr, after.dbErr); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("no database file growth: %v", err))
		} else {
			b, a := before.dbSize, after.dbSize
			g := a - b
			r.DBBytesBefore, r.DBBytesAfter, r.DBGrowthBytes = &b, &a, &g
			r.DBGrowthPerRequest = perRequest(float64(g), 1)
		}
	}
	return r
}

func (r *ServerReport) printText(w io.Writer) {
	perRequest := func(v *float64, unit string) string {
		if v == nil {
			return ""
		}
		return fmt.Sprintf(" = %s/request", fmt.Sprintf(unit, *v))
	}
	if r.PID > 0 {
		fmt.Fprintf(w, "  server:      pid %d (from %s)\n", r.PID, r.PIDFrom)
	}
	if r.CPUSeconds != nil {
		cores := ""
		if r.CPUCores != nil {
			cores = fmt.Sprintf(", %.2f cores", *r.CPUCores)
		}
		fmt.Fprintf(w, "  server cpu:  %.3fs (user %.3fs, system %.3fs%s; /proc/%d/stat at %d Hz)%s\n",
			*r.CPUSeconds, *r.CPUUserSeconds, *r.CPUSystemSeconds, cores, r.PID, r.ClkTck, perRequest(r.CPUMicrosPerRequest, "%.1f µs"))
	}
	if r.DiskBytes != nil {
		per := ""
		if r.DiskBytesPerRequest != nil {
			per = fmt.Sprintf(" = %.0f bytes/request (%s)", *r.DiskBytesPerRequest, benchFormatBytes(*r.DiskBytesPerRequest))
		}
		fmt.Fprintf(w, "  disk writes: %s (%s of /proc/%d/io)%s\n", benchFormatBytes(float64(*r.DiskBytes)), r.DiskBytesSource, r.PID, per)
	}
	if r.DBGrowthBytes != nil {
		per := ""
		if r.DBGrowthPerRequest != nil {
			per = fmt.Sprintf(" = %.0f bytes/request", *r.DBGrowthPerRequest)
		}
		fmt.Fprintf(w, "  db file:     %s %s -> %s (%+d bytes%s)\n", r.DBFile,
			benchFormatBytes(float64(*r.DBBytesBefore)), benchFormatBytes(float64(*r.DBBytesAfter)), *r.DBGrowthBytes, per)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  server note: %s\n", n)
	}
}

// benchFormatBytes writes n bytes in B, KiB, MiB or GiB.
func benchFormatBytes(n float64) string {
	const k = 1024
	switch a := math.Abs(n); {
	case a < k:
		return fmt.Sprintf("%.0f B", n)
	case a < k*k:
		return fmt.Sprintf("%.2f KiB", n/k)
	case a < k*k*k:
		return fmt.Sprintf("%.2f MiB", n/(k*k))
	}
	return fmt.Sprintf("%.2f GiB", n/(k*k*k))
}
