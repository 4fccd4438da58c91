package rbacengine

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// compilePermissionList compiles a list of permissions into an or;
// errors name the field from field ("permissions[2].header.name: ...").
func compilePermissionList(ps []*rbacv3.Permission, field string) (node, error) {
	n := node{kind: kindOr, kids: make([]node, 0, len(ps))}
	for i, p := range ps {
		k, err := compilePermission(p)
		if err != nil {
			return n, fmt.Errorf("%s[%d].%w", field, i, err)
		}
		n.kids = append(n.kids, k)
	}
	return n, nil
}

// compilePrincipalList compiles a list of principals into an or.
func compilePrincipalList(ps []*rbacv3.Principal, field string) (node, error) {
	n := node{kind: kindOr, kids: make([]node, 0, len(ps))}
	for i, p := range ps {
		k, err := compilePrincipal(p)
		if err != nil {
			return n, fmt.Errorf("%s[%d].%w", field, i, err)
		}
		n.kids = append(n.kids, k)
	}
	return n, nil
}

// compilePermission compiles one permission; errors name the field below
// it.
func compilePermission(p *rbacv3.Permission) (node, error) {
	switch r := p.GetRule().(type) {
	case *rbacv3.Permission_Any:
		if !r.Any {
			// Envoy's validation: any must be true.
			return node{}, errors.New("any: must be true")
		}
		return node{kind: kindAny}, nil
	case *rbacv3.Permission_AndRules:
		n, err := compilePermissionList(r.AndRules.GetRules(), "and_rules.rules")
		n.kind = kindAnd
		return n, err
	case *rbacv3.Permission_OrRules:
		return compilePermissionList(r.OrRules.GetRules(), "or_rules.rules")
	case *rbacv3.Permission_NotRule:
		k, err := compilePermission(r.NotRule)
		if err != nil {
			return node{}, fmt.Errorf("not_rule.%w", err)
		}
		return node{kind: kindNot, kids: []node{k}}, nil
	case *rbacv3.Permission_Header:
		return compileHeader(r.Header)
	case *rbacv3.Permission_UrlPath:
		return compilePath(r.UrlPath)
	case *rbacv3.Permission_DestinationIp:
		return compileIP(kindDestinationIP, r.DestinationIp, "destination_ip")
	case *rbacv3.Permission_DestinationPort:
		if r.DestinationPort > 65535 {
			return node{}, fmt.Errorf("destination_port: %d is not a port", r.DestinationPort)
		}
		return node{kind: kindDestinationPort, lo: r.DestinationPort}, nil
	case *rbacv3.Permission_DestinationPortRange:
		return compilePortRange(r.DestinationPortRange.GetStart(), r.DestinationPortRange.GetEnd())
	case *rbacv3.Permission_Metadata:
		//lint:ignore SA1019 deprecated for sourced_metadata, and still accepted (with Envoy's deprecation warning)
		return compileMetadata(r.Metadata, "metadata", rbacv3.MetadataSource_DYNAMIC)
	case *rbacv3.Permission_RequestedServerName:
		m, err := router.CompileStringMatcher(r.RequestedServerName)
		if err != nil {
			return node{}, fmt.Errorf("requested_server_name.%w", err)
		}
		return node{kind: kindServerName, str: m}, nil
	case *rbacv3.Permission_SourcedMetadata:
		return compileSourcedMetadata(r.SourcedMetadata)
	case *rbacv3.Permission_Matcher:
		n, err := compileMatcherPermission(r.Matcher)
		if err != nil {
			return node{}, fmt.Errorf("matcher.%w", err)
		}
		return n, nil
	case *rbacv3.Permission_UriTemplate:
		t, err := router.CompilePathMatchPolicy(r.UriTemplate)
		if err != nil {
			return node{}, fmt.Errorf("uri_template.%w", err)
		}
		return node{kind: kindURITemplate, tmpl: t}, nil
	}
	return node{}, errors.New("rule: one rule is required")
}

