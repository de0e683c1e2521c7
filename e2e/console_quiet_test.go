package e2e

// Chromium test of a logged-out load: the console asks the node for no session it does not
// hold (no red 401 from /v1/auth/refresh), and still resumes one it holds.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// refreshes counts the page's requests to /v1/auth/refresh seen so far.
func (w *browserWatch) refreshes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.requests {
		if strings.HasSuffix(r, "/v1/auth/refresh") {
			n++
		}
	}
	return n
}

// TestConsoleLoggedOutLoad: a first load, and a load after a log-out, ask nothing of
// /v1/auth/refresh; a reload while logged in resumes the session through it.
func TestConsoleLoggedOutLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browser := startChromium(t, ctx)
	d := serveDemo(t, binary(t), t.TempDir())
	watch := &browserWatch{origin: d.base}
	page := tab(t, browser, watch, "page")
	settle := func() {
		t.Helper()
		if _, err := chromedp.Run(page, chromedp.Evaluate[bool](`new Promise(r => setTimeout(() => r(true), 500))`, chromedp.EvalAwaitPromise)); err != nil {
			t.Fatal(err)
		}
	}
	do(t, page, "a first load", chromedp.Navigate(d.base+"/console/"), chromedp.WaitVisible(chromedp.ID("login-email")))
	settle()
	if n := watch.refreshes(); n != 0 {
		t.Errorf("a logged-out first load asked /v1/auth/refresh %d times", n)
	}
	email, pass := d.demoUser(t, "operational_supervisor")
	loginAs(t, page, d.base, email, pass)
	do(t, page, "a reload", chromedp.Reload())
	waitJS(t, page, "the session resumed", `document.querySelector('#live-status').dataset.state === 'live' && document.getElementById('login').hidden`)
	if n := watch.refreshes(); n != 1 {
		t.Errorf("the reload asked /v1/auth/refresh %d times, want 1", n)
	}
	clickJS(t, page, "log out", "#logout")
	waitJS(t, page, "logged out", `!document.getElementById('login').hidden`)
	do(t, page, "a load after the log-out", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("login-email")))
	settle()
	if n := watch.refreshes(); n != 1 {
		t.Errorf("a load after the log-out asked /v1/auth/refresh (%d in all)", n)
	}
	watch.check(t)
}
