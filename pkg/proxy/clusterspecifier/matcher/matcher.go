// Package matcher is the matcher cluster specifier plugin
// (envoy.router.cluster_specifier_plugin.matcher): the xDS unified
// matcher cluster_matcher (package httpmatch, with Envoy's HTTP inputs)
// picks each request's cluster, its actions naming clusters
// (envoy.extensions.router.cluster_specifiers.matcher.v3.ClusterAction).
// As in Envoy, the matcher runs on the request headers; a request it does
// not match, or whose match needs the response, has no cluster and is
// answered as a cluster not found (503 NC, or the route's
// cluster_not_found_response_code).
package matcher

import (
	"errors"
	"fmt"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the plugin's name in the proxy. spelling.
const Name = "proxy.router.cluster_specifier_plugin.matcher"

// Factory compiles the plugin.
type Factory struct{}

var _ clusterspecifier.Factory = Factory{}

// Compile implements clusterspecifier.Factory. Errors name the field
// below the MatcherClusterSpecifier.
func (Factory) Compile(m proto.Message, _ clusterspecifier.Context) (router.ClusterSpecifier, error) {
	c, ok := m.(*matcherv3.MatcherClusterSpecifier)
	if !ok {
		return nil, errors.New("not a MatcherClusterSpecifier")
	}
	if c.GetClusterMatcher() == nil {
		return nil, errors.New("cluster_matcher: required")
	}
	tree, err := httpmatch.Compile(c.GetClusterMatcher(), compileAction)
	if err != nil {
		return nil, fmt.Errorf("cluster_matcher.%w", err)
	}
	return &plugin{tree: tree}, nil
}

// compileAction compiles a ClusterAction: the cluster's name.
func compileAction(tc *xdscorev3.TypedExtensionConfig, path string) (string, error) {
	msg, err := httpmatch.TypedConfig(tc, path, "an action")
	if err != nil {
		return "", err
	}
	a, ok := msg.(*matcherv3.ClusterAction)
	if !ok {
		return "", fmt.Errorf("%s.typed_config: action %s is not a cluster specifier action (%s)", path, proto.MessageName(msg), proto.MessageName(&matcherv3.ClusterAction{}))
	}
	if a.GetCluster() == "" {
		return "", errors.New(path + ".typed_config.cluster: must be set")
	}
	return a.GetCluster(), nil
}

// plugin is a compiled MatcherClusterSpecifier.
type plugin struct {
	tree *httpmatch.Matcher[string]
}

// Cluster implements router.ClusterSpecifier: the cluster of the matching
// action, "" (no cluster) when none matches.
func (p *plugin) Cluster(r *router.Request) string {
	name, _ := p.tree.Match(httpmatch.RequestData{R: r})
	return name
}
