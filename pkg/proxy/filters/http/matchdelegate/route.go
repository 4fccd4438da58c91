package matchdelegate

import (
	"errors"
	"fmt"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	skipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/matcher/action/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// routeMatcher is a compiled ExtensionWithMatcherPerRoute: its matcher
// replaces the wrapper's on the routes that carry it.
type routeMatcher struct {
	tree *httpmatch.Matcher[*action]
}

// CompileRoute implements httpfilter.RouteFactory. As in Envoy, the
// per-route matcher reads the request headers only. Its actions are
// SkipFilter: the wrapped filter is not known here, so the actions it
// takes (the composite filter's) are refused with their path.
func (Factory) CompileRoute(msg proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := msg.(*matchingv3.ExtensionWithMatcherPerRoute)
	if !ok {
		return nil, errors.New("not an ExtensionWithMatcherPerRoute")
	}
	tree, err := httpmatch.CompileTree(c.GetXdsMatcher(), compileRouteAction, compileRouteInput)
	if err != nil {
		return nil, httpfilter.PrefixErrors("xds_matcher.", err)
	}
	return &routeMatcher{tree: tree}, nil
}

// compileRouteAction compiles an action of a per-route matcher.
func compileRouteAction(tc *xdscorev3.TypedExtensionConfig, path string) (*action, error) {
	msg, skip, err := DecodeAction(tc, path)
	if err != nil {
		return nil, err
	}
	if !skip {
		return nil, fmt.Errorf("%s.typed_config: action %s is not supported by Outrigger in a per-route matcher (supported: %s)", path, proto.MessageName(msg), proto.MessageName(&skipv3.SkipFilter{}))
	}
	return &action{skip: true}, nil
}

// compileRouteInput compiles an input of a per-route matcher: Envoy
// allows the request headers only.
func compileRouteInput(tc *xdscorev3.TypedExtensionConfig, path string) (httpmatch.Input[httpmatch.Data], error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New(path + ".typed_config: an input is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	in, ok := msg.(*matcherv3.HttpRequestHeaderMatchInput)
	if !ok {
		// Envoy's words.
		return nil, fmt.Errorf("%s.typed_config: data input typeUrl type.googleapis.com/%s not permitted according to allowlist", path, proto.MessageName(msg))
	}
	name := strings.ToLower(in.GetHeaderName())
	return func(d httpmatch.Data) (string, bool) { return d.RequestHeader(name) }, nil
}
