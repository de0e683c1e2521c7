package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// headerInternal carries the internal secret that /metrics requires.
const headerInternal = "x-svc-internal"

// knownStatuses are the statuses the API answers; each route keeps a slot for each, filled
// with its counter at the first answer of that status, so that counting a request is one
// atomic load and one atomic add, with no label look-up.
var knownStatuses = [...]int{200, 201, 202, 400, 401, 403, 404, 405, 409, 413, 415, 422, 423, 429, 500, 503}

// statusSlot maps a status to its index in knownStatuses (-1 for others).
var statusSlot = func() (t [600]int8) {
	for i := range t {
		t[i] = -1
	}
	for i, s := range knownStatuses {
		t[s] = int8(i)
	}
	return t
}()

// metrics are the node's Prometheus metrics: the HTTP ones counted per request, the rest
// read from the engine's statistics at scrape time. No label holds a tenant, key, token
// or email: routes are patterns (/v1/events/:id), never raw paths.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	unmatched *routeMetrics
}

// routeMetrics are the series of one route. A series is made when the route first
// answers (the latency) or first answers a status (the counter), never before: a route
// that is never hit, or a status it never answers, shows no zero series in a scrape
// (docs/decisions/0067-metrics-series.md).
type routeMetrics struct {
	method, route string
	m             *metrics
	latency       atomic.Pointer[prometheus.Observer]
	byStatus      [len(knownStatuses)]atomic.Pointer[prometheus.Counter]
}

func newMetrics(eng *engine.Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fieldrelay_http_requests_total",
		Help: "HTTP requests answered, by method, route pattern and status."}, []string{"method", "route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fieldrelay_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by method and route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		[]string{"method", "route"})
	m.reg.MustRegister(m.requests, m.latency, engineCollector{eng},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.unmatched = m.route("-", "unmatched")
	return m
}

// route returns the (still empty) series of a route.
func (m *metrics) route(method, path string) *routeMetrics {
	return &routeMetrics{method: method, route: path, m: m}
}

// observe counts one answered request, making the route's series it needs on first use.
// Two first requests racing make the same series: WithLabelValues returns the one child
// of a label set.
func (rm *routeMetrics) observe(status int, d time.Duration) {
	lat := rm.latency.Load()
	if lat == nil {
		o := rm.m.latency.WithLabelValues(rm.method, rm.route)
		lat = &o
		rm.latency.Store(lat)
	}
	(*lat).Observe(d.Seconds())
	if status < 0 || status >= len(statusSlot) || statusSlot[status] < 0 {
		rm.m.requests.WithLabelValues(rm.method, rm.route, strconv.Itoa(status)).Inc()
		return
	}
	slot := &rm.byStatus[statusSlot[status]]
	c := slot.Load()
	if c == nil {
		n := rm.m.requests.WithLabelValues(rm.method, rm.route, strconv.Itoa(status))
		c = &n
		slot.Store(c)
	}
	(*c).Inc()
}

// handleMetrics answers GET /metrics in the Prometheus text format when the request
// carries the internal secret, and the JSON not_found of an unknown route otherwise, so
// that the endpoint's existence is not revealed. The comparison takes the same time
// whatever the header holds.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if !s.internalOK(r.Header.Get(headerInternal)) {
		return noRoute(r)
	}
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

