package router

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	uritemplatematchv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	uritemplaterewritev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/rewrite/uri_template/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// CompilePathMatchPolicy builds a uri_template matcher from a
// path_match_policy (or an RBAC permission's uri_template); errors name
// the field below it.
func CompilePathMatchPolicy(tc *corev3.TypedExtensionConfig) (*URITemplate, error) {
	m, err := pathPolicyConfig(tc)
	if err != nil {
		return nil, err
	}
	c, ok := m.(*uritemplatematchv3.UriTemplateMatchConfig)
	if !ok {
		return nil, fmt.Errorf("typed_config: %s is not a path matcher Outrigger implements", tc.GetTypedConfig().GetTypeUrl())
	}
	if err := c.ValidateAll(); err != nil {
		return nil, fmt.Errorf("typed_config: %w", err)
	}
	t, err := CompileURITemplate(c.GetPathTemplate())
	if err != nil {
		return nil, fmt.Errorf("typed_config.path_template: %w", err)
	}
	return t, nil
}

// compilePathRewritePolicy builds a uri_template rewriter from a route
// action's path_rewrite_policy; match is the route's uri_template
// matcher, which Envoy requires. Errors name the field below it.
func compilePathRewritePolicy(tc *corev3.TypedExtensionConfig, match *URITemplate) (*TemplateRewrite, error) {
	m, err := pathPolicyConfig(tc)
	if err != nil {
		return nil, err
	}
	c, ok := m.(*uritemplaterewritev3.UriTemplateRewriteConfig)
	if !ok {
		return nil, fmt.Errorf("typed_config: %s is not a path rewriter Outrigger implements", tc.GetTypedConfig().GetTypeUrl())
	}
	if err := c.ValidateAll(); err != nil {
		return nil, fmt.Errorf("typed_config: %w", err)
	}
	if match == nil {
		return nil, errors.New("typed_config: unable to use envoy.path.rewrite.uri_template.uri_template_rewriter extension without envoy.path.match.uri_template.uri_template_matcher extension")
	}
	rw, err := CompileTemplateRewrite(c.GetPathTemplateRewrite(), match)
	if err != nil {
		return nil, fmt.Errorf("typed_config.path_template_rewrite: %w", err)
	}
	return rw, nil
}

// compileTemplateRewrite adds a route action's path_rewrite_policy to
// rw, with Envoy's checks against the other rewrites; match is the
// route's uri_template matcher, nil when it has none.
func compileTemplateRewrite(rw *rewrite, a *routev3.RouteAction, match *URITemplate) error {
	if rw.hasPrefix && match != nil {
		return errors.New("prefix_rewrite: cannot be used with path_match_policy (Envoy: Cannot use prefix_rewrite with matcher extension)")
	}
	tc := a.GetPathRewritePolicy()
	if tc == nil {
		return nil
	}
	if rw.active() {
		return errors.New("path_rewrite_policy: specify only one of prefix_rewrite, regex_rewrite or path_rewrite_policy")
	}
	t, err := compilePathRewritePolicy(tc, match)
	if err != nil {
		return fmt.Errorf("path_rewrite_policy.%w", err)
	}
	rw.tmpl = t
	return nil
}

func pathPolicyConfig(tc *corev3.TypedExtensionConfig) (proto.Message, error) {
	if tc.GetTypedConfig() == nil {
		return nil, errors.New("typed_config: a typed_config is required")
	}
	m, err := anypb.UnmarshalNew(tc.GetTypedConfig(), proto.UnmarshalOptions{})
	if err != nil {
		return nil, fmt.Errorf("typed_config: %w", err)
	}
	return m, nil
}
