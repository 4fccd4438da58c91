package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// maxResponseBody bounds what is read of a collector's answer.
const maxResponseBody = 64 << 10

// Poster sends HTTP POSTs to a collector reached through a cluster of the
// configuration: every connection goes to a host the cluster's load
// balancer picks.
type Poster struct {
	client  *http.Client
	url     string
	host    string
	headers http.Header
	timeout time.Duration
}

// NewPoster returns a poster of requests to path on cluster, with host as
// the :authority and the extra headers given; timeout bounds each request
// (0: only the caller's context does).
func NewPoster(cluster grpcservice.Cluster, host, path string, headers http.Header, timeout time.Duration) (*Poster, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with '/'", path)
	}
	u, err := url.Parse("http://collector" + path)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return cluster.Connect(ctx) },
		MaxIdleConnsPerHost: 2,
		DisableCompression:  true,
	}
	return &Poster{client: &http.Client{Transport: tr}, url: u.String(), host: host, headers: headers, timeout: timeout}, nil
}

// Post sends body; an answer other than 2xx is an error.
func (p *Poster) Post(ctx context.Context, contentType string, body []byte) error {
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range p.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	req.Host = p.host
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("collector answered %s", resp.Status)
	}
	return nil
}

// Close closes the poster's idle connections.
func (p *Poster) Close() {
	p.client.CloseIdleConnections()
}
