package healthcheck

import (
	"encoding/hex"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Envoy's defaults.
const (
	defaultNoTrafficInterval = 60 * time.Second
	// defaultResponseBuffer is how much of an HTTP response body is
	// searched for the receive payloads when response_buffer_size is
	// unset.
	defaultResponseBuffer = 1024
)

// Kind is the type of check, as the health_checker_type of the event log.
type Kind int

// The kinds of checks.
const (
	KindHTTP Kind = iota
	KindTCP
	KindGRPC
)

// String is Envoy's HealthCheckerType name.
func (k Kind) String() string {
	switch k {
	case KindTCP:
		return "TCP"
	case KindGRPC:
		return "GRPC"
	}
	return "HTTP"
}

// Config is one compiled HealthCheck.
type Config struct {
	Kind                     Kind
	Timeout                  time.Duration
	Interval                 time.Duration
	InitialJitter            time.Duration
	IntervalJitter           time.Duration
	IntervalJitterPercent    uint32
	UnhealthyThreshold       uint32
	HealthyThreshold         uint32
	ReuseConnection          bool
	NoTrafficInterval        time.Duration
	NoTrafficHealthyInterval time.Duration
	UnhealthyInterval        time.Duration
	UnhealthyEdgeInterval    time.Duration
	HealthyEdgeInterval      time.Duration
	AlwaysLogFailures        bool
	AlwaysLogSuccess         bool
	// EventLogPath is the file transitions are logged to, "" for none.
	EventLogPath string
	// EventSinks are the files of event_logger's file sinks, which log
	// the same events.
	EventSinks []string
	// AltPort, when not 0, is the port checks connect to instead of the
	// host's.
	AltPort uint16
	// ALPN are tls_options.alpn_protocols: offered on a TLS cluster's
	// check connections instead of the protocol of the check.
	ALPN []string
	// PendingNewHosts marks the hosts discovery adds as waiting for their
	// first check (upstream.PendingActiveHC), which excludes them from
	// the load balancer's counts until it completes: the cluster's
	// common_lb_config.ignore_new_hosts_until_first_hc, which Envoy
	// applies to the hosts of its dynamic (STRICT_DNS, EDS) clusters.
	PendingNewHosts bool

	http *httpConfig
	tcp  *tcpConfig
	grpc *grpcConfig
}

// httpConfig is an http_health_check.
type httpConfig struct {
	host         string
	path         string
	method       string
	send         []byte
	receive      [][]byte
	bufferSize   uint64
	headers      router.HeaderMutation
	expected     []statusRange
	retriable    []statusRange
	http2        bool
	serviceMatch *router.StringMatcher
}

// statusRange is [start, end) of HTTP statuses.
type statusRange struct{ start, end int64 }

// tcpConfig is a tcp_health_check.
type tcpConfig struct {
	send    []byte
	receive [][]byte
	// pp is set by proxy_protocol_config: each check's bytes start with a
	// PROXY header of version 2 when ppV2 is set, else 1.
	pp, ppV2 bool
}

// grpcConfig is a grpc_health_check.
type grpcConfig struct {
	service   string
	authority string
	// metadata is initial_metadata: headers added to each Check call,
	// with the formatter's command operators, as request_headers_to_add
	// of an HTTP check.
	metadata router.HeaderMutation
}

// ClusterInfo is what compiling a health check needs of its cluster.
type ClusterInfo struct {
	// Name is the cluster's name: the Host of HTTP checks without one.
	Name string
	// HTTP2 says the cluster speaks HTTP/2 upstream, which gRPC checks
	// need.
	HTTP2 bool
}

// Compile checks one HealthCheck and compiles it. Errors name the field
// path relative to the health check, one per problem. The constraints of
// the API (required timeout, interval and thresholds, positive durations)
// are checked again here, so that a cluster never runs a checker that
// could spin.
func Compile(hc *corev3.HealthCheck, ci ClusterInfo) (*Config, []error) {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	positive := func(field string, d *durationpb.Duration, required bool) time.Duration {
		if d == nil {
			if required {
				bad(field, "required")
			}
			return 0
		}
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			bad(field, "must be a positive duration")
			return 0
		}
		return d.AsDuration()
	}
	nonNegative := func(field string, d *durationpb.Duration) time.Duration {
		if d == nil {
			return 0
		}
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			bad(field, "must not be negative")
			return 0
		}
		return d.AsDuration()
	}
	c := &Config{
		Timeout:               positive("timeout", hc.GetTimeout(), true),
		Interval:              positive("interval", hc.GetInterval(), true),
		InitialJitter:         nonNegative("initial_jitter", hc.GetInitialJitter()),
		IntervalJitter:        nonNegative("interval_jitter", hc.GetIntervalJitter()),
		IntervalJitterPercent: hc.GetIntervalJitterPercent(),
		ReuseConnection:       hc.GetReuseConnection() == nil || hc.GetReuseConnection().GetValue(),
		AlwaysLogFailures:     hc.GetAlwaysLogHealthCheckFailures(),
		AlwaysLogSuccess:      hc.GetAlwaysLogHealthCheckSuccess(),
		//lint:ignore SA1019 Envoy still reads the deprecated event_log_path
		EventLogPath: hc.GetEventLogPath(),
		ALPN:         hc.GetTlsOptions().GetAlpnProtocols(),
	}
	for i, sink := range hc.GetEventLogger() {
		path, err := fileSinkPath(sink)
		if err != nil {
			bad(fmt.Sprintf("event_logger[%d].%s", i, err.field), "%s", err.reason)
			continue
		}
		c.EventSinks = append(c.EventSinks, path)
	}
	// A threshold of 0 would never be reached (Envoy counts up to it).
	threshold := func(field string, t *wrapperspb.UInt32Value) uint32 {
		switch {
		case t == nil:
			bad(field, "required")
		case t.GetValue() == 0:
			bad(field, "must be at least 1")
		}
		return max(t.GetValue(), 1)
	}
	c.UnhealthyThreshold = threshold("unhealthy_threshold", hc.GetUnhealthyThreshold())
	c.HealthyThreshold = threshold("healthy_threshold", hc.GetHealthyThreshold())
	if p := hc.GetAltPort(); p != nil {
		if v := p.GetValue(); v == 0 || v > 65535 {
			bad("alt_port", "%d is not a port (1 to 65535)", v)
		} else {
			c.AltPort = uint16(v)
		}
	}
	c.NoTrafficInterval = defaultNoTrafficInterval
	if d := positive("no_traffic_interval", hc.GetNoTrafficInterval(), false); d > 0 {
		c.NoTrafficInterval = d
	}
	c.NoTrafficHealthyInterval = c.NoTrafficInterval
	if d := positive("no_traffic_healthy_interval", hc.GetNoTrafficHealthyInterval(), false); d > 0 {
		c.NoTrafficHealthyInterval = d
	}
	c.UnhealthyInterval = c.Interval
	if d := positive("unhealthy_interval", hc.GetUnhealthyInterval(), false); d > 0 {
		c.UnhealthyInterval = d
	}
	c.UnhealthyEdgeInterval = c.UnhealthyInterval
	if d := positive("unhealthy_edge_interval", hc.GetUnhealthyEdgeInterval(), false); d > 0 {
		c.UnhealthyEdgeInterval = d
	}
	c.HealthyEdgeInterval = c.Interval
	if d := positive("healthy_edge_interval", hc.GetHealthyEdgeInterval(), false); d > 0 {
		c.HealthyEdgeInterval = d
	}

	var kerrs []error
	switch {
	case hc.GetHttpHealthCheck() != nil:
		c.Kind = KindHTTP
		c.http, kerrs = compileHTTP(hc.GetHttpHealthCheck(), ci)
		errs = append(errs, prefixAll("http_health_check", kerrs)...)
	case hc.GetTcpHealthCheck() != nil:
		c.Kind = KindTCP
		c.tcp, kerrs = compileTCP(hc.GetTcpHealthCheck())
		errs = append(errs, prefixAll("tcp_health_check", kerrs)...)
	case hc.GetGrpcHealthCheck() != nil:
		c.Kind = KindGRPC
		g := hc.GetGrpcHealthCheck()
		if !ci.HTTP2 {
			// Envoy's check and wording.
			bad("grpc_health_check", "%s cluster must support HTTP/2 for gRPC healthchecking", ci.Name)
		}
		c.grpc = &grpcConfig{service: g.GetServiceName(), authority: g.GetAuthority()}
		if c.grpc.authority == "" {
			c.grpc.authority = ci.Name
		}
		md, err := router.CompileHeaderMutation(g.GetInitialMetadata(), nil, "initial_metadata", "")
		if err != nil {
			errs = append(errs, prefixAll("grpc_health_check", []error{err})...)
		}
		c.grpc.metadata = md
	case hc.GetCustomHealthCheck() != nil:
		bad("custom_health_check", "custom health checkers are not supported by Outrigger")
	default:
		bad("health_checker", "one of http_health_check, tcp_health_check or grpc_health_check is required")
	}
	return c, errs
}

