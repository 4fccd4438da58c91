package router

import (
	"errors"
	"fmt"
	"strings"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// MirrorPolicy is one compiled request_mirror_policies entry: which
// requests are copied to which cluster (shadowing), and how the copy's
// headers differ from the request's.
type MirrorPolicy struct {
	// Cluster is the shadow cluster; "" when ClusterHeader names it.
	Cluster string
	// ClusterHeader (lower case) is the request header whose first
	// value names the shadow cluster; a request without it is not
	// mirrored.
	ClusterHeader string
	// fraction is runtime_fraction: the share of requests mirrored,
	// every request when the policy sets none.
	fraction runtime.Fraction
	// hostSuffix: "-shadow" is appended to the copy's host (unless
	// disable_shadow_host_suffix_append or host_rewrite_literal).
	hostSuffix bool
	// hostRewrite is host_rewrite_literal, "" for none.
	hostRewrite string
	// mutations are request_headers_mutations, applied in order.
	mutations HeaderMutations
	// TraceSampled is trace_sampled: whether the copy's span is
	// sampled; nil inherits the request's decision.
	TraceSampled *bool
}

// everyRequest is the share of a policy without runtime_fraction, as in
// Envoy: 100% under no runtime key.
var everyRequest = runtime.Fraction{Numerator: 100, Denominator: 100}

// compileMirrorPolicies compiles a request_mirror_policies list; errors
// name the field below it ("[1].cluster: ...").
func compileMirrorPolicies(ps []*routev3.RouteAction_RequestMirrorPolicy) ([]*MirrorPolicy, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make([]*MirrorPolicy, 0, len(ps))
	for i, p := range ps {
		mp, err := compileMirrorPolicy(p)
		if err != nil {
			return nil, fmt.Errorf("[%d].%w", i, err)
		}
		out = append(out, mp)
	}
	return out, nil
}

func compileMirrorPolicy(p *routev3.RouteAction_RequestMirrorPolicy) (*MirrorPolicy, error) {
	mp := &MirrorPolicy{
		Cluster:       p.GetCluster(),
		ClusterHeader: strings.ToLower(p.GetClusterHeader()),
		fraction:      everyRequest,
		hostRewrite:   p.GetHostRewriteLiteral(),
	}
	// Envoy's checks, with its words.
	switch {
	case mp.Cluster != "" && mp.ClusterHeader != "":
		return nil, fmt.Errorf("cluster: only one of cluster %q or cluster_header %q in request mirror policy can be specified", mp.Cluster, p.GetClusterHeader())
	case mp.Cluster == "" && mp.ClusterHeader == "":
		return nil, errors.New("cluster: exactly one of cluster or cluster_header in request mirror policy need to be specified")
	}
	if f := p.GetRuntimeFraction(); f != nil {
		fr, err := runtime.FractionOf(f.GetRuntimeKey(), f.GetDefaultValue())
		if err != nil {
			return nil, fmt.Errorf("runtime_fraction.default_value.%w", err)
		}
		mp.fraction = fr
	}
	mp.hostSuffix = !p.GetDisableShadowHostSuffixAppend() && mp.hostRewrite == ""
	if ts := p.GetTraceSampled(); ts != nil {
		v := ts.GetValue()
		mp.TraceSampled = &v
	}
	ms, err := CompileHeaderMutations(p.GetRequestHeadersMutations())
	if err != nil {
		return nil, fmt.Errorf("request_headers_mutations%w", err)
	}
	mp.mutations = ms
	return mp, nil
}

// mirrorMutation is one request_headers_mutations entry: header edits
// (remove, append) as a level of their own, or the removal of the headers
// whose name matches (remove_on_match).
type mirrorMutation struct {
	ops   *headerOps
	match *stringMatcher
}

// HeaderMatchRemover is a header map that can remove the headers whose
// name a predicate accepts, for remove_on_match.
type HeaderMatchRemover interface {
	DelMatching(match func(name string) bool)
}

// compileMirrorMutation compiles one HeaderMutation.
func compileMirrorMutation(m *mutationv3.HeaderMutation) (mirrorMutation, error) {
	switch a := m.GetAction().(type) {
	case *mutationv3.HeaderMutation_Remove:
		ops, err := compileHeaderOps(nil, []string{a.Remove}, "", "remove")
		if err != nil {
			// "remove[0]: ..." names an entry the field does not
			// have.
			return mirrorMutation{}, errors.New(strings.Replace(err.Error(), "remove[0]", "remove", 1))
		}
		return mirrorMutation{ops: ops}, nil
	case *mutationv3.HeaderMutation_Append:
		ops, err := compileHeaderOps([]*corev3.HeaderValueOption{a.Append}, nil, "append", "")
		if err != nil {
			return mirrorMutation{}, errors.New(strings.Replace(err.Error(), "append[0]", "append", 1))
		}
		return mirrorMutation{ops: ops}, nil
	case *mutationv3.HeaderMutation_RemoveOnMatch_:
		sm, err := compileStringMatcher(a.RemoveOnMatch.GetKeyMatcher())
		if err != nil {
			return mirrorMutation{}, fmt.Errorf("remove_on_match.key_matcher.%w", err)
		}
		return mirrorMutation{match: &sm}, nil
	case nil:
		return mirrorMutation{}, errors.New("action: one of remove, append or remove_on_match is required")
	default:
		return mirrorMutation{}, fmt.Errorf("action: %s is not supported by Outrigger", oneofName(m.ProtoReflect(), "action"))
	}
}

// Mirrors reports whether p applies to a request drawn random, as Envoy's
// shouldShadow decides it (runtime_fraction under its runtime key).
func (p *MirrorPolicy) Mirrors(rt runtime.Reader, random uint64) bool {
	return p.fraction.Enabled(rt, random)
}

// ClusterFor is the shadow cluster of a request: Cluster, or the first
// value of ClusterHeader ("" when the request has none: no shadow).
func (p *MirrorPolicy) ClusterFor(h HeaderGetter) string {
	if p.Cluster != "" {
		return p.Cluster
	}
	v, _ := h.Get(p.ClusterHeader)
	// Several values come joined: only the first counts, as in Envoy.
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// ShadowAuthority is the :authority a copy of a request to host carries:
// host_rewrite_literal when set, else host with "-shadow" appended to its
// name (before the port), unless disable_shadow_host_suffix_append.
func (p *MirrorPolicy) ShadowAuthority(host string) string {
	switch {
	case p.hostRewrite != "":
		return p.hostRewrite
	case p.hostSuffix:
		return ShadowHost(host)
	}
	return host
}

// MutateHeaders applies request_headers_mutations to a copy's headers, in
// order; e supplies the values of % operators. remove_on_match needs h
// to be a HeaderMatchRemover too.
func (p *MirrorPolicy) MutateHeaders(h HeaderEditor, e *accesslog.Entry) {
	p.mutations.Apply(h, e)
}

// ShadowHost appends "-shadow" to a host's name, before its port when it
// has one, as Envoy's shadow writer does: "cluster1:8080" becomes
// "cluster1-shadow:8080". Like Envoy, which splits the host on ':', a
// host that is not exactly a name and a port (an IPv6 literal) gets the
// suffix at its end. A request without a host keeps none.
func ShadowHost(host string) string {
	if host == "" {
		return ""
	}
	i := strings.IndexByte(host, ':')
	if i <= 0 || i == len(host)-1 || strings.IndexByte(host[i+1:], ':') >= 0 {
		return host + "-shadow"
	}
	return host[:i] + "-shadow" + host[i:]
}