// internalOK compares a header with the internal secret in constant time (hashes of
// equal length, so not even the secret's length leaks). An empty secret opens nothing.
func (s *Server) internalOK(got string) bool {
	if s.cfg.InternalSecret == "" || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.cfg.InternalSecret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// engineCollector reads the engine's statistics at scrape time.
type engineCollector struct{ eng *engine.Engine }

var (
	descAccepted = prometheus.NewDesc("fieldrelay_events_accepted_total",
		"Events accepted, by channel_selected; each event counts once.", []string{"channel"}, nil)
	descSettled = prometheus.NewDesc("fieldrelay_events_settled_total",
		"Events that reached a delivery outcome, by status (delivered, failed); each event counts at most once.",
		[]string{"status"}, nil)
	descAttempts = prometheus.NewDesc("fieldrelay_delivery_attempts_total",
		"Delivery calls made, by kind (webhook, sms) and outcome (succeeded, failed).", []string{"kind", "outcome"}, nil)
	descWebhookFailures = prometheus.NewDesc("fieldrelay_webhook_failures_total",
		"Webhook messages that ended without success (retries spent, 410, subscription gone).", nil, nil)
	descSMS         = prometheus.NewDesc("fieldrelay_sms_sent_total", "SMS segments the gateway accepted (a long text counts each part).", nil, nil)
	descSMSHeld     = prometheus.NewDesc("fieldrelay_sms_held_total", "SMS held back by their recipient's rate limit.", nil, nil)
	descSMSUp       = prometheus.NewDesc("fieldrelay_sms_gateway_up", "1 when the SMS gateway answered its latest probe or call, 0 when it did not (absent before either, or without a gateway).", nil, nil)
	descOutboxDepth = prometheus.NewDesc("fieldrelay_outbox_depth",
		"Outbox entries waiting in the scheduler (deliveries, webhook messages, reinforcement checks).", nil, nil)
	descOutboxOldest = prometheus.NewDesc("fieldrelay_outbox_oldest_due_seconds",
		"How long the most overdue outbox entry has been due (0 when none is).", nil, nil)
	descMissions = prometheus.NewDesc("fieldrelay_mission_moves_total",
		"Missions moved into each state (CREATED by dispatch).", []string{"state"}, nil)
	descLag = prometheus.NewDesc("fieldrelay_scheduler_lag_seconds",
		"How late the scheduler started its latest outbox attempt after its due time.", nil, nil)
	descRunning = prometheus.NewDesc("fieldrelay_scheduler_running", "1 while the scheduler runs.", nil, nil)
	descDBSize  = prometheus.NewDesc("fieldrelay_bbolt_size_bytes", "Size of the database file.", nil, nil)
	descReadTx  = prometheus.NewDesc("fieldrelay_bbolt_read_tx_total", "Read transactions started.", nil, nil)
	descOpenTx  = prometheus.NewDesc("fieldrelay_bbolt_open_read_tx", "Read transactions open now.", nil, nil)
	descWriteTx = prometheus.NewDesc("fieldrelay_bbolt_write_tx_total",
		"Write transactions committed (a group commit counts once).", nil, nil)
	descPages      = prometheus.NewDesc("fieldrelay_bbolt_pages_written_total", "Pages written by commits.", nil, nil)
	descWriteTime  = prometheus.NewDesc("fieldrelay_bbolt_write_seconds_total", "Time spent writing pages.", nil, nil)
	descSpillTime  = prometheus.NewDesc("fieldrelay_bbolt_spill_seconds_total", "Time spent spilling nodes.", nil, nil)
	descFreePages  = prometheus.NewDesc("fieldrelay_bbolt_free_pages", "Free pages of the database file.", nil, nil)
	descPendingPgs = prometheus.NewDesc("fieldrelay_bbolt_pending_pages",
		"Pages freed but still held by open read transactions.", nil, nil)
	descDiskFree = prometheus.NewDesc("fieldrelay_disk_free_bytes",
		"Free bytes of the data directory's filesystem (-1 when it cannot be told).", nil, nil)
	descDiskLow = prometheus.NewDesc("fieldrelay_disk_low",
		"1 while the data directory's free space is below the warning threshold (--disk-warn-free-mb).", nil, nil)
	descDiskFull = prometheus.NewDesc("fieldrelay_disk_full",
		"1 while writes are refused for want of space (below --disk-min-free-mb, or after a write failed with ENOSPC).", nil, nil)
	descNotifyUp = prometheus.NewDesc("fieldrelay_database_notifications_up",
		"1 while the notifications of the other processes of the central tier reach this one (its heartbeats come back), 0 while they do not and its caches of keys, users and tenants are bypassed (absent without --database).", nil, nil)
	descUpLinks = prometheus.NewDesc("fieldrelay_upstream_links",
		"Tenants with an upstream, by link state (paused, down, idle, pushing).", []string{"state"}, nil)
	descUpBacklog = prometheus.NewDesc("fieldrelay_upstream_backlog",
		"Changes in the upstream change logs not yet acknowledged by the upstream, over every tenant.", nil, nil)
	descDownBehind = prometheus.NewDesc("fieldrelay_downstream_behind",
		"Central changes not yet applied at this site after the last pull, over every tenant with an upstream.", nil, nil)
	descDownAge = prometheus.NewDesc("fieldrelay_downstream_newest_age_seconds",
		"Age of the newest central change applied at this site (the largest over the tenants with an upstream).", nil, nil)
	descDownLagging = prometheus.NewDesc("fieldrelay_downstream_lagging_links",
		"Links whose site was behind the central node's downstream log after its last pull while the link was up.", nil, nil)
	descUpOldest = prometheus.NewDesc("fieldrelay_upstream_backlog_oldest_seconds",
		"Age of the oldest change not yet acknowledged by an upstream (0 when none).", nil, nil)
	descUpPushed = prometheus.NewDesc("fieldrelay_upstream_pushed_total",
		"Changes pushed upstream and acknowledged.", nil, nil)
	descUpFailures = prometheus.NewDesc("fieldrelay_upstream_failures_total",
		"Upstream push attempts that failed (the link then backs off).", nil, nil)
	descUpRejected = prometheus.NewDesc("fieldrelay_upstream_rejected_total",
		"Changes an upstream answered as rejected.", nil, nil)
)

// upstreamStates are the link states counted by fieldrelay_upstream_links.
var upstreamStates = []string{engine.UpstreamPaused, engine.UpstreamDown, engine.UpstreamIdle, engine.UpstreamPushing}

func (engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAccepted, descSettled, descAttempts, descWebhookFailures, descSMS, descSMSHeld, descSMSUp, descOutboxDepth,
		descOutboxOldest, descMissions, descLag, descRunning, descDBSize, descReadTx, descOpenTx, descWriteTx,
		descPages, descWriteTime, descSpillTime, descFreePages, descPendingPgs, descUpLinks, descUpBacklog,
		descUpOldest, descDownBehind, descDownAge, descDownLagging, descUpPushed, descUpFailures, descUpRejected, descDiskFree, descDiskLow, descDiskFull, descNotifyUp} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.eng.Stats()
	for _, e := range st.EventsAccepted {
		ch <- prometheus.MustNewConstMetric(descAccepted, prometheus.CounterValue, float64(e.N), e.Label1)
	}
	for _, e := range st.EventsSettled {
		ch <- prometheus.MustNewConstMetric(descSettled, prometheus.CounterValue, float64(e.N), e.Label1)
	}
	for _, a := range st.Attempts {
		ch <- prometheus.MustNewConstMetric(descAttempts, prometheus.CounterValue, float64(a.N), a.Label1, a.Label2)
	}
	for _, m := range st.MissionMoves {
		ch <- prometheus.MustNewConstMetric(descMissions, prometheus.CounterValue, float64(m.N), m.Label1)
	}
	running := 0.0
	if st.SchedulerRunning {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(descWebhookFailures, prometheus.CounterValue, float64(st.WebhookFailures))
	ch <- prometheus.MustNewConstMetric(descSMS, prometheus.CounterValue, float64(st.SMSSent))
	ch <- prometheus.MustNewConstMetric(descSMSHeld, prometheus.CounterValue, float64(st.SMSHeld))
	switch st.SMSGateway {
	case "up":
		ch <- prometheus.MustNewConstMetric(descSMSUp, prometheus.GaugeValue, 1)
	case "down":
		ch <- prometheus.MustNewConstMetric(descSMSUp, prometheus.GaugeValue, 0)
	}
	ch <- prometheus.MustNewConstMetric(descOutboxDepth, prometheus.GaugeValue, float64(st.OutboxDepth))
	ch <- prometheus.MustNewConstMetric(descOutboxOldest, prometheus.GaugeValue, st.OutboxOldestDue.Seconds())
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, st.SchedulerLag.Seconds())
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, running)
	if up := st.Upstream; up != nil {
		for _, state := range upstreamStates {
			ch <- prometheus.MustNewConstMetric(descUpLinks, prometheus.GaugeValue, float64(up.Links[state]), state)
		}
		ch <- prometheus.MustNewConstMetric(descUpBacklog, prometheus.GaugeValue, float64(up.Backlog))
		ch <- prometheus.MustNewConstMetric(descUpOldest, prometheus.GaugeValue, up.Oldest.Seconds())
		ch <- prometheus.MustNewConstMetric(descDownBehind, prometheus.GaugeValue, float64(up.DownBehind))
		ch <- prometheus.MustNewConstMetric(descDownAge, prometheus.GaugeValue, up.DownAge.Seconds())
		ch <- prometheus.MustNewConstMetric(descDownLagging, prometheus.GaugeValue, float64(up.DownLagging))
		ch <- prometheus.MustNewConstMetric(descUpPushed, prometheus.CounterValue, float64(up.Pushed))
		ch <- prometheus.MustNewConstMetric(descUpFailures, prometheus.CounterValue, float64(up.Failures))
		ch <- prometheus.MustNewConstMetric(descUpRejected, prometheus.CounterValue, float64(up.Rejected))
	}
	if db := st.Store; db != nil {
		ch <- prometheus.MustNewConstMetric(descDBSize, prometheus.GaugeValue, float64(db.SizeBytes))
		ch <- prometheus.MustNewConstMetric(descReadTx, prometheus.CounterValue, float64(db.ReadTxTotal))
		ch <- prometheus.MustNewConstMetric(descOpenTx, prometheus.GaugeValue, float64(db.OpenReadTx))
		ch <- prometheus.MustNewConstMetric(descWriteTx, prometheus.CounterValue, float64(db.WriteTxTotal))
		ch <- prometheus.MustNewConstMetric(descPages, prometheus.CounterValue, float64(db.PagesWritten))
		ch <- prometheus.MustNewConstMetric(descWriteTime, prometheus.CounterValue, db.WriteSeconds)
		ch <- prometheus.MustNewConstMetric(descSpillTime, prometheus.CounterValue, db.SpillSecs)
		ch <- prometheus.MustNewConstMetric(descFreePages, prometheus.GaugeValue, float64(db.FreePages))
		ch <- prometheus.MustNewConstMetric(descPendingPgs, prometheus.GaugeValue, float64(db.PendingPages))
	}
	if sp := st.Space; sp != nil {
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(sp.FreeBytes))
		ch <- prometheus.MustNewConstMetric(descDiskLow, prometheus.GaugeValue, boolGauge(sp.Low))
		ch <- prometheus.MustNewConstMetric(descDiskFull, prometheus.GaugeValue, boolGauge(sp.Full))
	}
	if up := st.NotificationsUp; up != nil {
		ch <- prometheus.MustNewConstMetric(descNotifyUp, prometheus.GaugeValue, boolGauge(*up))
	}
}

