package router

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// RateLimit is one compiled rate_limits entry of a route or a virtual
// host: the actions that turn a request into one rate limit descriptor,
// which the rate limit filters match against their limits (the local
// filter) or send to the rate limit service (the global one).
type RateLimit struct {
	// Stage is the entry's stage (default 0); a filter only uses the
	// entries of its own stage.
	Stage uint32
	// DisableKey is the entry's disable_key; the local rate limit filter
	// skips entries that set one, as Envoy's does, and the global one
	// reads ratelimit.<disable_key>.http_filter_enabled.
	DisableKey string
	actions    []rateLimitAction
	// limit is the entry's limit override, nil without one.
	limit *limitOverride
	// HitsAddend, when set, is the number of hits the descriptor counts
	// (hits_addend); ApplyOnStreamDone makes the global filter send the
	// descriptor when the stream ends rather than before routing. The
	// global rate limit filter reads both (in a route's, a virtual host's
	// or its per-route entries); the local one takes (or, with
	// is_negative_hits, gives back) HitsAddend tokens and reads every
	// entry at the request.
	HitsAddend        *HitsAddend
	ApplyOnStreamDone bool
	// formats records that a descriptor value is a format (Formats).
	formats bool
	// XRateLimit is the entry's x_ratelimit_option: whether its
	// descriptor's status may make the x-ratelimit headers, in place of
	// the filter's enable_x_ratelimit_headers (UNSPECIFIED: the filter's).
	XRateLimit routev3.RateLimit_XRateLimitOption
}

// DescriptorEntry is one key and value of a rate limit descriptor.
type DescriptorEntry struct {
	Key, Value string
}

// DescriptorInput is what the actions read of a request.
type DescriptorInput struct {
	Request *Request
	// RemoteIP is the downstream address, without port; "" when it is
	// not an IP address.
	RemoteIP string
	// Cluster is the route's upstream cluster (destination_cluster);
	// LocalCluster the proxy's own service cluster, the bootstrap's
	// node.cluster (source_cluster).
	Cluster, LocalCluster string
	// DynamicMetadata is the request's dynamic metadata and
	// RouteMetadata its route's, for the metadata actions; nil for none.
	DynamicMetadata, RouteMetadata *corev3.Metadata
	// Entry is what formatted descriptor values read of the request
	// (set when RateLimit.Formats says an entry needs it); FormatValues
	// is the runtime feature FormatDescriptorValuesKey.
	Entry        *accesslog.Entry
	FormatValues bool
	// Attributes fills the stream's attributes for the extension
	// action's CEL expressions; nil leaves them absent.
	Attributes CELAttributes
}

// LimitOverride is a descriptor's limit override, sent to the rate limit
// service in place of its configured limit.
type LimitOverride struct {
	RequestsPerUnit uint32
	Unit            typev3.RateLimitUnit
}

// actionKind is what a rate limit action reads.
type actionKind uint8

const (
	actionGenericKey actionKind = iota
	actionRequestHeaders
	actionRemoteAddress
	actionDestinationCluster
	actionHeaderValueMatch
	actionSourceCluster
	actionMaskedRemoteAddress
	actionMetadata
	actionQueryParameters
	actionQueryValueMatch
	actionRemoteAddressMatch
	actionExpr
)

// rateLimitAction is one compiled RateLimit.Action.
type rateLimitAction struct {
	kind actionKind
	// key is the entry's descriptor key; value the descriptor value of
	// generic_key, header_value_match, query_parameter_value_match and
	// remote_address_match.
	key   string
	value descriptorValue
	// header is the request header read by request_headers, or the
	// query parameter read by query_parameters.
	header       string
	skipIfAbsent bool
	// match and expectMatch are header_value_match's headers and whether
	// they must match (true) or not; query holds query_parameter_value_match's
	// matchers, which expectMatch applies to in the same way.
	match       HeaderMatch
	query       []queryMatcher
	expectMatch bool
	// v4Mask and v6Mask are masked_remote_address's prefix lengths.
	v4Mask, v6Mask int
	// ranges are remote_address_match's CIDR ranges; expectMatch is
	// false with its invert_match.
	ranges []netip.Prefix
	// meta is the metadata action's key; metaRoute reads the route's
	// metadata rather than the request's dynamic metadata; def is its
	// default_value.
	meta      metadataPath
	metaRoute bool
	def       string
	// expr is the extension action's CEL descriptor.
	expr *exprDescriptor
}