// compileHTTP checks an http_health_check.
func compileHTTP(h *corev3.HealthCheck_HttpHealthCheck, ci ClusterInfo) (*httpConfig, []error) {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	c := &httpConfig{host: h.GetHost(), path: h.GetPath(), bufferSize: defaultResponseBuffer}
	if c.host == "" {
		c.host = ci.Name
	}
	if c.path == "" {
		bad("path", "required")
	}
	switch m := h.GetMethod(); m {
	case corev3.RequestMethod_METHOD_UNSPECIFIED:
		c.method = "GET"
	case corev3.RequestMethod_CONNECT:
		bad("method", "CONNECT is not allowed")
	default:
		c.method = m.String()
	}
	if s := h.GetSend(); s != nil {
		switch c.method {
		case "GET", "HEAD", "DELETE", "TRACE":
			bad("send", "HTTP health check cannot specify a request payload with method '%s'; only methods that support a request body (POST, PUT, PATCH, OPTIONS) can be used with payload", c.method)
		}
		b, err := payloadBytes(s)
		if err != nil {
			bad("send", "%v", err)
		}
		c.send = b
	}
	var total uint64
	for i, p := range h.GetReceive() {
		b, err := payloadBytes(p)
		if err != nil {
			bad(fmt.Sprintf("receive[%d]", i), "%v", err)
			continue
		}
		total += uint64(len(b))
		c.receive = append(c.receive, b)
	}
	if v := h.GetResponseBufferSize(); v != nil {
		c.bufferSize = v.GetValue()
	}
	if c.bufferSize != 0 && total > c.bufferSize {
		bad("receive", "the expected response length '%d' is over than http health response buffer size '%d'", total, c.bufferSize)
	}
	var err error
	c.headers, err = router.CompileHeaderMutation(h.GetRequestHeadersToAdd(), h.GetRequestHeadersToRemove(), "request_headers_to_add", "request_headers_to_remove")
	if err != nil {
		errs = append(errs, err)
	}
	c.expected, errs = statusRanges("expected_statuses", "expected", h.GetExpectedStatuses(), errs)
	if len(c.expected) == 0 {
		c.expected = []statusRange{{200, 201}}
	}
	c.retriable, errs = statusRanges("retriable_statuses", "retriable", h.GetRetriableStatuses(), errs)
	switch h.GetCodecClientType() {
	case typev3.CodecClientType_HTTP1:
	case typev3.CodecClientType_HTTP2:
		c.http2 = true
	default:
		bad("codec_client_type", "%s is not supported by Outrigger (supported: HTTP1, HTTP2)", h.GetCodecClientType())
	}
	if h.GetUseAlpnProtocol() {
		bad("use_alpn_protocol", "not supported by Outrigger; set codec_client_type")
	}
	if m := h.GetServiceNameMatcher(); m != nil {
		sm, err := router.CompileStringMatcher(m)
		if err != nil {
			bad("service_name_matcher", "%v", err)
		} else {
			c.serviceMatch = &sm
		}
	}
	return c, errs
}