// compilePrincipal compiles one principal; errors name the field below
// it.
func compilePrincipal(p *rbacv3.Principal) (node, error) {
	switch id := p.GetIdentifier().(type) {
	case *rbacv3.Principal_Any:
		if !id.Any {
			return node{}, errors.New("any: must be true")
		}
		return node{kind: kindAny}, nil
	case *rbacv3.Principal_AndIds:
		n, err := compilePrincipalList(id.AndIds.GetIds(), "and_ids.ids")
		n.kind = kindAnd
		return n, err
	case *rbacv3.Principal_OrIds:
		return compilePrincipalList(id.OrIds.GetIds(), "or_ids.ids")
	case *rbacv3.Principal_NotId:
		k, err := compilePrincipal(id.NotId)
		if err != nil {
			return node{}, fmt.Errorf("not_id.%w", err)
		}
		return node{kind: kindNot, kids: []node{k}}, nil
	case *rbacv3.Principal_Authenticated_:
		n := node{kind: kindAuthenticated}
		if pn := id.Authenticated.GetPrincipalName(); pn != nil {
			m, err := router.CompileStringMatcher(pn)
			if err != nil {
				return node{}, fmt.Errorf("authenticated.principal_name.%w", err)
			}
			n.str, n.hasStr = m, true
		}
		return n, nil
	case *rbacv3.Principal_SourceIp:
		//lint:ignore SA1019 deprecated for direct_remote_ip and remote_ip, and still accepted (with Envoy's deprecation warning)
		return compileIP(kindSourceIP, id.SourceIp, "source_ip")
	case *rbacv3.Principal_DirectRemoteIp:
		return compileIP(kindDirectRemoteIP, id.DirectRemoteIp, "direct_remote_ip")
	case *rbacv3.Principal_RemoteIp:
		return compileIP(kindRemoteIP, id.RemoteIp, "remote_ip")
	case *rbacv3.Principal_Header:
		return compileHeader(id.Header)
	case *rbacv3.Principal_UrlPath:
		return compilePath(id.UrlPath)
	case *rbacv3.Principal_Metadata:
		//lint:ignore SA1019 deprecated for sourced_metadata, and still accepted (with Envoy's deprecation warning)
		return compileMetadata(id.Metadata, "metadata", rbacv3.MetadataSource_DYNAMIC)
	case *rbacv3.Principal_FilterState:
		return compileFilterState(id.FilterState)
	case *rbacv3.Principal_SourcedMetadata:
		return compileSourcedMetadata(id.SourcedMetadata)
	case *rbacv3.Principal_Custom:
		n, err := compileCustomPrincipal(id.Custom)
		if err != nil {
			return node{}, fmt.Errorf("custom.%w", err)
		}
		return n, nil
	}
	return node{}, errors.New("identifier: one identifier is required")
}

// compileHeader compiles a header permission or principal.
func compileHeader(h *routev3.HeaderMatcher) (node, error) {
	m, err := router.CompileHeader(h)
	if err != nil {
		return node{}, fmt.Errorf("header.%w", err)
	}
	return node{kind: kindHeader, header: m}, nil
}

// compilePath compiles a url_path permission or principal.
func compilePath(p *matcherv3.PathMatcher) (node, error) {
	sm := p.GetPath()
	if sm == nil {
		return node{}, errors.New("url_path.path: required")
	}
	m, err := router.CompileStringMatcher(sm)
	if err != nil {
		return node{}, fmt.Errorf("url_path.path.%w", err)
	}
	return node{kind: kindPath, str: m}, nil
}

// compileIP compiles an IP permission or principal.
func compileIP(k kind, r *corev3.CidrRange, field string) (node, error) {
	p, err := cidr.Parse(r)
	if err != nil {
		return node{}, fmt.Errorf("%s.%w", field, err)
	}
	return node{kind: k, prefix: p}, nil
}

// compilePortRange checks a destination_port_range as Envoy does.
func compilePortRange(start, end int32) (node, error) {
	switch {
	case start < 0 || start > 65536:
		return node{}, fmt.Errorf("destination_port_range.start: range start %d is out of bounds", start)
	case end < 0 || end > 65536:
		return node{}, fmt.Errorf("destination_port_range.end: range end %d is out of bounds", end)
	case start >= end:
		return node{}, fmt.Errorf("destination_port_range: range start %d cannot be greater or equal than range end %d", start, end)
	}
	return node{kind: kindDestinationPortRange, lo: uint32(start), hi: uint32(end)}, nil
}

// compileMetadata compiles a metadata matcher of the request's dynamic
// metadata or of its route's; errors name the field from field.
func compileMetadata(m *matcherv3.MetadataMatcher, field string, source rbacv3.MetadataSource) (node, error) {
	mm, err := filter.CompileMetadataMatcher(m)
	if err != nil {
		return node{}, fmt.Errorf("%s.%w", field, err)
	}
	k := kindMetadata
	if source == rbacv3.MetadataSource_ROUTE {
		k = kindRouteMetadata
	}
	return node{kind: k, meta: mm}, nil
}

// compileFilterState compiles a filter_state principal: a string_match
// of the object's string form, or an address_match of an address object.
func compileFilterState(fs *matcherv3.FilterStateMatcher) (node, error) {
	if fs.GetKey() == "" {
		return node{}, errors.New("filter_state.key: must be set")
	}
	if am := fs.GetAddressMatch(); am != nil {
		a, err := filterstate.CompileAddressMatch(am)
		if err != nil {
			return node{}, fmt.Errorf("filter_state.address_match.%w", err)
		}
		return node{kind: kindFilterState, key: fs.GetKey(), addr: a}, nil
	}
	sm := fs.GetStringMatch()
	if sm == nil {
		return node{}, errors.New("filter_state.string_match: required")
	}
	m, err := router.CompileStringMatcher(sm)
	if err != nil {
		return node{}, fmt.Errorf("filter_state.string_match.%w", err)
	}
	return node{kind: kindFilterState, key: fs.GetKey(), str: m}, nil
}

// compileSourcedMetadata compiles a sourced_metadata permission or
// principal.
func compileSourcedMetadata(s *rbacv3.SourcedMetadata) (node, error) {
	if s.GetMetadataMatcher() == nil {
		return node{}, errors.New("sourced_metadata.metadata_matcher: required")
	}
	return compileMetadata(s.GetMetadataMatcher(), "sourced_metadata.metadata_matcher", s.GetMetadataSource())
}