// limitOverride is a compiled RateLimit.Override: a fixed limit, or one
// read from the request's dynamic metadata.
type limitOverride struct {
	fixed LimitOverride
	// dynamic, when set, names the metadata struct holding
	// requests_per_unit and unit.
	dynamic *metadataPath
}

// metadataPath locates a value in metadata: a filter_metadata namespace
// and a path of struct keys below it (a MetadataKey).
type metadataPath struct {
	namespace string
	path      []string
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
	c := &RateLimit{Stage: rl.GetStage().GetValue(), DisableKey: rl.GetDisableKey(), ApplyOnStreamDone: rl.GetApplyOnStreamDone(),
		XRateLimit: rl.GetXRatelimitOption()}
	if _, ok := routev3.RateLimit_XRateLimitOption_name[int32(c.XRateLimit)]; !ok {
		return nil, fmt.Errorf("x_ratelimit_option: unknown option %d", c.XRateLimit)
	}
	if h := rl.GetHitsAddend(); h != nil {
		var err error
		if c.HitsAddend, err = compileHitsAddend(h); err != nil {
			return nil, err
		}
	}
	if len(rl.GetActions()) == 0 {
		return nil, errors.New("actions: at least one action is required")
	}
	for i, a := range rl.GetActions() {
		act, err := compileRateLimitAction(a)
		if err != nil {
			return nil, fmt.Errorf("actions[%d].%w", i, err)
		}
		c.actions = append(c.actions, act)
		c.formats = c.formats || act.value.formats()
	}
	if l := rl.GetLimit(); l != nil {
		lo, err := compileLimitOverride(l)
		if err != nil {
			return nil, fmt.Errorf("limit.%w", err)
		}
		c.limit = lo
	}
	return c, nil
}

// Formats reports whether a descriptor value of the entry is a format,
// which reads DescriptorInput.Entry.
func (rl *RateLimit) Formats() bool { return rl.formats }

// HasLimit reports whether the entry has a limit override.
func (rl *RateLimit) HasLimit() bool { return rl.limit != nil }

