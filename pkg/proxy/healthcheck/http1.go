package healthcheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// smallRequest is the size below which a check's request is written
// without a write deadline (see probe).
const smallRequest = 4096

// maxResponseHead bounds the head of a check's answer (Envoy's default
// max_response_headers_kb).
const maxResponseHead = 80 << 10

// http1Prober sends HTTP/1.1 checks to one host over a connection of its
// own, kept between checks with reuse_connection. The request is the same
// every time, so it is rendered once; a check is a write and a read of
// the status line and the few headers Envoy looks at, which keeps a
// thousand hosts checked every second cheap.
type http1Prober struct {
	c    *Checker
	addr string
	host *upstream.Host
	req  []byte
	conn *checkConn
	br   *bufio.Reader
}

// newHTTP1Prober renders the host's check request.
func (c *Checker) newHTTP1Prober(addr string, host *upstream.Host) *http1Prober {
	hc := c.cfg.http
	h := http.Header{}
	h.Set("Host", checkHostname(host, hc.host))
	h.Set("User-Agent", userAgent)
	hc.headers.Apply(headerEditor(h), c.headerEntry(host))
	authority := h.Get("Host")
	h.Del("Host")
	if len(hc.send) > 0 {
		h.Set("Content-Length", strconv.Itoa(len(hc.send)))
	}
	var b bytes.Buffer
	b.WriteString(hc.method + " " + hc.path + " HTTP/1.1\r\nHost: " + authority + "\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(hc.send)
	return &http1Prober{c: c, addr: addr, host: host, req: b.Bytes()}
}

func (p *http1Prober) probe(ctx context.Context, deadline time.Time) result {
	if p.conn == nil {
		conn, err := p.c.dialCheck(ctx, deadline, p.host, p.addr, p.alpn())
		if err != nil {
			return result{outcome: outcomeNetwork}
		}
		p.conn = conn
		if p.br == nil {
			p.br = bufio.NewReaderSize(conn, 4096)
		} else {
			p.br.Reset(conn)
		}
	}
	if len(p.req) > smallRequest {
		_ = p.conn.SetDeadline(deadline)
	} else {
		// Checks go one at a time: the last answer came, so the socket's
		// send buffer is empty and a small request cannot block. One
		// deadline per check is cheaper than two.
		_ = p.conn.SetReadDeadline(deadline)
	}
	if _, err := p.conn.Write(p.req); err != nil {
		p.close()
		return result{outcome: outcomeNetwork}
	}
	head, err := readHead(p.br, p.c.cfg.http.method == http.MethodHead)
	if err != nil {
		p.close()
		return result{outcome: outcomeNetwork}
	}
	var (
		got      []byte
		complete bool
	)
	if len(p.c.cfg.http.receive) == 0 && !head.chunked && (head.noBody || head.length >= 0) {
		// Nothing to look for in the body: skip it in the buffer.
		complete = true
		if !head.noBody && head.length > 0 {
			if head.length > drainLimit {
				complete = false
			} else if _, err := p.br.Discard(int(head.length)); err != nil {
				complete = false
			}
		}
	} else {
		got, complete = readBody(p.c, head.body(p.br))
	}
	r := judge(p.c, head, got)
	if !complete || head.close || !p.c.cfg.ReuseConnection {
		p.close()
	}
	return r
}

// alpn is what a TLS cluster offers: tls_options.alpn_protocols, else
// HTTP/1.1.
func (p *http1Prober) alpn() []string {
	if len(p.c.cfg.ALPN) > 0 {
		return p.c.cfg.ALPN
	}
	return alpnHTTP1
}

func (p *http1Prober) close() {
	p.conn.close()
	p.conn = nil
}

// respHead is what a check reads of an answer's head.
type respHead struct {
	status    int
	degraded  bool
	immediate bool
	checkedAs string
	// length is Content-Length, -1 when absent; chunked and noBody say
	// how the body is framed.
	length  int64
	chunked bool
	noBody  bool
	// close: the connection ends after this answer.
	close bool
}

// body is the answer's body as framed by its head.
func (h *respHead) body(br *bufio.Reader) io.Reader {
	switch {
	case h.noBody:
		return bytes.NewReader(nil)
	case h.chunked:
		return httputil.NewChunkedReader(br)
	case h.length >= 0:
		return io.LimitReader(br, h.length)
	}
	// Until the connection closes.
	h.close = true
	return br
}

var errBadHead = errors.New("malformed HTTP/1.1 response head")

// readHead reads an answer's head, skipping interim (1xx) answers. head
// says the request was a HEAD, whose answer has no body.
func readHead(br *bufio.Reader, head bool) (respHead, error) {
	for {
		h, err := readOneHead(br)
		if err != nil {
			return h, err
		}
		if h.status >= 200 || h.status == 101 {
			if head || h.status == 204 || h.status == 304 {
				h.noBody = true
			}
			return h, nil
		}
	}
}

func readOneHead(br *bufio.Reader) (respHead, error) {
	h := respHead{length: -1}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return h, err
	}
	total := len(line)
	line = bytes.TrimRight(line, "\r\n")
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, errBadHead
	}
	h.close = line[7] == '0'
	code := 0
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return h, errBadHead
		}
		code = code*10 + int(d-'0')
	}
	if code < 100 {
		return h, errBadHead
	}
	h.status = code
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return h, err
		}
		total += len(line)
		if total > maxResponseHead {
			return h, errBadHead
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, errBadHead
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, errBadHead
			}
			h.length = n
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			h.chunked = bytes.EqualFold(value, []byte("chunked"))
			if !h.chunked {
				return h, errBadHead
			}
		case bytes.EqualFold(name, []byte("connection")):
			if bytes.EqualFold(value, []byte("close")) {
				h.close = true
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				h.close = false
			}
		case bytes.EqualFold(name, []byte("proxy-connection")):
			h.close = h.close || bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte(headerDegraded)):
			h.degraded = true
		case bytes.EqualFold(name, []byte(headerImmediateFail)):
			h.immediate = true
		case bytes.EqualFold(name, []byte(headerCheckedAs)):
			h.checkedAs = string(value)
		}
	}
}

// readBody reads what the receive payloads need of a body and drains the
// rest within drainLimit; complete says the body was read to its end, so
// the connection can carry the next check.
func readBody(c *Checker, body io.Reader) (got []byte, complete bool) {
	hc := c.cfg.http
	if len(hc.receive) > 0 {
		limit := int64(hc.bufferSize)
		if limit == 0 {
			limit = drainLimit
		}
		got, _ = io.ReadAll(io.LimitReader(body, limit))
	}
	n, err := io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	return got, err == nil && n < drainLimit
}
