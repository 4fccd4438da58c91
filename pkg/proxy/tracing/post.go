package tracing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// Limits on a collector's answer.
const (
	maxResponseHead    = 16 << 10
	maxResponseHeaders = 100
	maxResponseBody    = 64 << 10
)

// Poster sends HTTP/1.1 POSTs to a collector reached through a cluster of
// the configuration, on one keep-alive connection to a host the cluster's
// load balancer picks (a new one after an error). It is used from one
// goroutine at a time (a Batcher's), and does the exchange itself, with no
// goroutine of its own: an export costs a write and a read.
type Poster struct {
	cluster grpcservice.Cluster
	timeout time.Duration
	// head is the request head up to Content-Length's value.
	head string

	// mu guards conn against interrupt, which runs on the goroutine
	// that ends the watched context.
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
	// watched is the Done channel interrupt is registered on (a
	// batcher's exports share one), unwatch unregisters it.
	watched <-chan struct{}
	unwatch func() bool
	buf     []byte
	iov     [3][]byte
	bufs    net.Buffers
	resp    http1.Response
	body    http1.BodyReader
}

// NewPoster returns a poster of requests to path on cluster, with host as
// the :authority and the extra headers given; timeout bounds each request
// (0: only the caller's context does).
func NewPoster(cluster grpcservice.Cluster, host, path string, headers http.Header, timeout time.Duration) (*Poster, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with '/'", path)
	}
	if strings.ContainsAny(path, " \r\n") || strings.ContainsAny(host, " \r\n") {
		return nil, errors.New("the path and host must not contain spaces or line breaks")
	}
	var b strings.Builder
	b.WriteString("POST " + path + " HTTP/1.1\r\nhost: " + host + "\r\n")
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range headers[k] {
			if strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf("header %q: invalid name or value", k)
			}
			b.WriteString(strings.ToLower(k) + ": " + v + "\r\n")
		}
	}
	return &Poster{cluster: cluster, timeout: timeout, head: b.String()}, nil
}

// Post sends body; an answer other than 2xx is an error. body is written
// before Post returns and not kept: the caller may reuse it.
func (p *Poster) Post(ctx context.Context, contentType string, body []byte) error {
	return p.PostParts(ctx, contentType, body, nil)
}

// PostParts is Post of a body in two parts, head then rest, sent in the
// same write as the request's head: an exporter whose spans wait already
// encoded (an OTLP batch) writes its own head apart and sends the spans
// from where they wait, rather than copying them behind the head.
func (p *Poster) PostParts(ctx context.Context, contentType string, head, rest []byte) error {
	body := bodyParts{head, rest}
	// The timeout is a deadline on the connection, within the context's
	// own: no context of its own per request.
	deadline, _ := ctx.Deadline()
	if p.timeout > 0 {
		if d := time.Now().Add(p.timeout); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	reused := p.conn != nil
	err := p.exchange(ctx, deadline, contentType, body)
	if err != nil && reused && ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)) {
		// The collector may have closed the idle connection just as
		// it was reused: once more, on a new one.
		p.Close()
		err = p.exchange(ctx, deadline, contentType, body)
	}
	if err != nil {
		p.Close()
	}
	return err
}

// exchange writes the request on the connection (opened when there is
// none) and reads the answer, by deadline (none when zero) and until ctx
// ends.
func (p *Poster) exchange(ctx context.Context, deadline time.Time, contentType string, body bodyParts) error {
	if p.conn == nil {
		cctx := ctx
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			cctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		c, err := p.cluster.Connect(cctx)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.conn = c
		p.mu.Unlock()
		if p.r == nil {
			p.r = bufio.NewReaderSize(c, 4096)
		} else {
			p.r.Reset(c)
		}
	}
	conn := p.conn
	_ = conn.SetDeadline(deadline)
	p.watch(ctx)
	if err := ctx.Err(); err != nil {
		// Ended before the deadline was set: interrupt may have run
		// first.
		return err
	}
	b := append(p.buf[:0], p.head...)
	b = append(b, "content-type: "...)
	b = append(b, contentType...)
	b = append(b, "\r\ncontent-length: "...)
	b = strconv.AppendInt(b, int64(len(body.head)+len(body.rest)), 10)
	b = append(b, "\r\n\r\n"...)
	p.buf = b
	// The head and the body in one writev, from the poster's own
	// vector: a net.Buffers on the stack would escape to the heap.
	// (WriteTo skips empty buffers.)
	p.iov = [3][]byte{b, body.head, body.rest}
	p.bufs = p.iov[:]
	_, err := p.bufs.WriteTo(conn)
	p.iov = [3][]byte{}
	if err != nil {
		return err
	}
	head, err := http1.ReadHead(p.r, p.buf[:0], maxResponseHead)
	if err != nil {
		return fmt.Errorf("reading the collector's answer: %w", err)
	}
	p.buf = head
	if err := http1.ParseResponse(head, &p.resp, maxResponseHeaders); err != nil {
		return fmt.Errorf("reading the collector's answer: %w", err)
	}
	kind := p.resp.BodyKind(false)
	status := p.resp.Status
	p.body.Reset(p.r, kind, p.resp.ContentLength, maxResponseHead, nil)
	read := 0
	for {
		piece, err := p.body.Next()
		read += len(piece)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the collector's answer: %w", err)
		}
		if read > maxResponseBody {
			return errors.New("the collector's answer is too long")
		}
	}
	if !p.resp.Reusable(kind) {
		p.Close()
	}
	if status/100 != 2 {
		return fmt.Errorf("collector answered %d", status)
	}
	return nil
}

// bodyParts is a request's body, head then rest.
type bodyParts struct{ head, rest []byte }

// watch makes the end of ctx interrupt the exchange under way, by a past
// deadline on the connection. It is registered once per Done channel
// rather than per exchange: a batcher's exports all end with it.
func (p *Poster) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == p.watched {
		return
	}
	if p.unwatch != nil {
		p.unwatch()
	}
	p.watched = done
	p.unwatch = context.AfterFunc(ctx, p.interrupt)
}

// interrupt ends the exchange under way.
func (p *Poster) interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		_ = p.conn.SetDeadline(time.Unix(1, 0))
	}
}

// Close closes the connection.
func (p *Poster) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
}
