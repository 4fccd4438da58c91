package extproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// detailsHTTPError is Envoy's %RESPONSE_CODE_DETAILS% of a failed
// http_service exchange.
const detailsHTTPError = "ext_proc_error_HTTP_ERROR"

// maxHTTPAnswer bounds what is read of an http_service's answer.
const maxHTTPAnswer = 1 << 20

// httpService is an http_service (ExtProcHttpService): each message to the
// processor is a POST of the ProcessingRequest as JSON to http_uri's uri,
// through its cluster; a 200 answer's body is the ProcessingResponse as
// JSON, as Envoy's ExtProcHttpClient exchanges them. There is no stream:
// each message is an exchange of its own.
type httpService struct {
	client *http.Client
	// url is the request's URL: the uri's host (the :authority) and
	// path.
	url string
	// timeout is http_uri's timeout (0: none); message_timeout bounds
	// the exchange too.
	timeout time.Duration
}

// compileHTTPService checks an http_service; errors name the field below
// the filter.
func compileHTTPService(p *extprocv3.ExtProcHttpService, svc httpfilter.Services) (*httpService, error) {
	hs := p.GetHttpService()
	switch {
	case hs == nil:
		return nil, errors.New("http_service.http_service: must be set")
	case len(hs.GetRequestHeadersToAdd()) > 0:
		return nil, errors.New("http_service.http_service.request_headers_to_add: not supported by Outrigger (Envoy's ext_proc HTTP client does not send them)")
	}
	hu := hs.GetHttpUri()
	if hu.GetCluster() == "" {
		return nil, errors.New("http_service.http_service.http_uri.cluster: must be set")
	}
	if svc == nil || svc.Cluster(hu.GetCluster()) == nil {
		return nil, fmt.Errorf("http_service.http_service.http_uri.cluster: unknown cluster '%s'", hu.GetCluster())
	}
	timeout := hu.GetTimeout().AsDuration()
	if hu.GetTimeout() != nil && (hu.GetTimeout().CheckValid() != nil || timeout < 0) {
		return nil, errors.New("http_service.http_service.http_uri.timeout: must be a valid, non-negative duration")
	}
	u, err := url.Parse(hu.GetUri())
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("http_service.http_service.http_uri.uri: %q is not an absolute URI", hu.GetUri())
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return &httpService{
		client:  &http.Client{Transport: httpfilter.ClusterTransport(svc, hu.GetCluster(), 16)},
		url:     "http://" + u.Host + path,
		timeout: timeout,
	}, nil
}

// jsonOut is how Envoy writes the request: pretty, with the primitive
// fields that have their default value.
var jsonOut = protojson.MarshalOptions{Multiline: true, EmitDefaultValues: true}

// jsonIn reads the answer, ignoring fields it does not know, as Envoy's
// loadFromJsonNoThrow ends up doing.
var jsonIn = protojson.UnmarshalOptions{DiscardUnknown: true}

// exchange posts m and returns the answer; an error is a failed exchange
// (no answer, a status other than 200, a body that is not a
// ProcessingResponse).
func (h *httpService) exchange(ctx context.Context, m *extprocsvc.ProcessingRequest) (*extprocsvc.ProcessingResponse, error) {
	body, err := jsonOut.Marshal(m)
	if err != nil {
		return nil, err
	}
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// Envoy's async client sends no user-agent.
	req.Header.Set("User-Agent", "")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPAnswer+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	case len(b) > maxHTTPAnswer:
		return nil, errors.New("answer over 1 MiB")
	}
	r := &extprocsvc.ProcessingResponse{}
	if err := jsonIn.Unmarshal(b, r); err != nil {
		return nil, err
	}
	return r, nil
}

// close releases the idle connections.
func (h *httpService) close() {
	h.client.CloseIdleConnections()
}

// callHTTP is call for an http_service: m is posted, and its answer
// awaited at most message_timeout. A failed exchange lets the request go
// on unprocessed with failure_mode_allow, and otherwise answers it with
// status_on_error, as Envoy's Filter::onError.
func (f *filter) callHTTP(m *extprocsvc.ProcessingRequest, timer *time.Timer) (*extprocsvc.ProcessingResponse, *reply) {
	c := f.c
	m.MetadataContext = f.mdContext
	f.addAttributes(m)
	type result struct {
		r   *extprocsvc.ProcessingResponse
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The goroutine may outlive the call when the timer fires first: it
	// reads nothing of f, and its result channel has room.
	res, h := make(chan result, 1), c.http
	go func() {
		r, err := h.exchange(ctx, m)
		res <- result{r, err}
	}()
	c.stats.msgsSent.Inc()
	var got result
	select {
	case got = <-res:
	case <-timer.C:
		return nil, f.timedOut()
	}
	if got.err == nil && got.r.GetOverrideMessageTimeout() != nil {
		// As in Envoy, the processor's wish for more time resets the
		// timer (once, within max_message_timeout); no other answer can
		// come on this exchange, so the message then times out.
		if t := got.r.GetOverrideMessageTimeout().AsDuration(); t >= time.Millisecond && t <= c.maxMessageTimeout {
			c.stats.overrideTimeoutReceived.Inc()
			timer.Reset(t)
		} else {
			c.stats.overrideTimeoutIgnored.Inc()
		}
		<-timer.C
		return nil, f.timedOut()
	}
	if got.err != nil {
		c.stats.httpNotOK.Inc()
		c.log.V(1).Info("ext_proc http_service exchange failed", "error", got.err.Error())
		f.finish(false)
		if f.failureModeAllow {
			c.stats.failureModeAllowed.Inc()
			return nil, nil
		}
		return nil, errorReply(c.statusOnError, detailsHTTPError)
	}
	return got.r, nil
}
