package jwtauthn

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// maxJWKSBody bounds what is read of a remote JWKS.
const maxJWKSBody = 1 << 20

// keySet is a JWKS's usable public keys (and HMAC secrets).
type keySet struct {
	keys []jose.JSONWebKey
}

// parseJWKS reads a JWKS document, with jwt_verify's status when it is
// not one: not a JSON object, no "keys", "keys" not a list, or no usable
// key among them (keys that do not parse are skipped).
func parseJWKS(data []byte) (*keySet, status) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		return nil, statusJwksParseError
	}
	rawKeys, ok := doc["keys"]
	if !ok {
		return nil, statusJwksNoKeys
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(rawKeys, &keys); err != nil || keys == nil {
		return nil, statusJwksBadKeys
	}
	ks := &keySet{}
	for _, raw := range keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue
		}
		if !k.IsPublic() {
			if _, secret := k.Key.([]byte); !secret {
				k = k.Public()
			}
		}
		if k.Key == nil {
			continue
		}
		ks.keys = append(ks.keys, k)
	}
	if len(ks.keys) == 0 {
		return nil, statusJwksNoValidKeys
	}
	return ks, statusOK
}

// keyFits reports whether a key of this type can verify alg.
func keyFits(key any, alg jose.SignatureAlgorithm) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(string(alg), "RS") || strings.HasPrefix(string(alg), "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256:
			return k.Curve == elliptic.P256()
		case jose.ES384:
			return k.Curve == elliptic.P384()
		case jose.ES512:
			return k.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	case []byte:
		return strings.HasPrefix(string(alg), "HS")
	}
	return false
}

// remoteJWKS is a provider's remote_jwks: fetched over a cluster when a
// request needs it, kept for cache_duration. Requests that need it while
// a fetch runs wait for that one fetch.
type remoteJWKS struct {
	url, host, path string
	timeout         time.Duration
	cacheDuration   time.Duration
	transport       *http.Transport
	now             func() time.Time
	success, failed *stats.Counter
	// retry is retry_policy: a try that failed to connect, was reset,
	// got a 5xx or outlived the per-try timeout is tried again after a
	// jittered exponential back-off, all tries within the timeout.
	retry grpcservice.ClientRetry

	mu      sync.Mutex
	keys    *keySet
	expires time.Time
	// fetching is the running fetch, nil when none runs.
	fetching *fetch

	// async is async_fetch: a background loop keeps the keys fresh (they
	// then never expire), fetching again after refetch, or after
	// failedRefetch when a fetch failed.
	async                  bool
	refetch, failedRefetch time.Duration
	// start starts the loop when the filter is built (fast_listener), nil
	// when the listener starts it (or without async_fetch).
	start func()
	// firstDone, when the listener waits for the first fetch, is closed
	// once it ended.
	firstDone     chan struct{}
	firstDoneOnce sync.Once
	// stop, closed by Close, ends the loop and a fetch's back-off.
	stop     chan struct{}
	stopOnce sync.Once
}

// fetch is one fetch of the JWKS; done closes when it ends, after keys
// (nil on failure) is set.
type fetch struct {
	done chan struct{}
	keys *keySet
}

// newRemoteJWKS compiles a RemoteJwks's http_uri.
func newRemoteJWKS(uri, cluster string, timeout, cacheDuration time.Duration, svc httpfilter.Services) (*remoteJWKS, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("http_uri.uri: %q is not an http(s) URL", uri)
	}
	if cluster == "" {
		return nil, errors.New("http_uri.cluster: must be set")
	}
	if svc == nil {
		return nil, errors.New("http_uri.cluster: no cluster can be reached")
	}
	path := u.RequestURI()
	r := &remoteJWKS{url: uri, host: u.Host, path: path, timeout: timeout, cacheDuration: cacheDuration, stop: make(chan struct{})}
	r.transport = httpfilter.ClusterTransport(svc, cluster, 2)
	return r, nil
}

// get returns the cached keys, or the fetch to wait for.
func (r *remoteJWKS) get() (*keySet, *fetch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys != nil && r.now().Before(r.expires) {
		return r.keys, nil
	}
	return nil, r.startLocked()
}

// startLocked starts a fetch unless one runs, and returns it; r.mu is
// held.
func (r *remoteJWKS) startLocked() *fetch {
	if r.fetching == nil {
		f := &fetch{done: make(chan struct{})}
		r.fetching = f
		go r.run(f)
	}
	return r.fetching
}

// refresh is async_fetch's loop: a fetch at once, then again
// refetchBeforeExpiry before cache_duration ends (failed_refetch_duration
// after a failure), until Close.
func (r *remoteJWKS) refresh() {
	for {
		r.mu.Lock()
		f := r.startLocked()
		r.mu.Unlock()
		select {
		case <-f.done:
		case <-r.stop:
			return
		}
		if r.firstDone != nil {
			r.firstDoneOnce.Do(func() { close(r.firstDone) })
		}
		wait := r.refetch
		if f.keys == nil {
			wait = r.failedRefetch
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.stop:
			t.Stop()
			return
		}
	}
}

// run fetches the JWKS, bounded by the timeout.
func (r *remoteJWKS) run(f *fetch) {
	ks, err := r.fetchRetried()
	r.mu.Lock()
	if err == nil {
		r.keys, r.expires = ks, r.now().Add(r.cacheDuration)
		if r.async {
			// Kept until the refresh loop replaces them.
			r.expires = time.Unix(1<<62, 0)
		}
		r.success.Inc()
	} else {
		r.failed.Inc()
	}
	f.keys = ks
	r.fetching = nil
	r.mu.Unlock()
	close(f.done)
}

// fetchRetried fetches the JWKS, tried again as retry_policy allows
// (Envoy converts it to a route retry policy retrying on
// 5xx,gateway-error,connect-failure,reset, its per-try timeout the
// back-off's max_interval), every try within the timeout.
func (r *remoteJWKS) fetchRetried() (*keySet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var (
		ks  *keySet
		err error
	)
	r.retry.Do(ctx, r.stop, func(tryCtx context.Context) bool {
		var retriable bool
		ks, retriable, err = r.fetchOnce(tryCtx)
		// A try that timed out is a 504, which 5xx retries.
		if err != nil && tryCtx.Err() != nil && ctx.Err() == nil {
			retriable = true
		}
		return err != nil && retriable
	})
	if err != nil {
		return nil, err
	}
	return ks, nil
}

// fetchOnce is one GET of the JWKS through the cluster; retriable reports
// a failure a retry_policy retries: no connection, a reset, a 5xx.
func (r *remoteJWKS) fetchOnce(ctx context.Context) (ks *keySet, retriable bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://jwks"+r.path, http.NoBody)
	if err != nil {
		return nil, false, err
	}
	req.Host = r.host
	req.Header["User-Agent"] = []string{""}
	resp, err := r.transport.RoundTrip(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBody))
	if err != nil {
		return nil, true, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode >= 500, fmt.Errorf("status %d", resp.StatusCode)
	}
	ks, st := parseJWKS(body)
	if st != statusOK {
		return nil, false, errors.New(st.String())
	}
	return ks, false, nil
}

// Close ends async_fetch's loop and closes idle connections to the JWKS
// server.
func (r *remoteJWKS) Close() {
	r.stopOnce.Do(func() { close(r.stop) })
	if r.firstDone != nil {
		r.firstDoneOnce.Do(func() { close(r.firstDone) })
	}
	r.transport.CloseIdleConnections()
}