// compileRateLimitAction compiles one action, with Envoy's default
// descriptor keys.
func compileRateLimitAction(a *routev3.RateLimit_Action) (rateLimitAction, error) {
	switch s := a.GetActionSpecifier().(type) {
	case *routev3.RateLimit_Action_GenericKey_:
		key := s.GenericKey.GetDescriptorKey()
		if key == "" {
			key = "generic_key"
		}
		v, err := compileDescriptorValue(s.GenericKey.GetDescriptorValue(), s.GenericKey.GetDefaultValue(), true)
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("generic_key.%w", err)
		}
		return rateLimitAction{kind: actionGenericKey, key: key, value: v}, nil
	case *routev3.RateLimit_Action_RequestHeaders_:
		rh := s.RequestHeaders
		if rh.GetHeaderName() == "" {
			return rateLimitAction{}, errors.New("request_headers.header_name: must be set")
		}
		return rateLimitAction{kind: actionRequestHeaders, key: rh.GetDescriptorKey(),
			header: strings.ToLower(rh.GetHeaderName()), skipIfAbsent: rh.GetSkipIfAbsent()}, nil
	case *routev3.RateLimit_Action_QueryParameters_:
		qp := s.QueryParameters
		if qp.GetQueryParameterName() == "" {
			return rateLimitAction{}, errors.New("query_parameters.query_parameter_name: must be set")
		}
		if qp.GetDescriptorKey() == "" {
			return rateLimitAction{}, errors.New("query_parameters.descriptor_key: must be set")
		}
		return rateLimitAction{kind: actionQueryParameters, key: qp.GetDescriptorKey(),
			header: qp.GetQueryParameterName(), skipIfAbsent: qp.GetSkipIfAbsent()}, nil
	case *routev3.RateLimit_Action_QueryParameterValueMatch_:
		return compileQueryValueMatch(s.QueryParameterValueMatch)
	case *routev3.RateLimit_Action_RemoteAddress_:
		return rateLimitAction{kind: actionRemoteAddress, key: "remote_address"}, nil
	case *routev3.RateLimit_Action_RemoteAddressMatch_:
		return compileRemoteAddressMatch(s.RemoteAddressMatch)
	case *routev3.RateLimit_Action_DestinationCluster_:
		return rateLimitAction{kind: actionDestinationCluster, key: "destination_cluster"}, nil
	case *routev3.RateLimit_Action_SourceCluster_:
		return rateLimitAction{kind: actionSourceCluster, key: "source_cluster"}, nil
	case *routev3.RateLimit_Action_MaskedRemoteAddress_:
		m := s.MaskedRemoteAddress
		act := rateLimitAction{kind: actionMaskedRemoteAddress, key: "masked_remote_address", v4Mask: 32, v6Mask: 128}
		if v := m.GetV4PrefixMaskLen(); v != nil {
			if v.GetValue() > 32 {
				return rateLimitAction{}, errors.New("masked_remote_address.v4_prefix_mask_len: must be at most 32")
			}
			act.v4Mask = int(v.GetValue())
		}
		if v := m.GetV6PrefixMaskLen(); v != nil {
			if v.GetValue() > 128 {
				return rateLimitAction{}, errors.New("masked_remote_address.v6_prefix_mask_len: must be at most 128")
			}
			act.v6Mask = int(v.GetValue())
		}
		return act, nil
	case *routev3.RateLimit_Action_Metadata:
		m := s.Metadata
		act := rateLimitAction{kind: actionMetadata, key: m.GetDescriptorKey(), def: m.GetDefaultValue(), skipIfAbsent: m.GetSkipIfAbsent()}
		switch m.GetSource() {
		case routev3.RateLimit_Action_MetaData_DYNAMIC:
		case routev3.RateLimit_Action_MetaData_ROUTE_ENTRY:
			act.metaRoute = true
		default:
			return rateLimitAction{}, fmt.Errorf("metadata.source: unknown source %d", m.GetSource())
		}
		p, err := compileMetadataPath(m.GetMetadataKey())
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("metadata.%w", err)
		}
		act.meta = p
		return act, nil
	case *routev3.RateLimit_Action_DynamicMetadata:
		//lint:ignore SA1019 Envoy still reads the deprecated dynamic_metadata action
		m := s.DynamicMetadata
		p, err := compileMetadataPath(m.GetMetadataKey())
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("dynamic_metadata.%w", err)
		}
		return rateLimitAction{kind: actionMetadata, key: m.GetDescriptorKey(), def: m.GetDefaultValue(), meta: p}, nil
	case *routev3.RateLimit_Action_HeaderValueMatch_:
		hv := s.HeaderValueMatch
		v, err := compileDescriptorValue(hv.GetDescriptorValue(), hv.GetDefaultValue(), true)
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("header_value_match.%w", err)
		}
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
		return rateLimitAction{kind: actionHeaderValueMatch, key: key, value: v, match: m, expectMatch: expect}, nil
	case *routev3.RateLimit_Action_Extension:
		return compileExtensionAction(s.Extension)
	case nil:
		return rateLimitAction{}, errors.New("action_specifier: one action is required")
	default:
		return rateLimitAction{}, fmt.Errorf("%s: not supported by Outrigger", oneofName(a.ProtoReflect(), "action_specifier"))
	}
}

// compileQueryValueMatch compiles a query_parameter_value_match action.
func compileQueryValueMatch(qv *routev3.RateLimit_Action_QueryParameterValueMatch) (rateLimitAction, error) {
	if len(qv.GetQueryParameters()) == 0 {
		return rateLimitAction{}, errors.New("query_parameter_value_match.query_parameters: at least one matcher is required")
	}
	v, err := compileDescriptorValue(qv.GetDescriptorValue(), qv.GetDefaultValue(), true)
	if err != nil {
		return rateLimitAction{}, fmt.Errorf("query_parameter_value_match.%w", err)
	}
	act := rateLimitAction{kind: actionQueryValueMatch, key: qv.GetDescriptorKey(), value: v, expectMatch: true}
	if act.key == "" {
		act.key = "query_match"
	}
	if v := qv.GetExpectMatch(); v != nil {
		act.expectMatch = v.GetValue()
	}
	for i, qm := range qv.GetQueryParameters() {
		m, err := compileQueryMatcher(qm)
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("query_parameter_value_match.query_parameters[%d].%w", i, err)
		}
		act.query = append(act.query, m)
	}
	return act, nil
}