// statusRanges checks expected_statuses or retriable_statuses as Envoy
// does.
func statusRanges(field, what string, rs []*typev3.Int64Range, errs []error) ([]statusRange, []error) {
	var out []statusRange
	for i, r := range rs {
		path := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case r.GetStart() >= r.GetEnd():
			errs = append(errs, &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf("invalid http %s status range: expecting start < end, but found start=%d and end=%d", what, r.GetStart(), r.GetEnd())})
		case r.GetStart() < 100:
			errs = append(errs, &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf("invalid http %s status range: expecting start >= 100, but found start=%d", what, r.GetStart())})
		case r.GetEnd() > 600:
			errs = append(errs, &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf("invalid http %s status range: expecting end <= 600, but found end=%d", what, r.GetEnd())})
		default:
			out = append(out, statusRange{r.GetStart(), r.GetEnd()})
		}
	}
	return out, errs
}

// compileTCP checks a tcp_health_check.
func compileTCP(t *corev3.HealthCheck_TcpHealthCheck) (*tcpConfig, []error) {
	var errs []error
	c := &tcpConfig{}
	if s := t.GetSend(); s != nil {
		b, err := payloadBytes(s)
		if err != nil {
			errs = append(errs, &bootstrap.FieldError{Path: "send", Reason: err.Error()})
		}
		c.send = b
	}
	for i, p := range t.GetReceive() {
		b, err := payloadBytes(p)
		if err != nil {
			errs = append(errs, &bootstrap.FieldError{Path: fmt.Sprintf("receive[%d]", i), Reason: err.Error()})
			continue
		}
		c.receive = append(c.receive, b)
	}
	if pp := t.GetProxyProtocolConfig(); pp != nil {
		// Envoy's checker writes a header of the version alone: v1 with
		// the connection's addresses, v2 a LOCAL one, which carries no
		// TLVs; TLV settings would have no effect, so they are refused.
		c.pp, c.ppV2 = true, pp.GetVersion() == corev3.ProxyProtocolConfig_V2
		if len(pp.GetAddedTlvs()) > 0 {
			errs = append(errs, &bootstrap.FieldError{Path: "proxy_protocol_config.added_tlvs", Reason: "a health check's PROXY header carries no TLVs (v1, or a v2 LOCAL header, as in Envoy)"})
		}
		if pp.GetPassThroughTlvs() != nil {
			errs = append(errs, &bootstrap.FieldError{Path: "proxy_protocol_config.pass_through_tlvs", Reason: "a health check's PROXY header carries no TLVs (v1, or a v2 LOCAL header, as in Envoy)"})
		}
	}
	return c, errs
}

// payloadBytes decodes a Payload: text is hex, as in Envoy.
func payloadBytes(p *corev3.HealthCheck_Payload) ([]byte, error) {
	switch v := p.GetPayload().(type) {
	case *corev3.HealthCheck_Payload_Binary:
		if len(v.Binary) == 0 {
			return nil, fmt.Errorf("binary: must not be empty")
		}
		return v.Binary, nil
	case *corev3.HealthCheck_Payload_Text:
		b, err := hex.DecodeString(v.Text)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("text: invalid hex string '%s'", v.Text)
		}
		return b, nil
	}
	return nil, fmt.Errorf("one of text or binary is required")
}

// prefixAll puts prefix in front of the paths of errs.
func prefixAll(prefix string, errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if fe, ok := err.(*bootstrap.FieldError); ok {
			path := prefix
			if fe.Path != "" {
				path += "." + fe.Path
			}
			out = append(out, &bootstrap.FieldError{Path: path, Reason: fe.Reason})
			continue
		}
		out = append(out, fmt.Errorf("%s.%w", prefix, err))
	}
	return out
}
