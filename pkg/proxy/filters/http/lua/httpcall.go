package lua

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// asyncCallLimit bounds a fire-and-forget httpCall without a timeout,
// which Envoy would let run as long as its cluster allows.
const asyncCallLimit = time.Minute

// maxAsyncCalls bounds the fire-and-forget calls of one filter in flight
// at once (each holds a goroutine and a connection).
const maxAsyncCalls = 256

// callOptions are httpCall's arguments after the headers and body.
type callOptions struct {
	timeout      time.Duration
	async        bool
	duplicateHdr bool
}

// httpCall is the handle's httpCall(cluster, headers, body, timeout_ms
// [, asynchronous]) or httpCall(cluster, headers, body, options): a
// request to one of the cluster's hosts. A synchronous call waits (the
// stream's timeouts still apply) and returns the response's headers and
// body; a failed call returns Envoy's stand-in, status 503 and body
// "upstream failure".
func (h *handle) httpCall(L *glua.LState) int {
	h.check(L)
	cluster := L.CheckString(2)
	hdrs := L.CheckTable(3)
	var body []byte
	if v := L.Get(4); v != glua.LNil {
		body = []byte(L.CheckString(4))
	}
	opts := h.callOptions(L)
	if h.c.services == nil || h.c.services.Cluster(cluster) == nil {
		L.RaiseError("http call cluster invalid. Must be configured")
	}
	req := buildCall(L, hdrs, body)
	t := h.c.transport(cluster)

	if opts.async {
		// The goroutine outlives the call: it keeps what it needs, not
		// the handle, which the next call of the state reuses.
		sem := h.c.async
		select {
		case sem <- struct{}{}:
		default:
			L.RaiseError("http call: %d asynchronous calls are already in flight", cap(sem))
		}
		limit := opts.timeout
		if limit == 0 {
			limit = asyncCallLimit
		}
		go func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			if resp, err := t.RoundTrip(req.WithContext(ctx)); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
				_ = resp.Body.Close()
			}
		}()
		return 0
	}

	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	timeout := opts.timeout
	detached := h.response || h.continued()
	if timeout == 0 && detached {
		// A response script waits for its call without the stream's
		// timeouts (see below): a call without a timeout of its own
		// gets the asynchronous calls' bound.
		timeout = asyncCallLimit
	}
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	defer cancel()
	var res callResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = roundTrip(t, req.WithContext(ctx))
	}()
	h.pause()
	switch {
	case detached:
		// Stream.Wait answers the request when a stream timeout fires,
		// which a response on its way (or a request whose head went
		// on) cannot take: the call's timeout bounds the wait instead.
		<-done
	case !h.s.Wait(done):
		cancel()
		<-done
		h.abort(L)
	}
	h.resume()
	L.Push(res.headersTable(L, opts.duplicateHdr))
	if len(res.body) == 0 {
		L.Push(glua.LNil)
	} else {
		L.Push(glua.LString(res.body))
	}
	return 2
}

// callOptions reads httpCall's fifth and sixth arguments: a timeout in
// milliseconds and the asynchronous flag, or an options table.
func (h *handle) callOptions(L *glua.LState) callOptions {
	var o callOptions
	if t, ok := L.Get(5).(*glua.LTable); ok {
		t.ForEach(func(k, v glua.LValue) {
			switch k.String() {
			case "asynchronous":
				o.async = optBool(L, "asynchronous", v)
			case "timeout_ms":
				o.timeout = timeoutMS(L, v)
			case "return_duplicate_headers":
				o.duplicateHdr = optBool(L, "return_duplicate_headers", v)
			case "send_xff":
				if optBool(L, "send_xff", v) {
					L.RaiseError("http call option send_xff true is not supported by Outrigger (its calls carry no x-forwarded-for)")
				}
			default:
				L.RaiseError("http call option %q is not supported by Outrigger", k.String())
			}
		})
		return o
	}
	o.timeout = timeoutMS(L, L.CheckAny(5))
	switch v := L.Get(6).(type) {
	case glua.LBool:
		o.async = bool(v)
	default:
		if v != glua.LNil {
			L.RaiseError("http call asynchronous flag must be 'true', 'false', or empty")
		}
	}
	return o
}

// optBool checks a boolean option.
func optBool(L *glua.LState, name string, v glua.LValue) bool {
	b, ok := v.(glua.LBool)
	if !ok {
		L.RaiseError("http call option %s must be a boolean", name)
	}
	return bool(b)
}

// timeoutMS checks a timeout in milliseconds; 0 is none.
func timeoutMS(L *glua.LState, v glua.LValue) time.Duration {
	n, ok := v.(glua.LNumber)
	if !ok {
		L.RaiseError("http call timeout must be a number")
	}
	if n < 0 {
		L.RaiseError("http call timeout must be >= 0")
	}
	return time.Duration(int64(n)) * time.Millisecond
}

// buildCall makes the request of a headers table, which must name
// :method, :path and :authority.
func buildCall(L *glua.LState, t *glua.LTable, body []byte) *http.Request {
	var method, path, authority string
	header := http.Header{}
	forEachHeader(L, t, func(name, value string) {
		switch name {
		case ":method":
			method = value
		case ":path":
			path = value
		case ":authority":
			authority = value
		case ":scheme", "host", "content-length", "transfer-encoding", "connection":
			// The transport frames the request itself.
		default:
			header[name] = append(header[name], value)
		}
	})
	if method == "" || path == "" || authority == "" {
		L.RaiseError("http call headers must include ':path', ':method', and ':authority'")
	}
	u, err := url.ParseRequestURI(path)
	if err != nil || u.IsAbs() {
		L.RaiseError("http call :path %q is not a valid path", path)
	}
	u.Scheme, u.Host = "http", authority
	req, err := http.NewRequest(method, u.String(), bytes.NewReader(body))
	if err != nil {
		L.RaiseError("http call: %s", err.Error())
	}
	req.Host = authority
	req.Header = header
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	return req
}

// callResult is the response of a call, or Envoy's stand-in for a failed
// one.
type callResult struct {
	status int
	header http.Header
	body   []byte
}

// roundTrip sends req and reads its response (at most maxBody bytes of
// body: a longer one is a failure).
func roundTrip(t http.RoundTripper, req *http.Request) callResult {
	failure := callResult{status: http.StatusServiceUnavailable, body: []byte("upstream failure")}
	resp, err := t.RoundTrip(req)
	if err != nil {
		return failure
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil || len(b) > maxBody {
		return failure
	}
	return callResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// headersTable is the response headers as httpCall returns them: names
// in lower case with :status; a header of several values keeps its last,
// or all of them in a list with return_duplicate_headers.
func (r *callResult) headersTable(L *glua.LState, duplicates bool) *glua.LTable {
	t := L.NewTable()
	t.RawSetString(":status", glua.LString(strconv.Itoa(r.status)))
	for name, values := range r.header {
		key := strings.ToLower(name)
		if duplicates && len(values) > 1 {
			list := L.NewTable()
			for _, v := range values {
				list.Append(glua.LString(v))
			}
			t.RawSetString(key, list)
			continue
		}
		t.RawSetString(key, glua.LString(values[len(values)-1]))
	}
	return t
}

// transport is the connection pool of httpCalls to cluster.
func (c *filterConfig) transport(cluster string) http.RoundTripper {
	if t, ok := c.transports.Load(cluster); ok {
		return t.(http.RoundTripper)
	}
	t, _ := c.transports.LoadOrStore(cluster, httpfilter.ClusterTransport(c.services, cluster, 8))
	return t.(http.RoundTripper)
}
