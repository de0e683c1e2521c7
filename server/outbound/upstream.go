package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// maxAnswerRead bounds what is read of an upstream's answer.
const maxAnswerRead = 16 << 20

// UpstreamHTTP is the UpstreamTransport of a node: HTTPS to the upstream's device
// endpoints, through the environment's proxy, trusting the system's roots and the link's
// CA.
type UpstreamHTTP struct{}

var _ model.UpstreamTransport = UpstreamHTTP{}

// Client returns a client that trusts the system's roots and caPEM; it does not follow
// redirects.
func (UpstreamHTTP) Client(caPEM string, timeout time.Duration) model.UpstreamClient {
	var pool *x509.CertPool
	if caPEM != "" {
		var err error
		if pool, err = x509.SystemCertPool(); err != nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM([]byte(caPEM))
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return upstreamClient{&http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// upstreamClient is the client of one upstream link.
type upstreamClient struct{ c *http.Client }

// Post POSTs body to url with the node's User-Agent and the tenant's API key, and reads at
// most maxAnswerRead bytes of the answer.
func (u upstreamClient) Post(ctx context.Context, url, apiKey string, body []byte) (*model.UpstreamAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fieldrelay-node")
	req.Header.Set("x-svc-api-key", apiKey)
	res, err := u.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	ans := &model.UpstreamAnswer{Status: res.StatusCode}
	if ans.Body, err = io.ReadAll(io.LimitReader(res.Body, maxAnswerRead)); err != nil {
		return ans, fmt.Errorf("reading the answer (HTTP %d): %w", res.StatusCode, err)
	}
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
		ans.RetryAfter = ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	}
	return ans, nil
}

// Close releases the client's idle connections.
func (u upstreamClient) Close() { u.c.CloseIdleConnections() }
