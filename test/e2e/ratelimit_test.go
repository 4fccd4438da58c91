package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
)

// rlsServer is a rate limit service (envoy.service.ratelimit.v3) with a
// small counting policy: it counts the hits of each descriptor (its
// entries joined), and a descriptor with an entry "quota: N" allows N
// hits; over that, the call is OVER_LIMIT. Descriptors without a quota
// are unlimited. A call counts as many hits as the descriptor's
// hits_addend says, else the request's, else one, as the reference
// service counts; with is_negative_hits it gives them back (down to
// none), and is never over the limit. It adds headers to both sides of allowed requests, and a
// body and content-type to over-limit answers. It keeps every request. A
// call with an entry of value "hold" is answered only once hold is
// closed (or the call is cancelled).
type rlsServer struct {
	rlsv3.UnimplementedRateLimitServiceServer
	mu       sync.Mutex
	requests []*rlsv3.RateLimitRequest
	hits     map[string]int
	hold     chan struct{}
	// holding counts the calls being held.
	holding int
}

func (s *rlsServer) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	for _, d := range req.GetDescriptors() {
		for _, e := range d.GetEntries() {
			if e.GetValue() == "hold" {
				s.mu.Lock()
				s.holding++
				s.mu.Unlock()
				select {
				case <-s.hold:
				case <-ctx.Done():
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	for _, d := range req.GetDescriptors() {
		var parts []string
		quota := -1
		for _, e := range d.GetEntries() {
			parts = append(parts, e.GetKey()+"="+e.GetValue())
			if e.GetKey() == "quota" {
				quota, _ = strconv.Atoi(e.GetValue())
			}
		}
		key := req.GetDomain() + "|" + strings.Join(parts, ",")
		n := 1
		switch {
		case d.GetHitsAddend() != nil:
			n = int(d.GetHitsAddend().GetValue())
		case req.GetHitsAddend() > 0:
			n = int(req.GetHitsAddend())
		}
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		if d.GetIsNegativeHits() {
			s.hits[key] = max(s.hits[key]-n, 0)
			resp.Statuses = append(resp.Statuses, st)
			continue
		}
		s.hits[key] += n
		if quota >= 0 {
			st.CurrentLimit = &rlsv3.RateLimitResponse_RateLimit{
				Name: fmt.Sprintf("quota-%d", quota), RequestsPerUnit: uint32(quota), Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE,
			}
			st.LimitRemaining = uint32(max(quota-s.hits[key], 0))
			st.DurationUntilReset = durationpb.New(42 * time.Second)
			if s.hits[key] > quota {
				st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			}
		}
		resp.Statuses = append(resp.Statuses, st)
	}
	if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
		resp.RawBody = []byte(`{"error":"slow down"}`)
		resp.ResponseHeadersToAdd = []*corev3.HeaderValue{{Key: "Content-Type", Value: "application/json"}}
	} else {
		resp.ResponseHeadersToAdd = []*corev3.HeaderValue{{Key: "x-rls-resp", Value: "seen"}}
		resp.RequestHeadersToAdd = []*corev3.HeaderValue{{Key: "x-rls-req", Value: "ok"}}
	}
	return resp, nil
}

// held is how many calls the service has held so far.
func (s *rlsServer) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding
}

// count is how many calls the service got for domain.
func (s *rlsServer) count(domain string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.GetDomain() == domain {
			n++
		}
	}
	return n
}

// lastDescriptors are the descriptors of the last call for domain, each
// as its "key=value" entries, then its limit override, hits_addend and
// "negative" for is_negative_hits.
func (s *rlsServer) lastDescriptors(domain string) [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.requests) - 1; i >= 0; i-- {
		r := s.requests[i]
		if r.GetDomain() != domain {
			continue
		}
		var out [][]string
		for _, d := range r.GetDescriptors() {
			var entries []string
			for _, e := range d.GetEntries() {
				entries = append(entries, e.GetKey()+"="+e.GetValue())
			}
			if l := d.GetLimit(); l != nil {
				entries = append(entries, fmt.Sprintf("limit=%d/%s", l.GetRequestsPerUnit(), l.GetUnit()))
				if m := l.GetUnitMultiplier(); m != nil {
					entries = append(entries, fmt.Sprintf("unit_multiplier=%d", m.GetValue()))
				}
			}
			if h := d.GetHitsAddend(); h != nil {
				entries = append(entries, fmt.Sprintf("hits=%d", h.GetValue()))
			}
			if d.GetIsNegativeHits() {
				entries = append(entries, "negative")
			}
			out = append(out, entries)
		}
		return out
	}
	return nil
}

