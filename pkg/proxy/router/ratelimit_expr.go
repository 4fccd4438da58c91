package router

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rldexprv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rate_limit_descriptors/expr/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// RateLimitDescriptorExprName is the extension action's name
// (envoy.rate_limit_descriptors.expr); its typed_config is an
// envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor.
const RateLimitDescriptorExprName = "proxy.rate_limit_descriptors.expr"

// exprDescriptorType is the extension action's typed_config type.
var exprDescriptorType = string(proto.MessageName(&rldexprv3.Descriptor{}))

// CELAttributes fills the attributes of the stream that a
// DescriptorInput does not carry (addresses, connection, protocol,
// start time), for the extension action's expressions. The rate limit
// filters pass their stream; without one those attributes are absent.
type CELAttributes interface {
	FillCEL(a *cel.Activation)
}

// exprDescriptor is a compiled extension action: a CEL expression whose
// value is the descriptor entry's value.
type exprDescriptor struct {
	prg         *cel.Program
	skipIfError bool
}

// compileExtensionAction compiles the extension action; only the CEL
// descriptor exists, as in Envoy's core.
func compileExtensionAction(x *corev3.TypedExtensionConfig) (rateLimitAction, error) {
	tc := x.GetTypedConfig()
	if tc == nil {
		return rateLimitAction{}, errors.New("extension.typed_config: must be set")
	}
	var d rldexprv3.Descriptor
	if tc.MessageName() != proto.MessageName(&d) {
		return rateLimitAction{}, fmt.Errorf("extension.typed_config: %s is not a rate limit descriptor Outrigger has (supported: %s)", tc.MessageName(), exprDescriptorType)
	}
	if err := tc.UnmarshalTo(&d); err != nil {
		return rateLimitAction{}, fmt.Errorf("extension.typed_config: %w", err)
	}
	if d.GetDescriptorKey() == "" {
		return rateLimitAction{}, errors.New("extension.typed_config.descriptor_key: must be set")
	}
	env, err := cel.NewEnv()
	if err != nil {
		return rateLimitAction{}, fmt.Errorf("extension.typed_config: %w", err)
	}
	var prg *cel.Program
	switch e := d.GetExprSpecifier().(type) {
	case *rldexprv3.Descriptor_Text:
		if prg, err = env.CompileText(e.Text); err != nil {
			return rateLimitAction{}, fmt.Errorf("extension.typed_config.text: %w", err)
		}
	case *rldexprv3.Descriptor_Parsed:
		if prg, err = env.CompileParsed(e.Parsed); err != nil {
			return rateLimitAction{}, fmt.Errorf("extension.typed_config.parsed: %w", err)
		}
	default:
		return rateLimitAction{}, errors.New("extension.typed_config.expr_specifier: one of text or parsed is required")
	}
	return rateLimitAction{kind: actionExpr, key: d.GetDescriptorKey(), expr: &exprDescriptor{prg: prg, skipIfError: d.GetSkipIfError()}}, nil
}

// entry evaluates the expression over the request, as Envoy's
// expression descriptor: ok with the printed value; on an error (an
// attribute the request does not have included) skip with skip_if_error,
// else no descriptor.
func (x *exprDescriptor) entry(in *DescriptorInput) (value string, skip, ok bool) {
	a := cel.Activation{Metadata: in.DynamicMetadata}
	var req cel.Request
	if r := in.Request; r != nil {
		req = cel.Request{Headers: r.Headers, Path: r.Path, Host: r.Host, Scheme: r.Scheme, Method: r.Method}
		a.Request = &req
	}
	a.XDS = &cel.XDS{ClusterName: in.Cluster, RouteMetadata: in.RouteMetadata}
	if in.Attributes != nil {
		in.Attributes.FillCEL(&a)
	}
	v, err := x.prg.EvalString(&a)
	if err != nil {
		return "", x.skipIfError, false
	}
	return v, false, true
}
