package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
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
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/server"
	"github.com/spf13/cobra"
)

// benchBodySize is the size in bytes of the events bench posts.
const benchBodySize = 500

// benchFlags are the flags of `fieldrelay bench`.
type benchFlags struct {
	url      string
	path     string
	conns    int
	duration time.Duration
	count    int64
	warmup   time.Duration
	timeout  time.Duration
	apiKeys  []string
	data     string
	tenants  int
	insecure bool
	ca       string
	json     bool
}

func (a *app) newBenchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a running node with POST /v1/events and report throughput and latency",
		Long: "Drive a running node with --conns keep-alive connections, each owned by one worker that posts\n" +
			"realistic events back to back: about 500-byte bodies with a unique idempotency_key, a type,\n" +
			"priority and vertical drawn like a dispatch site's traffic, and a payload near Lyon. Requests\n" +
			"rotate over the API keys of --api-key, or over the first keys of --tenants new mission-critical\n" +
			"tenants (never rate limited) that bench creates through the admin socket of the server running\n" +
			"on --data (they are named bench-<run>-<i> and stay: suspend them afterwards if you like).\n\n" +
			"The run lasts --duration, or --count requests when that is set, after --warmup whose requests\n" +
			"are left out of the figures; Ctrl-C stops it early and still prints the report. A progress line\n" +
			"goes to stderr every second; the report goes to stdout (JSON with --json): requests, errors by\n" +
			"HTTP status (anything but 201) and by transport failure, requests per second, and the latency\n" +
			"of the 201 answers (p50, p90, p99, max in ms). For the self-signed certificate of serve, pass\n" +
			"--ca DATA/tls/cert.pem (the default with --data) or --insecure.",
		Example: `  fieldrelay bench --data /var/lib/fieldrelay --tenants 8 --conns 64 --duration 30s
  fieldrelay bench --url https://node.example:8443 --ca node-ca.pem --api-key fr_live_… --api-key fr_live_… --count 100000
  fieldrelay bench --url http://127.0.0.1:8080 --api-key "$KEY" --conns 16 --duration 10s --json`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return a.runBenchCommand(cmd, &f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "https://127.0.0.1:8443", "base URL of the node")
	fl.StringVar(&f.path, "path", "/v1/events", "path that the events are posted to")
	fl.IntVar(&f.conns, "conns", 64, "keep-alive connections, one worker each")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "length of the measured run (after the warm-up)")
	fl.Int64Var(&f.count, "count", 0, "measured requests to send, then stop (wins over --duration)")
	fl.DurationVar(&f.warmup, "warmup", time.Second, "warm-up before the measured run, left out of the figures")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "timeout of one request")
	fl.StringSliceVar(&f.apiKeys, "api-key", nil, "API key to send as x-svc-api-key (repeat, or comma-separate, to rotate over several; wins over --data)")
	fl.StringVar(&f.data, "data", "", "data directory of the running node: create --tenants tenants through its admin socket")
	fl.IntVar(&f.tenants, "tenants", 4, "tenants to create with --data")
	fl.BoolVar(&f.insecure, "insecure", false, "skip the verification of the node's TLS certificate")
	fl.StringVar(&f.ca, "ca", "", "PEM file of the CA (or self-signed certificate) to trust (default with --data: DATA/tls/cert.pem when it exists)")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

// benchConfig is a validated bench run.
type benchConfig struct {
	target   string // URL the events are posted to
	conns    int
	duration time.Duration
	count    int64 // 0: run for duration
	warmup   time.Duration
	timeout  time.Duration
	keys     []string
	tls      *tls.Config
	runID    string
	// progressEvery is the period of the progress line (0: none); tty rewrites it in place.
	progressEvery time.Duration
	tty           bool
}