// startRLS serves the rate limit service on a loopback port until the
// spec ends.
func startRLS() (*rlsServer, int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	s := &rlsServer{hits: map[string]int{}, hold: make(chan struct{})}
	srv := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(srv, s)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return s, ln.Addr().(*net.TCPAddr).Port
}

// closedPort is a loopback port nothing listens on.
func closedPort() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := ln.Addr().(*net.TCPAddr).Port
	Expect(ln.Close()).To(Succeed())
	return p
}

// rlsFilter is the HTTP rate limit filter (a YAML flow item) calling the
// service's cluster, with a timeout generous for a loaded machine and the
// extra fields (YAML flow mapping content).
func rlsFilter(cluster, extra string) string {
	return httpFilter("envoy.filters.http.ratelimit", "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
		"{rate_limit_service: {grpc_service: {envoy_grpc: {cluster_name: "+cluster+"}}, transport_api_version: V3}, timeout: 5s, "+extra+"}")
}

const rlsPerRoute = "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute"

var _ = Describe("The global rate limit HTTP filter", func() {
	var (
		client = &http.Client{Timeout: 10 * time.Second}
		rls    *rlsServer
		sc     *Sidecar
		port   int
		// denyPort and allowPort reach a service that is down, with
		// failure_mode_deny true and false; heldPort's filter has no
		// timeout; xPort's has no x-ratelimit headers.
		denyPort, allowPort, heldPort, xPort int
		logPath, heldLog                     string
	)
	get := func(port int, path string, header http.Header) Response {
		GinkgoHelper()
		return httpDo(client, "GET", listenerURL(port, path), nil, header)
	}

	BeforeEach(func() {
		var rlsPort int
		rls, rlsPort = startRLS()
		up := echoHeadersUpstream()
		down := closedPort()
		port, denyPort, allowPort, heldPort, xPort = freePort(), freePort(), freePort(), freePort(), freePort()
		logPath = filepath.Join(newDir(), "access.log")
		heldLog = filepath.Join(newDir(), "held.log")
		spec := proxySpec{
			Port:     port,
			Top:      "{node: {id: n1, cluster: web-svc}, layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
			Listener: "{name: front}",
			HCM: "{stat_prefix: front, access_log: [" +
				fileLog(logPath, "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + "]}",
			Filters: "[" + rlsFilter("rls", `domain: web, enable_x_ratelimit_headers: DRAFT_VERSION_03, enable_retry_after_header: true,
				response_headers_to_add: [{header: {key: x-limited-by, value: outrigger}}]`) + "]",
			VirtualHost: "{rate_limits: [{actions: [{generic_key: {descriptor_value: vh}}]}]}",
			Routes: `[
				{match: {prefix: /quota}, route: {cluster: up, rate_limits: [
					{actions: [{generic_key: {descriptor_key: quota, descriptor_value: "2"}}, {request_headers: {header_name: x-user, descriptor_key: user}}]},
					{actions: [{remote_address: {}}, {masked_remote_address: {v4_prefix_mask_len: 8}}, {destination_cluster: {}}, {source_cluster: {}}],
					 limit: {rate_limit: {requests_per_unit: 9, unit: HOUR}}},
					{stage: 1, actions: [{generic_key: {descriptor_value: other-stage}}]}]}},
				{match: {prefix: /vh}, route: {cluster: up}},
				{match: {prefix: /xoff}, route: {cluster: up, rate_limits: [
					{x_ratelimit_option: "OFF", actions: [{generic_key: {descriptor_key: quota, descriptor_value: "1"}}]},
					{actions: [{generic_key: {descriptor_key: quota, descriptor_value: "9"}}]}]}},
				{match: {prefix: /xpart}, route: {cluster: up, rate_limits: [
					{actions: [{generic_key: {descriptor_key: quota, descriptor_value: "3"}}]},
					{x_ratelimit_option: "OFF", actions: [{generic_key: {descriptor_key: quota, descriptor_value: "8"}}]}]}},
				{match: {prefix: /fmt}, route: {cluster: up, rate_limits: [
					{actions: [{generic_key: {descriptor_key: g, descriptor_value: "%REQ(x-user)%", default_value: nobody}}]},
					{actions: [{remote_address_match: {descriptor_key: who, descriptor_value: "%REQ(x-user)%@%REQ(:method)%", default_value: anon,
						address_matcher: {ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]}}}]},
					{actions: [{remote_address_match: {descriptor_key: strict, descriptor_value: "%REQ(x-user)%",
						address_matcher: {ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]}}}]}]}},
				{match: {prefix: /routehits}, route: {cluster: up, rate_limits: [
					{hits_addend: {number: 3}, actions: [{generic_key: {descriptor_key: quota, descriptor_value: "5"}}]},
					{apply_on_stream_done: true, hits_addend: {format: "%BYTES_RECEIVED%"}, actions: [{generic_key: {descriptor_key: rdone, descriptor_value: "1"}}]}]}},
				{match: {prefix: /addr}, route: {cluster: up, rate_limits: [
					{actions: [{remote_address_match: {descriptor_value: loopback, address_matcher: {ranges: [{address_prefix: 127.9.9.9, prefix_len: 8}]}}}]},
					{actions: [{remote_address_match: {descriptor_key: outside, descriptor_value: "yes",
						address_matcher: {invert_match: true, ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]}}}]},
					{actions: [{remote_address_match: {descriptor_key: other, descriptor_value: ten, default_value: unused,
						address_matcher: {invert_match: true, ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}}}]}]}},
				{match: {prefix: /query}, route: {cluster: up, rate_limits: [
					{actions: [{query_parameters: {query_parameter_name: user, descriptor_key: user}},
						{query_parameter_value_match: {descriptor_value: dbg, query_parameters: [{name: debug, string_match: {exact: "on"}}]}}]},
					{actions: [{query_parameters: {query_parameter_name: tenant, descriptor_key: tenant, skip_if_absent: true}},
						{query_parameter_value_match: {descriptor_key: quota, descriptor_value: "1", expect_match: false, query_parameters: [{name: vip}]}}]}]}},
				{match: {prefix: /both}, route: {cluster: up, include_vh_rate_limits: true,
					rate_limits: [{actions: [{header_value_match: {descriptor_value: get, headers: [{name: ":method", string_match: {exact: GET}}]}}]}]}},
				{match: {prefix: /ignored}, route: {cluster: up},
					typed_per_filter_config: {envoy.filters.http.ratelimit: ` + withType(rlsPerRoute, "{vh_rate_limits: IGNORE}") + `}},
				{match: {prefix: /own}, route: {cluster: up},
					typed_per_filter_config: {envoy.filters.http.ratelimit: ` + withType(rlsPerRoute,
				`{domain: own, rate_limits: [{actions: [{generic_key: {descriptor_key: quota, descriptor_value: "0"}}]}]}`) + `}},
				{match: {prefix: /take}, route: {cluster: up, rate_limits: [
					{hits_addend: {number: 2}, actions: [{generic_key: {descriptor_key: quota, descriptor_value: "2"}}, {generic_key: {descriptor_value: pool}}]}]}},
				{match: {prefix: /giveback}, route: {cluster: up, rate_limits: [
					{hits_addend: {format: "%REQ(x-back)%", is_negative_hits: true}, actions: [{generic_key: {descriptor_key: quota, descriptor_value: "2"}}, {generic_key: {descriptor_value: pool}}]}]}},
				{match: {prefix: /hits}, route: {cluster: up},
					typed_per_filter_config: {envoy.filters.http.ratelimit: ` + withType(rlsPerRoute,
				`{domain: hits, rate_limits: [{hits_addend: {number: 3}, actions: [{generic_key: {descriptor_key: quota, descriptor_value: "5"}}]}]}`) + `}},
				{match: {prefix: /done}, route: {cluster: up},
					typed_per_filter_config: {envoy.filters.http.ratelimit: ` + withType(rlsPerRoute,
				`{domain: done, rate_limits: [{actions: [{generic_key: {descriptor_value: request}}]},
					{apply_on_stream_done: true, hits_addend: {format: "%BYTES_RECEIVED%"}, actions: [{generic_key: {descriptor_value: done}}]}]}`) + `}}]`,
			Clusters: []proxyCluster{
				{Name: "up", Port: portNum(up)},
				{Name: "rls", Port: rlsPort, Extra: h2cOptions()},
				{Name: "rls_down", Port: down, Extra: h2cOptions()},
				{Name: "up_deny", Port: portNum(up)},
				{Name: "up_allow", Port: portNum(up)},
			},
			More: []proxySpec{
				{Port: denyPort, Listener: "{name: deny}", HCM: "{stat_prefix: deny}",
					Filters:     "[" + rlsFilter("rls_down", "domain: web, failure_mode_deny: true, status_on_error: {code: 503}") + "]",
					VirtualHost: "{rate_limits: [{actions: [{generic_key: {descriptor_value: d}}]}]}",
					Routes:      "[{match: {prefix: /}, route: {cluster: up_deny}}]"},
				{Port: allowPort, Listener: "{name: allow}", HCM: "{stat_prefix: allow}",
					Filters:     "[" + rlsFilter("rls_down", "domain: web, stat_prefix: fo") + "]",
					VirtualHost: "{rate_limits: [{actions: [{generic_key: {descriptor_value: a}}]}]}",
					Routes:      "[{match: {prefix: /}, route: {cluster: up_allow}}]"},
				{Port: xPort, Listener: "{name: xrl}", HCM: "{stat_prefix: xrl}",
					Filters: "[" + rlsFilter("rls", "domain: x") + "]",
					Routes: `[{match: {prefix: /on}, route: {cluster: up, rate_limits: [
						{x_ratelimit_option: DRAFT_VERSION_03, actions: [{generic_key: {descriptor_key: quota, descriptor_value: "4"}}]}]}},
						{match: {prefix: /}, route: {cluster: up, rate_limits: [{actions: [{generic_key: {descriptor_key: quota, descriptor_value: "5"}}]}]}}]`},
				{Port: heldPort, Listener: "{name: held}", HCM: "{stat_prefix: held, access_log: [" + fileLog(heldLog, "%REQ(:PATH)% %RESPONSE_CODE%\n") + "]}",
					Filters: "[" + httpFilter("envoy.filters.http.ratelimit", "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
						"{rate_limit_service: {grpc_service: {envoy_grpc: {cluster_name: rls}}, transport_api_version: V3}, timeout: 0s, domain: held}") + "]",
					Routes: "[{match: {prefix: /}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ratelimit: " + withType(rlsPerRoute,
						"{rate_limits: [{apply_on_stream_done: true, actions: [{generic_key: {descriptor_value: hold}}]}]}") + "}}]"},
			},
		}
		sc = Start(newDir(), spec.YAML(), "--file-flush-interval-msec", "100")
	})

	It("sends the route's descriptors of its stage, with their limit override, and lets allowed requests through with the service's headers", func() {
		r := get(port, "/quota", http.Header{"X-User": {"ann"}})
		Expect(r.Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{
			{"quota=2", "user=ann"},
			{"remote_address=127.0.0.1", "masked_remote_address=127.0.0.0/8", "destination_cluster=up", "source_cluster=web-svc", "limit=9/HOUR"},
		}), "the virtual host's rate_limits are left out (the route has some), and so is stage 1")
		Expect(tailSeen(r)).To(HaveKeyWithValue("X-Rls-Req", "ok"), "request_headers_to_add went upstream")
		Expect(r.Header.Get("x-rls-resp")).To(Equal("seen"), "response_headers_to_add")
		Expect(r.Header.Get("x-ratelimit-limit")).To(Equal(`2, 2;w=60;name="quota-2"`))
		Expect(r.Header.Get("x-ratelimit-remaining")).To(Equal("1"))
		Expect(r.Header.Get("x-ratelimit-reset")).To(Equal("42"))
		Expect(r.Header.Get("x-envoy-ratelimited")).To(BeEmpty())
		Expect(r.Header.Get("x-limited-by")).To(BeEmpty(), "only rate-limited replies get the filter's headers")
		Expect(statValue(sc, "cluster.up.ratelimit.ok")).To(Equal("1"))

		// A request without the header has no first descriptor.
		Expect(get(port, "/quota", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(HaveLen(1))
		Expect(rls.lastDescriptors("web")[0][0]).To(Equal("remote_address=127.0.0.1"))
	})

	It("makes descriptor entries of query parameters: query_parameters and query_parameter_value_match", func() {
		Expect(get(port, "/query?user=a%20b&debug=on&tenant=t1&user=second", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{
			{"user=a b", "query_match=dbg"},
			{"tenant=t1", "quota=1"},
		}), "the first value of a parameter, percent-decoded")

		// Without user (or debug) the first descriptor is dropped; without
		// tenant the second only loses that entry (skip_if_absent).
		Expect(get(port, "/query?debug=on", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"quota=1"}}))
		r := get(port, "/query?debug=off", nil)
		Expect(r.Status).To(Equal(429), "the second hit of quota=1 is over the limit")
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"quota=1"}}))

		// vip matches, so expect_match: false drops the second descriptor
		// too: nothing to ask.
		calls := rls.count("web")
		Expect(get(port, "/query?vip&debug=on", nil).Status).To(Equal(200))
		Expect(rls.count("web")).To(Equal(calls), "no descriptor, no call")
	})

	It("makes remote_address_match entries of the downstream address", func() {
		Expect(get(port, "/addr", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{
			{"remote_address_match=loopback"},
			{"other=ten"},
		}), "127.0.0.1 is in 127.0.0.0/8, so the inverted match leaves the second descriptor out")
	})

	It("answers 429 with x-envoy-ratelimited, retry-after, the service's body and headers, once the service says OVER_LIMIT", func() {
		for i := range 2 {
			r := get(port, "/quota", http.Header{"X-User": {"bob"}})
			Expect(r.Status).To(Equal(200), "hit %d", i+1)
			Expect(r.Header).NotTo(HaveKey("Retry-After"), "only a 429 gets retry-after")
		}
		r := get(port, "/quota", http.Header{"X-User": {"bob"}})
		Expect(r.Status).To(Equal(429))
		Expect(r.Header.Values("retry-after")).To(Equal([]string{"42"}), "enable_retry_after_header: the over-limit status's duration_until_reset")
		Expect(r.Body).To(Equal(`{"error":"slow down"}`))
		Expect(r.Header.Values("content-type")).To(Equal([]string{"application/json"}), "the service's content-type replaces the reply's")
		Expect(r.Header.Get("x-envoy-ratelimited")).To(Equal("true"))
		Expect(r.Header.Get("x-limited-by")).To(Equal("outrigger"))
		Expect(r.Header.Get("x-ratelimit-remaining")).To(Equal("0"))
		// Another user still has its quota.
		Expect(get(port, "/quota", http.Header{"X-User": {"cy"}}).Status).To(Equal(200))

		Expect(statValue(sc, "cluster.up.ratelimit.over_limit")).To(Equal("1"))
		Expect(statValue(sc, "cluster.up.ratelimit.ok")).To(Equal("3"))
		Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
			Should(ContainSubstring("/quota 429 RL request_rate_limited\n"))
	})

	It("follows the virtual host options: override by default, include_vh_rate_limits, and the per-route IGNORE, domain and rate_limits", func() {
		Expect(get(port, "/vh", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"generic_key=vh"}}), "a route without rate_limits uses its virtual host's")

		Expect(get(port, "/both", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"header_match=get"}, {"generic_key=vh"}}))

		calls := rls.count("web")
		Expect(get(port, "/ignored", nil).Status).To(Equal(200))
		Expect(rls.count("web")).To(Equal(calls), "no descriptor, no call")

		r := get(port, "/own", nil)
		Expect(r.Status).To(Equal(429), "the route's own rate_limits, in its own domain")
		Expect(rls.lastDescriptors("own")).To(Equal([][]string{{"quota=0"}}))
	})

	It("sends a per-route entry's hits_addend, which the service counts", func() {
		Expect(get(port, "/hits", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("hits")).To(Equal([][]string{{"quota=5", "hits=3"}}))
		Expect(get(port, "/hits", nil).Status).To(Equal(429), "3 + 3 hits are over the quota of 5")
	})

	It("sends an entry's is_negative_hits with its hits_addend, which the service gives back", func() {
		Expect(get(port, "/take", nil).Status).To(Equal(200))
		Expect(get(port, "/take", nil).Status).To(Equal(429), "2 + 2 hits are over the quota of 2")
		Expect(get(port, "/giveback", http.Header{"X-Back": {"4"}}).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"quota=2", "generic_key=pool", "hits=4", "negative"}}))
		Expect(get(port, "/take", nil).Status).To(Equal(200), "the 4 hits were given back")
		Expect(get(port, "/take", nil).Status).To(Equal(429))
	})

	It("follows a rate limit entry's x_ratelimit_option over the filter's enable_x_ratelimit_headers", func() {
		r := get(port, "/xoff", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("x-ratelimit-limit")).To(BeEmpty(), "the status closest to its limit has its headers OFF")
		Expect(r.Header.Get("x-ratelimit-remaining")).To(BeEmpty())

		r = get(port, "/xpart", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("x-ratelimit-limit")).To(Equal(`3, 3;w=60;name="quota-3"`), "the OFF descriptor has no quota policy")
		Expect(r.Header.Get("x-ratelimit-remaining")).To(Equal("2"))

		r = get(xPort, "/on", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("x-ratelimit-limit")).To(Equal(`4, 4;w=60;name="quota-4"`), "DRAFT_VERSION_03 where the filter has none")
		Expect(r.Header.Get("x-ratelimit-remaining")).To(Equal("3"))
		Expect(r.Header.Get("x-ratelimit-reset")).To(Equal("42"))
		r = get(xPort, "/other", nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("x-ratelimit-limit")).To(BeEmpty(), "the filter's setting (off) for the others")
		Expect(rls.lastDescriptors("x")).To(Equal([][]string{{"quota=5"}}))
	})

	It("formats remote_address_match values, and generic_key values once the runtime feature says so, with default_value for an empty result", func() {
		Expect(get(port, "/fmt", http.Header{"X-User": {"ann"}}).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"g=%REQ(x-user)%"}, {"who=ann@GET"}, {"strict=ann"}}),
			"generic_key's value is literal without the feature")
		Expect(get(port, "/fmt", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"g=%REQ(x-user)%"}, {"who=@GET"}}),
			"an empty result without default_value drops the descriptor")

		Expect(sc.Post("/runtime_modify?envoy.reloadable_features.enable_formatter_for_ratelimit_action_descriptor_value=true").Status).To(Equal(200))
		Expect(get(port, "/fmt", http.Header{"X-User": {"bob"}}).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"g=bob"}, {"who=bob@GET"}, {"strict=bob"}}))
		Expect(get(port, "/fmt", nil).Status).To(Equal(200))
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"g=nobody"}, {"who=@GET"}}))
	})

	It("reads hits_addend and apply_on_stream_done in a route's own rate_limits", func() {
		r := httpDo(client, "POST", listenerURL(port, "/routehits"), strings.NewReader("four"), nil)
		Expect(r.Status).To(Equal(200))
		Expect(rls.count("web")).To(BeNumerically(">=", 1))
		Eventually(func() int { return rls.count("web") }).Should(Equal(2), "the stream-done call")
		Expect(rls.lastDescriptors("web")).To(Equal([][]string{{"rdone=1", "hits=4"}}), "%BYTES_RECEIVED% at the stream's end")
		Expect(get(port, "/routehits", nil).Status).To(Equal(429), "3 + 3 hits are over the quota of 5")
		Expect(statValue(sc, "cluster.up.ratelimit.over_limit")).To(Equal("1"))
	})

	It("sends the apply_on_stream_done entries once the stream has ended, with the hits known then", func() {
		r := httpDo(client, "POST", listenerURL(port, "/done"), strings.NewReader("eleven byte"), nil)
		Expect(r.Status).To(Equal(200))
		Expect(rls.count("done")).To(BeNumerically(">=", 1))
		Eventually(func() int { return rls.count("done") }).Should(Equal(2), "the stream-done call")
		Expect(rls.lastDescriptors("done")).To(Equal([][]string{{"generic_key=done", "hits=11"}}), "%BYTES_RECEIVED% at the stream's end")
		Expect(statValue(sc, "cluster.up.ratelimit.ok")).To(Equal("1"), "the stream-done answer counts in no stat, as in Envoy")
	})

	It("does not hold the request for the stream-done call", func() {
		// The service holds the stream-done call until the spec ends, and
		// the filter has no timeout: a stream that waited for it would
		// not end, and its access log line would not be written.
		DeferCleanup(func() { close(rls.hold) })
		Expect(get(heldPort, "/a", nil).Status).To(Equal(200))
		Eventually(rls.held).Should(Equal(1), "the stream-done call was made")
		Eventually(func() string { b, _ := os.ReadFile(heldLog); return string(b) }).Should(Equal("/a 200\n"), "the stream ended")
		Expect(rls.count("held")).To(Equal(0), "while the call is still held")
	})

	It("denies with status_on_error when the service is down and failure_mode_deny is set, and lets requests through otherwise", func() {
		r := get(denyPort, "/x", nil)
		Expect(r.Status).To(Equal(503))
		Expect(statValue(sc, "cluster.up_deny.ratelimit.error")).To(Equal("1"))
		Expect(statValue(sc, "cluster.up_deny.ratelimit.failure_mode_allowed")).To(Equal("0"))

		r = get(allowPort, "/y", nil)
		Expect(r.Status).To(Equal(200))
		Expect(statValue(sc, "cluster.up_allow.ratelimit.fo.error")).To(Equal("1"))
		Expect(statValue(sc, "cluster.up_allow.ratelimit.fo.failure_mode_allowed")).To(Equal("1"))
	})

	It("is refused at load with the path of a field it does not implement", func() {
		cfg := proxySpec{
			Port:     freePort(),
			Filters:  "[" + rlsFilter("rls", "domain: web, rate_limits: [{stage: 1, actions: [{remote_address: {}}]}]") + "]",
			Clusters: []proxyCluster{{Name: "up", Port: 1}, {Name: "rls", Port: 1, Extra: h2cOptions()}},
		}.YAML()
		res, _ := validate("bad.yaml", cfg)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("http_filters[0].typed_config.rate_limits[0].stage: not supported in a filter's own rate_limits"))

		cfg = proxySpec{
			Port:     freePort(),
			Filters:  "[" + rlsFilter("rls", "domain: web") + "]",
			Routes:   `[{match: {prefix: /}, route: {cluster: up, rate_limits: [{actions: [{extension: {name: x, typed_config: {"@type": type.googleapis.com/google.protobuf.Struct}}}]}]}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: 1}, {Name: "rls", Port: 1, Extra: h2cOptions()}},
		}.YAML()
		res, _ = validate("bad2.yaml", cfg)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("rate_limits[0].actions[0].extension"))

	})
})

// netRLS is the network rate limit filter (a YAML flow item) calling the
// service's cluster, with the extra fields (YAML flow mapping content).
func netRLS(cluster, extra string) string {
	return `{name: envoy.filters.network.ratelimit, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.ratelimit.v3.RateLimit,
		rate_limit_service: {grpc_service: {envoy_grpc: {cluster_name: ` + cluster + `}}, transport_api_version: V3}, timeout: 5s, ` + extra + `}}`
}

var _ = Describe("The global rate limit network filter", func() {
	It("asks the service about each connection, closes the one over the limit, and follows failure_mode_deny when the service is down", func() {
		rls, rlsPort := startRLS()
		up := startTCPServer(echo)
		port, denyPort, allowPort, extrasPort := freePort(), freePort(), freePort(), freePort()
		chain := func(name string, port int, filter string) string {
			return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [%s, %s]}]}`,
				name, port, filter, tcpProxyTo("echo"))
		}
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s, %s]
  listeners: [%s, %s, %s, %s]
