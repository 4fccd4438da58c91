package adminclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// maxBody bounds how much of an admin answer is read: the largest one the
// client reads, /runtime, stays far below it.
const maxBody = 8 << 20

// Client makes typed admin calls over a Transport.
type Client struct {
	transport Transport
	timeout   time.Duration
	observe   Observer
}

// Observer is told about every admin call once it is over: the method and
// path (never the query, which may hold values), how long it took, and its
// error (nil for a 200 answer; a *StatusError for another answer). It is
// called from the goroutine that made the call and must be quick.
type Observer func(method, path string, took time.Duration, err error)

// Option configures a Client.
type Option func(*Client)

// WithObserver has o told about every admin call.
func WithObserver(o Observer) Option {
	return func(c *Client) { c.observe = o }
}

// New returns a client over t; callTimeout bounds each admin call (and the
// opening of a session), whatever the caller's context says.
func New(t Transport, callTimeout time.Duration, opts ...Option) *Client {
	c := &Client{transport: t, timeout: callTimeout}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Session opens a connection to e's admin interface for a few calls. The
// caller closes it.
func (c *Client) Session(ctx context.Context, e Endpoint) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.transport.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	return &Session{endpoint: e, conn: conn, timeout: c.timeout, observe: c.observe}, nil
}

// Session is a connection to one pod's admin interface.
type Session struct {
	endpoint Endpoint
	conn     Conn
	timeout  time.Duration
	observe  Observer
}

// Close releases the session's connection.
func (s *Session) Close() error { return s.conn.Close() }

// StatusError is an admin answer other than 200.
type StatusError struct {
	Method, Path string
	Code         int
	// Body is the start of the answer, which says what was wrong.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Code, http.StatusText(e.Code), e.Body)
}

// do sends one request and returns the body of a 200 answer.
func (s *Session) do(ctx context.Context, method, path string, query url.Values) ([]byte, error) {
	return s.doLimit(ctx, method, path, query, maxBody)
}

// doLimit is do with the answer bounded by limit bytes: a longer answer is
// an error rather than a truncated body.
func (s *Session) doLimit(ctx context.Context, method, path string, query url.Values, limit int64) (body []byte, err error) {
	if s.observe != nil {
		start := time.Now()
		defer func() { s.observe(method, path, time.Since(start), err) }()
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	u := url.URL{Scheme: "http", Host: "proxy-admin", Path: path, RawQuery: encodeQuery(query)}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := s.conn.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: %w", method, path, s.endpoint, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: read answer: %w", method, path, s.endpoint, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s %s on %s: the answer is larger than %d bytes", method, path, s.endpoint, limit)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: firstLine(body)}
	}
	return body, nil
}

// encodeQuery is url.Values.Encode, except that a flag (a key with one
// empty value) is written bare, as the admin interface documents its flags
// (/drain_listeners?inboundonly&graceful).
func encodeQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			if v != "" {
				b.WriteByte('=')
				b.WriteString(url.QueryEscape(v))
			}
		}
	}
	return b.String()
}

// read sends one request and parses the body of a 200 answer.
func read[T any](ctx context.Context, s *Session, method, path string, query url.Values, parse func([]byte) (T, error)) (T, error) {
	var zero T
	body, err := s.do(ctx, method, path, query)
	if err != nil {
		return zero, err
	}
	v, err := parse(body)
	if err != nil {
		return zero, fmt.Errorf("%s on %s: %w", path, s.endpoint, err)
	}
	return v, nil
}

// firstLine is the first line of an error answer, trimmed to a readable
// length.
func firstLine(body []byte) string {
	s, _, _ := strings.Cut(string(body), "\n")
	const max = 200
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// ServerInfo is what the controller reads from /server_info.
type ServerInfo struct {
	// State is the server state (LIVE, DRAINING, ...).
	State string
	// Uptime is the uptime of the current hot-restart epoch.
	Uptime time.Duration
}

// ServerInfo reads /server_info.
func (s *Session) ServerInfo(ctx context.Context) (ServerInfo, error) {
	return read(ctx, s, http.MethodGet, "/server_info", nil, ParseServerInfo)
}

// Runtime reads /runtime.
func (s *Session) Runtime(ctx context.Context) (Runtime, error) {
	return read(ctx, s, http.MethodGet, "/runtime", nil, ParseRuntime)
}

// RuntimeModify sets runtime keys in the admin layer; an empty value
// deletes the key's override.
func (s *Session) RuntimeModify(ctx context.Context, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	q := url.Values{}
	for k, v := range values {
		q.Set(k, v)
	}
	_, err := s.do(ctx, http.MethodPost, "/runtime_modify", q)
	return err
}

// LogLevels lists every logger's level (/logging without parameters).
func (s *Session) LogLevels(ctx context.Context) (map[string]string, error) {
	return read(ctx, s, http.MethodPost, "/logging", nil, ParseLoggers)
}

// SetAllLogLevels sets every logger to level (/logging?level=).
func (s *Session) SetAllLogLevels(ctx context.Context, level string) error {
	_, err := s.do(ctx, http.MethodPost, "/logging", url.Values{"level": {level}})
	return err
}

// SetLogLevels sets some loggers' levels in one call (/logging?paths=).
func (s *Session) SetLogLevels(ctx context.Context, levels map[string]string) error {
	if len(levels) == 0 {
		return nil
	}
	names := make([]string, 0, len(levels))
	for name := range levels {
		names = append(names, name)
	}
	sort.Strings(names)
	items := make([]string, len(names))
	for i, name := range names {
		items[i] = name + ":" + levels[name]
	}
	_, err := s.do(ctx, http.MethodPost, "/logging", url.Values{"paths": {strings.Join(items, ",")}})
	return err
}

// FailHealthChecks makes inbound health checks fail (/healthcheck/fail).
func (s *Session) FailHealthChecks(ctx context.Context) error {
	_, err := s.do(ctx, http.MethodPost, "/healthcheck/fail", nil)
	return err
}

// PassHealthChecks undoes FailHealthChecks (/healthcheck/ok).
func (s *Session) PassHealthChecks(ctx context.Context) error {
	_, err := s.do(ctx, http.MethodPost, "/healthcheck/ok", nil)
	return err
}

// DrainOptions are the flags of /drain_listeners.
type DrainOptions struct {
	// InboundOnly drains only INBOUND listeners.
	InboundOnly bool
	// Graceful runs the drain sequence before the listeners close.
	Graceful bool
}

// DrainListeners drains the proxy's listeners (/drain_listeners).
func (s *Session) DrainListeners(ctx context.Context, o DrainOptions) error {
	q := url.Values{}
	if o.InboundOnly {
		q.Set("inboundonly", "")
	}
	if o.Graceful {
		q.Set("graceful", "")
	}
	_, err := s.do(ctx, http.MethodPost, "/drain_listeners", q)
	return err
}

// Quit makes the proxy exit (/quitquitquit).
func (s *Session) Quit(ctx context.Context) error {
	_, err := s.do(ctx, http.MethodPost, "/quitquitquit", nil)
	return err
}

// activeConnectionsFilter selects every listener's downstream_cx_active
// gauge; ActiveConnections drops the admin listener's and the per-worker
// ones.
const activeConnectionsFilter = `^listener\..*\.downstream_cx_active$`

// ActiveConnections sums the downstream active connections of every
// listener but the admin one.
func (s *Session) ActiveConnections(ctx context.Context) (int64, error) {
	return read(ctx, s, http.MethodGet, "/stats", url.Values{"filter": {activeConnectionsFilter}, "format": {"json"}}, ParseActiveConnections)
}