func (a *app) runBenchCommand(cmd *cobra.Command, f *benchFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	errOut := cmd.ErrOrStderr()
	cfg.tty = isTerminal(errOut)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var created []string
	if len(cfg.keys) == 0 {
		created, cfg.keys, err = createBenchTenants(ctx, f.data, cfg.runID, f.tenants)
		if err != nil {
			return err
		}
		fmt.Fprintf(errOut, "created %d mission-critical tenants: %s\n", len(created), strings.Join(created, ", "))
	}
	rep := runBench(ctx, cfg, errOut)
	rep.TenantsCreated = created
	if f.json {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	rep.printText(cmd.OutOrStdout())
	return nil
}

// config checks the flags.
func (f *benchFlags) config() (*benchConfig, error) {
	cfg := &benchConfig{conns: f.conns, duration: f.duration, count: f.count, warmup: f.warmup,
		timeout: f.timeout, progressEvery: time.Second}
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, engine.Invalid("url", "--url must be an http:// or https:// URL with a host, not %q", f.url)
	}
	if !strings.HasPrefix(f.path, "/") {
		return nil, engine.Invalid("path", "--path must start with /")
	}
	cfg.target = strings.TrimRight(f.url, "/") + f.path
	switch {
	case f.conns < 1 || f.conns > 100000:
		return nil, engine.Invalid("conns", "--conns must be between 1 and 100000")
	case f.count < 0:
		return nil, engine.Invalid("count", "--count must not be negative")
	case f.count == 0 && f.duration <= 0:
		return nil, engine.Invalid("duration", "--duration must be positive (or set --count)")
	case f.warmup < 0:
		return nil, engine.Invalid("warmup", "--warmup must not be negative")
	case f.timeout <= 0:
		return nil, engine.Invalid("timeout", "--timeout must be positive")
	}
	for _, k := range f.apiKeys {
		if k = strings.TrimSpace(k); k != "" {
			cfg.keys = append(cfg.keys, k)
		}
	}
	if len(cfg.keys) == 0 {
		if f.data == "" {
			return nil, engine.Invalid("api-key", "give --api-key KEY (repeatable), or --data DIR --tenants T to create tenants on the node running on DIR")
		}
		if f.tenants < 1 || f.tenants > 1000 {
			return nil, engine.Invalid("tenants", "--tenants must be between 1 and 1000")
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
func (f *benchFlags) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.insecure {
		c.InsecureSkipVerify = true
		return c, nil
	}
	ca, flag := f.ca, "ca"
	if ca == "" && f.data != "" {
		if p := filepath.Join(f.data, "tls", "cert.pem"); fileExists(p) {
			ca, flag = p, "data"
		}
	}
	if ca == "" {
		return c, nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, engine.Invalid(flag, "cannot read the CA file: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, engine.Invalid(flag, "%s holds no PEM certificate", ca)
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

// createBenchTenants creates n mission-critical tenants bench-<runID>-<i> through the admin
// socket of the server running on dataDir and returns their slugs and first keys.
func createBenchTenants(ctx context.Context, dataDir, runID string, n int) (slugs, keys []string, err error) {
	for i := 1; i <= n; i++ {
		slug := fmt.Sprintf("bench-%s-%d", runID, i)
		in := engine.CreateTenantInput{Name: slug, Slug: slug, Email: "ops@" + slug + ".bench.invalid",
			Country: "FR", Plan: engine.PlanMissionCritical}
		var res engine.CreatedTenant
		if err := server.CallAdmin(ctx, adminSocket(dataDir), opTenantCreate, in, &res); err != nil {
			if errors.Is(err, server.ErrAdminUnavailable) {
				return nil, nil, engine.Errorf(engine.KindUnavailable,
					"no fieldrelay server answers on %s: start `fieldrelay serve --data %s` first, or pass --api-key", adminSocket(dataDir), dataDir)
			}
			return nil, nil, err
		}
		slugs = append(slugs, slug)
		keys = append(keys, res.APIKey)
	}
	return slugs, keys, nil
}

// benchReport is what a run measured; it is the JSON of --json.
type benchReport struct {
	URL               string            `json:"url"`
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
	LatencyMS         latencySummary    `json:"latency_ms"` // of the 201 answers
	BodyBytes         int               `json:"body_bytes"`
}

func (r *benchReport) printText(w io.Writer) {
	fmt.Fprintf(w, "fieldrelay bench: POST %s\n", r.URL)
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
	fmt.Fprintf(w, "  duration:    %.2fs (warm-up %.2fs excluded%s)\n", r.DurationSeconds, r.WarmupSeconds, stopped)
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
}

// benchWorker is one worker: one connection, its own random source and its own figures.
// Its counters are atomic for the progress line; the rest is read only after it stopped.
type benchWorker struct {
	id     int
	client *http.Client
	tr     *http.Transport
	rng    *mrand.Rand
	seq    uint64 // requests sent, idempotency key counter

	done  atomic.Uint64 // measured requests completed
	errs  atomic.Uint64 // measured errors
	warm  atomic.Uint64 // warm-up requests completed
	dials atomic.Uint64 // connections opened

	hist      latencyHistogram // latencies of 201 answers
	byStatus  map[int]uint64
	transport map[string]uint64
	examples  map[string]string
}

// benchRun is the state the workers share.
type benchRun struct {
	cfg          *benchConfig
	ctx          context.Context // Ctrl-C: abandon requests under way
	measureStart time.Time
	stopped      atomic.Bool   // no new requests
	issued       atomic.Int64  // measured requests started, with --count
	finished     chan struct{} // closed when the workers have returned
}

// runBench runs the workers until duration, count or ctx ends the run, with a progress line
// on progress, and returns the report.
func runBench(ctx context.Context, cfg *benchConfig, progress io.Writer) *benchReport {
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
		wg.Go(func() { w.loop(r) })
	}
	wg.Wait()
	end := time.Now()
	close(r.finished)
	if progressDone != nil {
		<-progressDone
	}
	for _, w := range workers {
		w.tr.CloseIdleConnections()
	}
	return r.report(workers, end)
}

func newBenchWorker(id int, cfg *benchConfig, rng *mrand.Rand) *benchWorker {
	w := &benchWorker{id: id, rng: rng, byStatus: map[int]uint64{}, transport: map[string]uint64{}, examples: map[string]string{}}
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
	req.Header.Set("User-Agent", "fieldrelay-bench/"+version)
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
			var done, errs, warm uint64
			for _, wk := range workers {
				done += wk.done.Load()
				errs += wk.errs.Load()
				warm += wk.warm.Load()
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
func (r *benchRun) report(workers []*benchWorker, end time.Time) *benchReport {
	cfg := r.cfg
	rep := &benchReport{URL: cfg.target, Conns: cfg.conns, Tenants: len(cfg.keys), RunID: cfg.runID,
		WarmupSeconds: cfg.warmup.Seconds(), Interrupted: r.ctx.Err() != nil,
		ErrorsByStatus: map[string]uint64{}, TransportErrors: map[string]uint64{}, TransportExamples: map[string]string{},
		BodyBytes: benchBodySize}
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

// event builds the worker's next event, benchBodySize bytes long, and advances its counter.
func (w *benchWorker) event(runID string) []byte {
	rng := w.rng
	et := benchEventTypes[rng.IntN(len(benchEventTypes))]
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
	pad := benchBodySize - len(b)
	if pad <= 0 {
		return b
	}
	off := rng.IntN(len(benchFiller) - pad)
	out := make([]byte, 0, benchBodySize)
	out = append(out, b[:len(b)-3]...)
	out = append(out, benchFiller[off:off+pad]...)
	return append(out, b[len(b)-3:]...)
}
