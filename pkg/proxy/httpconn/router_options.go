package httpconn

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// routerRequestOptions is what the router's configuration also has: the
// options that check and time requests (strict_check_headers,
// respect_expected_rq_timeout) and count their responses
// (suppress_grpc_request_failure_code_stats).
type routerRequestOptions interface {
	StrictCheckHeaders() []string
	RespectExpectedRqTimeout() bool
	SuppressGrpcRequestFailureCodeStats() bool
}

// upgradeRouterOptions refuses the router options of an upgrade's own
// filter chain (the router at index last of field) that requests read
// from http_filters' router whatever the chain: set there, they would be
// ignored.
func upgradeRouterOptions(field string, last int, fc *filterChain) error {
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"strict_check_headers", len(fc.strictCheck) > 0},
		{"respect_expected_rq_timeout", fc.respectExpectedTimeout},
		{"suppress_grpc_request_failure_code_stats", fc.suppressGrpcCodeStats},
	} {
		if o.set {
			return fmt.Errorf("%s[%d].typed_config.%s: not supported by Outrigger in an upgrade's filter chain", field, last, o.name)
		}
	}
	return nil
}

// strictCheckHeaders checks the request's values of the router's
// strict_check_headers as Envoy's StrictHeaderChecker does: a timeout or
// x-envoy-max-retries must be an unsigned integer, x-envoy-retry-on and
// x-envoy-retry-grpc-on must name only known conditions. The first
// invalid one is answered 400 (response flag IH) and false returned.
func (s *stream) strictCheckHeaders() bool {
	for _, name := range s.m.filters.strictCheck {
		v, ok := s.reqHeaders.Get(name)
		if !ok || validStrictHeader(name, v) {
			continue
		}
		s.localReply(400, "invalid header '"+name+"' with value '"+v+"'", accesslog.InvalidEnvoyRequestHeaders,
			"request_headers_failed_strict_check{"+name+"}")
		return false
	}
	return true
}

// validStrictHeader reports whether v is a valid value of the strictly
// checked header name.
func validStrictHeader(name, v string) bool {
	switch name {
	case "x-envoy-retry-on":
		_, ok := router.ParseRetryOn(v)
		return ok
	case "x-envoy-retry-grpc-on":
		_, ok := router.ParseRetryGrpcOn(v)
		return ok
	default:
		// x-envoy-upstream-rq-timeout-ms,
		// x-envoy-upstream-rq-per-try-timeout-ms, x-envoy-max-retries:
		// what absl::SimpleAtoi takes as an unsigned 64-bit integer.
		_, ok := parseHeaderUint(v)
		return ok
	}
}

// parseHeaderUint reads an unsigned decimal integer surrounded by
// optional white space and with an optional plus sign, as
// absl::SimpleAtoi does.
func parseHeaderUint(v string) (uint64, bool) {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "+")
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// expectedTimeout reads, with respect_expected_rq_timeout, the request's
// x-envoy-expected-rq-timeout-ms (which only an internal request keeps,
// the edge removing it from others) into the route timeout, as Envoy's
// finalTimeout does; it reports whether the header set it, which then
// wins over x-envoy-upstream-rq-timeout-ms.
func (s *stream) expectedTimeout() bool {
	v, ok := s.reqHeaders.Get("x-envoy-expected-rq-timeout-ms")
	if !ok {
		return false
	}
	ms, ok := parseHeaderUint(v)
	if !ok || ms > uint64(maxHeaderTimeout/time.Millisecond) {
		return false
	}
	s.rqTimeout = time.Duration(ms) * time.Millisecond
	return true
}

// maxHeaderTimeout bounds a timeout read from a header so that it fits a
// time.Duration.
const maxHeaderTimeout = time.Duration(1<<63 - 1)