// connCollector reads the connection counts (conns.go) at scrape time. The refusal
// counter keeps its two reasons at zero; the cap is absent when there is none.
type connCollector struct{ l *connLimiter }

var (
	descConnsOpen = prometheus.NewDesc("fieldrelay_http_connections_open",
		"Client connections open now (TLS handshakes included).", nil, nil)
	descConnsIdle = prometheus.NewDesc("fieldrelay_http_connections_idle",
		"Client connections open and waiting for their next request (keep-alive).", nil, nil)
	descConnsMax = prometheus.NewDesc("fieldrelay_http_connections_max",
		"Most client connections open at once (--max-conns).", nil, nil)
	descConnsRefused = prometheus.NewDesc("fieldrelay_http_connections_refused_total",
		"Client connections refused at accept, by the cap they were over (per_address: --max-conns-per-ip, total: --max-conns).",
		[]string{"reason"}, nil)
	descConnsIdleClosed = prometheus.NewDesc("fieldrelay_http_connections_idle_closed_total",
		"Idle keep-alive connections closed to make room for a new connection at a cap.", nil, nil)
)

func (connCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnsOpen, descConnsIdle, descConnsMax, descConnsRefused, descConnsIdleClosed} {
		ch <- d
	}
}

func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	open, idle := c.l.openConns()
	ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(descConnsIdle, prometheus.GaugeValue, float64(idle))
	if c.l.limits.Total > 0 {
		ch <- prometheus.MustNewConstMetric(descConnsMax, prometheus.GaugeValue, float64(c.l.limits.Total))
	}
	ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(c.l.refused[0].Load()), refusedPerAddress)
	ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(c.l.refused[1].Load()), refusedTotal)
	ch <- prometheus.MustNewConstMetric(descConnsIdleClosed, prometheus.CounterValue, float64(c.l.idleClosed.Load()))
}

// boolGauge is 1 for true, 0 for false.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