`, tcpCluster("echo", up),
			strings.TrimSuffix(tcpCluster("rls", rlsPort), "}")+", typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: "+
				withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "{explicit_http_config: {http2_protocol_options: {}}}")+"}}",
			strings.TrimSuffix(tcpCluster("rls_down", closedPort()), "}")+", typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: "+
				withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "{explicit_http_config: {http2_protocol_options: {}}}")+"}}",
			chain("limited", port, netRLS("rls", `stat_prefix: tcp, domain: conns, descriptors: [{entries: [{key: quota, value: "1"}, {key: kind, value: tcp}]}, {entries: [{key: plain, value: x}]},
				{entries: [{key: from, value: "ip-%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}, {key: sni, value: "%REQUESTED_SERVER_NAME%"}]}]`)),
			chain("deny", denyPort, netRLS("rls_down", `stat_prefix: deny, domain: conns, failure_mode_deny: true, descriptors: [{entries: [{key: a, value: b}]}]`)),
			chain("allow", allowPort, netRLS("rls_down", `stat_prefix: allow, domain: conns, descriptors: [{entries: [{key: a, value: b}]}]`)),
			chain("extras", extrasPort, netRLS("rls", `stat_prefix: extras, domain: extras, descriptors: [
				{entries: [{key: quota, value: "1"}, {key: db, value: "%DOWNSTREAM_LOCAL_ADDRESS%"}], limit: {requests_per_unit: 7, unit: HOUR, unit_multiplier: 2}, hits_addend: 3},
				{entries: [{key: pool, value: p}], hits_addend: 2, is_negative_hits: true}]`)))
		s := Start(newDir(), cfg)

		a := dialTCP(port)
		expectEcho(a)
		Expect(rls.lastDescriptors("conns")).To(Equal([][]string{{"quota=1", "kind=tcp"}, {"plain=x"}, {"from=ip-127.0.0.1", "sni=-"}}),
			"values with command operators are rendered for the connection, a missing one as -")
		expectClosedSilently(dialTCP(port))
		Expect(rls.count("conns")).To(Equal(2))
		expectEcho(a) // the first connection is not affected
		for stat, want := range map[string]string{"total": "2", "ok": "1", "over_limit": "1", "cx_closed": "1", "error": "0", "active": "0"} {
			Expect(statValue(s, "ratelimit.tcp."+stat)).To(Equal(want), stat)
		}
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"), "the closed connection never reached the upstream")

		expectClosedSilently(dialTCP(denyPort))
		Expect(statValue(s, "ratelimit.deny.error")).To(Equal("1"))
		Expect(statValue(s, "ratelimit.deny.cx_closed")).To(Equal("1"))

		expectEcho(dialTCP(allowPort))
		Expect(statValue(s, "ratelimit.allow.error")).To(Equal("1"))
		Expect(statValue(s, "ratelimit.allow.failure_mode_allowed")).To(Equal("1"))
		Expect(statValue(s, "ratelimit.allow.cx_closed")).To(Equal("0"))

		// A descriptor's limit override, hits_addend and is_negative_hits
		// go to the service as configured: 3 hits are over the quota of 1.
		expectClosedSilently(dialTCP(extrasPort))
		Expect(rls.lastDescriptors("extras")).To(Equal([][]string{
			{"quota=1", "db=127.0.0.1:" + strconv.Itoa(extrasPort), "limit=7/HOUR", "unit_multiplier=2", "hits=3"},
			{"pool=p", "hits=2", "negative"}}))
		Expect(statValue(s, "ratelimit.extras.over_limit")).To(Equal("1"))
	})
})

