package xds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protojson"
)

// DefaultRESTRequestTimeout is Envoy's request_timeout of a REST config
// source when it is unset.
const DefaultRESTRequestTimeout = time.Second

// restAuthority is the URL host of the requests: the transport picks the
// cluster's host itself, and the Host header is the cluster's name.
const restAuthority = "xds.invalid"

// RESTOptions make an ADS client poll a resource type's REST endpoint
// (api_type REST), as Envoy's HttpSubscriptionImpl: a POST of a JSON
// DiscoveryRequest to the type's path (/v3/discovery:clusters...) every
// refresh delay, jittered.
type RESTOptions struct {
	// Transport reaches the hosts of the config source's cluster
	// (required).
	Transport http.RoundTripper
	// Host is the requests' Host header: the cluster's name, as Envoy
	// sends it (required).
	Host string
	// RefreshDelay is the wait between the end of a request and the next
	// one (required, above 0); each wait adds a random part below it, as
	// Envoy's RestApiFetcher does.
	RefreshDelay time.Duration
	// RequestTimeout bounds each request; 0 means Envoy's default, 1 s.
	RequestTimeout time.Duration
	// client is Transport's client, which follows no redirect (Envoy's
	// async client does not).
	client *http.Client
}

// check validates the options and prepares their client; nil options
// are valid (no REST).
func (o *RESTOptions) check() error {
	switch {
	case o == nil:
		return nil
	case o.Transport == nil:
		return errors.New("REST needs a transport to the cluster")
	case o.RefreshDelay <= 0:
		return errors.New("refresh_delay: must be above 0s")
	case o.RequestTimeout < 0:
		return errors.New("request_timeout: must not be negative")
	case !httpguts.ValidHostHeader(o.Host) || o.Host == "":
		return fmt.Errorf("cluster_names[0]: %q cannot be sent as the requests' Host header", o.Host)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRESTRequestTimeout
	}
	o.client = &http.Client{
		Transport:     o.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return nil
}

// delay is the wait before the next request: the refresh delay plus a
// random part below it.
func (o *RESTOptions) delay() time.Duration {
	return o.RefreshDelay + time.Duration(rand.Int64N(int64(o.RefreshDelay)))
}

// errNotModified is a 304 answer: the management server has nothing newer
// than the version the request carried.
var errNotModified = errors.New("not modified")

// post sends req to path and returns the body of a 200 answer,
// errNotModified for a 304, or an error for anything else (another
// status, a transport error, the timeout, a body above maxResponseBytes).
func (o *RESTOptions) post(ctx context.Context, path string, req *discoveryv3.DiscoveryRequest) ([]byte, error) {
	data, err := protojson.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+restAuthority+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	hr.Host = o.Host
	hr.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		return nil, errNotModified
	default:
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("the response is larger than %d bytes", maxResponseBytes)
	}
	return body, nil
}

// poll runs a REST client until Close: each subscription is fetched when
// it is added, then all of them once the jittered refresh delay has
// passed since the last round ended.
func (a *ADS) poll() {
	defer close(a.done)
	polled := map[*ADSSubscription]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	due := false
	for {
		fetched := false
		for _, sub := range a.subscriptions() {
			if due || !polled[sub] {
				polled[sub] = true
				fetched = true
				a.fetch(sub)
			}
		}
		if fetched {
			timer.Reset(a.opts.REST.delay())
		}
		due = false
		select {
		case <-a.ctx.Done():
			return
		case <-a.wake: // a subscription was added
		case <-timer.C:
			due = true
		}
	}
}

// fetch sends one request of sub and handles its answer with the
// stream's rules: the response is decoded (JSON) and applied or rejected
// whole, with the same stats. The request carries the last accepted
// version (a rejected response leaves it as it was) and the resources
// wanted; REST has no nonce and no error_detail, as in Envoy. A failed
// request counts update_failure and leaves the configuration as it is;
// a 304 changes nothing.
func (a *ADS) fetch(sub *ADSSubscription) {
	sub.stats.updateAttempt.Inc()
	names, _ := sub.wanted()
	req := &discoveryv3.DiscoveryRequest{VersionInfo: sub.Version(), Node: a.opts.Node, ResourceNames: names, TypeUrl: sub.typeURL}
	body, err := a.opts.REST.post(a.ctx, a.restPath, req)
	switch {
	case a.ctx.Err() != nil:
		return
	case errors.Is(err, errNotModified):
		return
	case err != nil:
		a.warn("rest: update for "+a.restPath+" failed", err)
		a.connectionFailure(sub)
		return
	}
	u, decodeErr := a.decodeData(sub, "response.json", body)
	_ = a.process(sub, u.VersionInfo, func() (bool, error) {
		if decodeErr != nil {
			return false, decodeErr
		}
		// Envoy's REST subscriptions count no update_empty.
		return false, sub.apply(u)
	})
}
