package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// retarget sends the gate's next connections to addr.
func (p *gateProxy) retarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// stuckCentral is an HTTP proxy in front of a central node that, while stuck, answers
// every pull of the downstream at once (no wait) and announces 5 more changes than it
// gives: a checkpoint that no longer moves.
func stuckCentral(t *testing.T, central string) (*httptest.Server, *atomic.Bool) {
	t.Helper()
	var stuck atomic.Bool
	target, _ := url.Parse("http://" + central)
	wait := regexp.MustCompile(`"wait":\d+`)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			if pr.In.URL.Path != "/v1/devices/downstream" || !stuck.Load() {
				return
			}
			body, _ := io.ReadAll(pr.Out.Body)
			body = wait.ReplaceAll(body, []byte(`"wait":0`))
			pr.Out.Body, pr.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			pr.Out.Header.Set("Content-Length", strconv.Itoa(len(body)))
		},
		ModifyResponse: func(res *http.Response) error {
			if res.Request.URL.Path != "/v1/devices/downstream" || res.StatusCode != 200 || !stuck.Load() {
				return nil
			}
			var ans map[string]any
			if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
				return err
			}
			res.Body.Close()
			ans["end"] = ans["through"].(float64) + 5
			raw, _ := json.Marshal(ans)
			res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
			res.Header.Set("Content-Length", strconv.Itoa(len(raw)))
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv, &stuck
}

// TestDownstream_LagAlert (docs/decisions/0210-downstream-lag-alert.md): a site whose
// link is up but whose central node stops short of the log's end raises
// downstream_lagging once it has not caught up for --downstream-lag-alert (3 s here),
// shows it in its status and `upstream show`, and closes it once a pull catches up.
func TestDownstream_LagAlert(t *testing.T) {
	n, gate, _ := siteAndCentral(t, "--downstream-lag-alert", "3s")
	e := n.edge
	down := func() map[string]any { d, _ := n.upstream()["downstream"].(map[string]any); return d }
	n.waitFor("the first snapshot", 20*time.Second, func() bool { d := down(); return d != nil && d["caught_up_at"] != nil })
	lagging := func() []map[string]any {
		return list(t, e, "/v1/alerts?kind=downstream_lagging", n.edgeKey)
	}
	if got := lagging(); len(got) != 0 {
		t.Fatalf("downstream_lagging on a site that caught up: %v", got)
	}

	proxy, stuck := stuckCentral(t, n.centralAddr)
	stuck.Store(true)
	gate.retarget(strings.TrimPrefix(proxy.URL, "http://"))
	gate.cut() // the held pull and the pusher's connections go; the next ones pass the proxy
	gate.restore()
	stuckAt := time.Now()
	n.waitFor("downstream_lagging", 30*time.Second, func() bool { return len(lagging()) == 1 })
	if took := time.Since(stuckAt); took < 3*time.Second {
		t.Fatalf("downstream_lagging raised %s after the pulls stopped catching up, before the 3 s set", took)
	}
	a := lagging()[0]
	if a["priority"] != "high" || !contains(a["message"], "5 changes behind") || !contains(a["message"], "while the link is up") {
		t.Fatalf("the alert: %v", a)
	}
	st := n.upstream()
	if d := st["downstream"].(map[string]any); st["state"] == "down" || d["lagging"] != true || d["behind"] != 5.0 {
		t.Fatalf("the status of a lagging site: %v", st)
	}
	show := string(mustRun(t, n.bin, "", "upstream", "show", "--data", n.edgeData, "--tenant", "site"))
	if !strings.Contains(show, "(5 behind, lagging)") || !strings.Contains(show, "caught up 20") {
		t.Fatalf("upstream show of a lagging site:\n%s", show)
	}

	stuck.Store(false)
	n.waitFor("downstream_lagging closed", 20*time.Second, func() bool { return len(lagging()) == 0 })
	closed := list(t, e, "/v1/alerts?kind=downstream_lagging&status=closed", n.edgeKey)
	if len(closed) != 1 || closed[0]["id"] != a["id"] {
		t.Fatalf("the closed alert: %v", closed)
	}
	if d := down(); d["lagging"] != false || d["cursor"] != d["end"] {
		t.Fatalf("caught up again: %v", d)
	}
}