// compileRemoteAddressMatch compiles a remote_address_match action. Its
// descriptor_value is a format, as in Envoy (always, unlike the other
// actions'), with default_value for an empty result.
func compileRemoteAddressMatch(ra *routev3.RateLimit_Action_RemoteAddressMatch) (rateLimitAction, error) {
	if ra.GetDescriptorValue() == "" {
		return rateLimitAction{}, errors.New("remote_address_match.descriptor_value: must be set")
	}
	v, err := compileDescriptorValue(ra.GetDescriptorValue(), ra.GetDefaultValue(), false)
	if err != nil {
		return rateLimitAction{}, fmt.Errorf("remote_address_match.%w", err)
	}
	act := rateLimitAction{kind: actionRemoteAddressMatch, key: ra.GetDescriptorKey(), value: v, expectMatch: true}
	if act.key == "" {
		act.key = "remote_address_match"
	}
	am := ra.GetAddressMatcher()
	if am == nil {
		return rateLimitAction{}, errors.New("remote_address_match.address_matcher: must be set")
	}
	act.expectMatch = !am.GetInvertMatch()
	for i, r := range am.GetRanges() {
		ip, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil || ip.Zone() != "" {
			return rateLimitAction{}, fmt.Errorf("remote_address_match.address_matcher.ranges[%d].address_prefix: %q is not an IP address", i, r.GetAddressPrefix())
		}
		p, err := ip.Prefix(int(r.GetPrefixLen().GetValue()))
		if err != nil {
			return rateLimitAction{}, fmt.Errorf("remote_address_match.address_matcher.ranges[%d].prefix_len: %d is longer than the address", i, r.GetPrefixLen().GetValue())
		}
		act.ranges = append(act.ranges, p)
	}
	return act, nil
}

// compileMetadataPath compiles a MetadataKey; errors name the field.
func compileMetadataPath(k *metadatav3.MetadataKey) (metadataPath, error) {
	if k.GetKey() == "" {
		return metadataPath{}, errors.New("metadata_key.key: must be set")
	}
	if len(k.GetPath()) == 0 {
		return metadataPath{}, errors.New("metadata_key.path: must have at least one segment")
	}
	p := metadataPath{namespace: k.GetKey()}
	for i, seg := range k.GetPath() {
		if seg.GetKey() == "" {
			return metadataPath{}, fmt.Errorf("metadata_key.path[%d].key: must be set", i)
		}
		p.path = append(p.path, seg.GetKey())
	}
	return p, nil
}

// compileLimitOverride compiles a RateLimit.Override.
func compileLimitOverride(o *routev3.RateLimit_Override) (*limitOverride, error) {
	switch s := o.GetOverrideSpecifier().(type) {
	case *routev3.RateLimit_Override_RateLimit:
		return &limitOverride{fixed: LimitOverride{RequestsPerUnit: s.RateLimit.GetRequestsPerUnit(), Unit: s.RateLimit.GetUnit()}}, nil
	case *routev3.RateLimit_Override_DynamicMetadata_:
		p, err := compileMetadataPath(s.DynamicMetadata.GetMetadataKey())
		if err != nil {
			return nil, fmt.Errorf("dynamic_metadata.%w", err)
		}
		return &limitOverride{dynamic: &p}, nil
	}
	return nil, errors.New("override_specifier: one of dynamic_metadata or rate_limit is required")
}

// value looks the path up in md; nil when it leads nowhere.
func (p *metadataPath) value(md *corev3.Metadata) *structpb.Value {
	s := md.GetFilterMetadata()[p.namespace]
	if s == nil {
		return nil
	}
	var v *structpb.Value
	for i, key := range p.path {
		v = s.GetFields()[key]
		if v == nil {
			return nil
		}
		if i < len(p.path)-1 {
			if s = v.GetStructValue(); s == nil {
				return nil
			}
		}
	}
	return v
}

// Limit returns the entry's limit override for a request, as Envoy's
// populateOverride: the fixed one, or the one in the request's dynamic
// metadata (a struct with a number requests_per_unit and a unit name),
// which a request without it does not have.
func (rl *RateLimit) Limit(dynamic *corev3.Metadata) (LimitOverride, bool) {
	l := rl.limit
	if l == nil {
		return LimitOverride{}, false
	}
	if l.dynamic == nil {
		return l.fixed, true
	}
	fields := l.dynamic.value(dynamic).GetStructValue().GetFields()
	n, ok := fields["requests_per_unit"].GetKind().(*structpb.Value_NumberValue)
	if !ok {
		return LimitOverride{}, false
	}
	u, ok := fields["unit"].GetKind().(*structpb.Value_StringValue)
	if !ok {
		return LimitOverride{}, false
	}
	unit, ok := typev3.RateLimitUnit_value[u.StringValue]
	if !ok {
		return LimitOverride{}, false
	}
	return LimitOverride{RequestsPerUnit: uint32(n.NumberValue), Unit: typev3.RateLimitUnit(unit)}, true
}