// holdingRLS is a rate limit service that holds every call until its
// caller cancels it, and reports the cancellation.
type holdingRLS struct {
	rlsv3.UnimplementedRateLimitServiceServer
	started, cancelled chan struct{}
}

func (h *holdingRLS) ShouldRateLimit(ctx context.Context, _ *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	h.cancelled <- struct{}{}
	return nil, ctx.Err()
}

var _ = Describe("The global rate limit network filter, when the client leaves during the call", func() {
	It("cancels the call and counts nothing but total", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		rls := &holdingRLS{started: make(chan struct{}, 4), cancelled: make(chan struct{}, 4)}
		srv := grpc.NewServer()
		rlsv3.RegisterRateLimitServiceServer(srv, rls)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)
		up := startTCPServer(echo)
		port := freePort()
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s]
  listeners: [{name: held, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [%s, %s]}]}]
`, tcpCluster("echo", up),
			strings.TrimSuffix(tcpCluster("rls", ln.Addr().(*net.TCPAddr).Port), "}")+", typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: "+
				withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "{explicit_http_config: {http2_protocol_options: {}}}")+"}}",
			port, netRLS("rls", `stat_prefix: held, domain: conns, descriptors: [{entries: [{key: a, value: b}]}]`), tcpProxyTo("echo"))
		s := Start(newDir(), cfg)

		c := dialTCP(port)
		Eventually(rls.started).WithTimeout(10 * time.Second).Should(Receive())
		_, err = c.Write([]byte("hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Close()).To(Succeed())
		Eventually(rls.cancelled).WithTimeout(10*time.Second).Should(Receive(), "the call was not cancelled")
		waitStat(s, "ratelimit.held.active", "0")
		for stat, want := range map[string]string{"total": "1", "ok": "0", "over_limit": "0", "error": "0", "failure_mode_allowed": "0", "cx_closed": "0"} {
			Expect(statValue(s, "ratelimit.held."+stat)).To(Equal(want), stat)
		}
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("0"), "the connection never reached the upstream")
	})
})
