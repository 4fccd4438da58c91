package router

import (
	"errors"
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// RateLimit is one compiled rate_limits entry of a route or a virtual
// host: the actions that turn a request into one rate limit descriptor,
// which the rate limit filters match against their limits.
type RateLimit struct {
	// Stage is the entry's stage (default 0); a filter only uses the
	// entries of its own stage.
	Stage uint32
	// DisableKey is the entry's disable_key; the local rate limit filter
	// skips entries that set one, as Envoy's does.
	DisableKey string
	actions    []rateLimitAction
}

// DescriptorEntry is one key and value of a rate limit descriptor.
type DescriptorEntry struct {
	Key, Value string
}

// actionKind is what a rate limit action reads.
type actionKind uint8

const (
	actionGenericKey actionKind = iota
	actionRequestHeaders
	actionRemoteAddress
	actionDestinationCluster
	actionHeaderValueMatch
)

// rateLimitAction is one compiled RateLimit.Action.
type rateLimitAction struct {
	kind actionKind
	// key and value are the entry's descriptor key and, for generic_key
	// and header_value_match, its value.
	key, value string
	// header is the request header read by request_headers.
	header       string
	skipIfAbsent bool
	// match and expectMatch are header_value_match's headers and whether
	// they must match (true) or not.
	match       HeaderMatch
	expectMatch bool
}

// compileRateLimits compiles a rate_limits list; errors name the field
// below the list: "[0].actions[1].request_headers.header_name: ...".
func compileRateLimits(rls []*routev3.RateLimit) ([]*RateLimit, error) {
	var out []*RateLimit
	for i, rl := range rls {
		c, err := CompileRateLimit(rl)
		if err != nil {
			return nil, fmt.Errorf("[%d].%w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// CompileRateLimit compiles one RateLimit (route, virtual host, or a rate
// limit filter's own rate_limits); errors name the field below it.
func CompileRateLimit(rl *routev3.RateLimit) (*RateLimit, error) {
	c := &RateLimit{Stage: rl.GetStage().GetValue(), DisableKey: rl.GetDisableKey()}
	if len(rl.GetActions()) == 0 {
		return nil, errors.New("actions: at least one action is required")
	}
	for i, a := range rl.GetActions() {
		act, err := compileRateLimitAction(a)
		if err != nil {
			return nil, fmt.Errorf("actions[%d].%w", i, err)
		}
		c.actions = append(c.actions, act)
	}
	return c, nil
}

// compileRateLimitAction compiles one action, with Envoy's default
// descriptor keys.
func compileRateLimitAction(a *routev3.RateLimit_Action) (rateLimitAction, error) {
	switch s := a.GetActionSpecifier().(type) {
	case *routev3.RateLimit_Action_GenericKey_:
		key := s.GenericKey.GetDescriptorKey()
		if key == "" {
			key = "generic_key"
		}
		return rateLimitAction{kind: actionGenericKey, key: key, value: s.GenericKey.GetDescriptorValue()}, nil
	case *routev3.RateLimit_Action_RequestHeaders_:
		rh := s.RequestHeaders
		if rh.GetHeaderName() == "" {
			return rateLimitAction{}, errors.New("request_headers.header_name: must be set")
		}
		return rateLimitAction{kind: actionRequestHeaders, key: rh.GetDescriptorKey(),
			header: strings.ToLower(rh.GetHeaderName()), skipIfAbsent: rh.GetSkipIfAbsent()}, nil
	case *routev3.RateLimit_Action_RemoteAddress_:
		return rateLimitAction{kind: actionRemoteAddress, key: "remote_address"}, nil
	case *routev3.RateLimit_Action_DestinationCluster_:
		return rateLimitAction{kind: actionDestinationCluster, key: "destination_cluster"}, nil
	case *routev3.RateLimit_Action_HeaderValueMatch_:
		hv := s.HeaderValueMatch
		m, err := CompileHeaderMatch(hv.GetHeaders())
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("header_value_match.%w", err)
		}
		key := hv.GetDescriptorKey()
		if key == "" {
			key = "header_match"
		}
		expect := true
		if v := hv.GetExpectMatch(); v != nil {
			expect = v.GetValue()
		}
		return rateLimitAction{kind: actionHeaderValueMatch, key: key, value: hv.GetDescriptorValue(), match: m, expectMatch: expect}, nil
	case nil:
		return rateLimitAction{}, errors.New("action_specifier: one action is required")
	default:
		return rateLimitAction{}, fmt.Errorf("%s: not supported by Outrigger", oneofName(a.ProtoReflect(), "action_specifier"))
	}
}

// AppendDescriptor appends the descriptor of a request to dst: one entry
// per action, in order, as Envoy's populateDescriptors makes it. remoteIP
// is the downstream address and cluster the route's upstream cluster. ok
// is false when an action has no entry for the request (a missing header
// without skip_if_absent, a header_value_match that does not match): the
// request then has no descriptor from this entry, and dst comes back as
// it was.
func (rl *RateLimit) AppendDescriptor(dst []DescriptorEntry, req *Request, remoteIP, cluster string) (_ []DescriptorEntry, ok bool) {
	n := len(dst)
	for i := range rl.actions {
		a := &rl.actions[i]
		switch a.kind {
		case actionGenericKey:
			dst = append(dst, DescriptorEntry{a.key, a.value})
		case actionRequestHeaders:
			v, present := req.header(a.header)
			if !present {
				if a.skipIfAbsent {
					continue
				}
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionRemoteAddress:
			if remoteIP == "" {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, remoteIP})
		case actionDestinationCluster:
			dst = append(dst, DescriptorEntry{a.key, cluster})
		case actionHeaderValueMatch:
			if a.match.Matches(req) != a.expectMatch {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, a.value})
		}
	}
	return dst, true
}