// AppendDescriptor appends the descriptor of a request to dst: one entry
// per action, in order, as Envoy's populateDescriptors makes it. ok is
// false when an action has no entry for the request (a missing header
// without skip_if_absent, a header_value_match that does not match): the
// request then has no descriptor from this entry, and dst comes back as
// it was.
func (rl *RateLimit) AppendDescriptor(dst []DescriptorEntry, in *DescriptorInput) (_ []DescriptorEntry, ok bool) {
	n := len(dst)
	for i := range rl.actions {
		a := &rl.actions[i]
		switch a.kind {
		case actionGenericKey:
			v, ok := a.value.value(in)
			if !ok {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionRequestHeaders:
			v, present := in.Request.header(a.header)
			if !present {
				if a.skipIfAbsent {
					continue
				}
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionQueryParameters:
			v, present := decodedQueryValue(query(in.Request.Path), a.header)
			if !present {
				if a.skipIfAbsent {
					continue
				}
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionQueryValueMatch:
			if a.queryMatches(query(in.Request.Path)) != a.expectMatch {
				return dst[:n], false
			}
			v, ok := a.value.value(in)
			if !ok {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionRemoteAddress:
			if in.RemoteIP == "" {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, in.RemoteIP})
		case actionRemoteAddressMatch:
			ip, err := netip.ParseAddr(in.RemoteIP)
			if err != nil || a.inRanges(ip.Unmap()) != a.expectMatch {
				return dst[:n], false
			}
			v, ok := a.value.value(in)
			if !ok {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionMaskedRemoteAddress:
			v, ok := a.masked(in.RemoteIP)
			if !ok {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionDestinationCluster:
			dst = append(dst, DescriptorEntry{a.key, in.Cluster})
		case actionSourceCluster:
			dst = append(dst, DescriptorEntry{a.key, in.LocalCluster})
		case actionHeaderValueMatch:
			if a.match.Matches(in.Request) != a.expectMatch {
				return dst[:n], false
			}
			v, ok := a.value.value(in)
			if !ok {
				return dst[:n], false
			}
			dst = append(dst, DescriptorEntry{a.key, v})
		case actionExpr:
			v, skip, ok := a.expr.entry(in)
			switch {
			case ok:
				dst = append(dst, DescriptorEntry{a.key, v})
			case !skip:
				return dst[:n], false
			}
		case actionMetadata:
			md := in.DynamicMetadata
			if a.metaRoute {
				md = in.RouteMetadata
			}
			// Only a string counts, as in Envoy.
			v := a.meta.value(md).GetStringValue()
			switch {
			case v != "":
				dst = append(dst, DescriptorEntry{a.key, v})
			case a.def != "":
				dst = append(dst, DescriptorEntry{a.key, a.def})
			case !a.skipIfAbsent:
				return dst[:n], false
			}
		}
	}
	return dst, true
}

// masked is the remote address masked to the action's prefix length, in
// CIDR form ("192.168.1.0/24").
func (a *rateLimitAction) masked(remote string) (string, bool) {
	ip, err := netip.ParseAddr(remote)
	if err != nil {
		return "", false
	}
	ip = ip.Unmap()
	bits := a.v4Mask
	if ip.Is6() {
		bits = a.v6Mask
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return "", false
	}
	return p.String(), true
}

// queryMatches reports whether every query_parameter_value_match matcher
// accepts the raw query string.
func (a *rateLimitAction) queryMatches(q string) bool {
	for i := range a.query {
		if !a.query[i].matches(q) {
			return false
		}
	}
	return true
}

// decodedQueryValue is the first value of the parameter name in the raw
// query string, keys and values percent-decoded (not '+'), as Envoy's
// parseAndDecodeQueryString reads it (unlike the hash policies' undecoded
// queryValue); a parameter without '=' has the empty value.
func decodedQueryValue(q, name string) (string, bool) {
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		key, value, _ := strings.Cut(pair, "=")
		if !decodedEquals(key, name) {
			continue
		}
		if strings.IndexByte(value, '%') < 0 {
			return value, true
		}
		return string(percentDecode(nil, value)), true
	}
	return "", false
}

// inRanges reports whether ip is in one of remote_address_match's ranges.
func (a *rateLimitAction) inRanges(ip netip.Addr) bool {
	for _, p := range a.ranges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
