package grpcjsontranscoder

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
)

// defaultBufferLimit bounds a body the filter transcodes when
// max_request_body_size or max_response_body_size is unset, as Envoy's
// default buffer limit (the listener's per_connection_buffer_limit_bytes,
// 1 MiB) does.
const defaultBufferLimit = 1 << 20

// httpBodyName is google.api.HttpBody, whose messages carry raw bodies.
const httpBodyName = "google.api.HttpBody"

// transcoder is a compiled GrpcJsonTranscoder: the filter's own, or a
// route's.
type transcoder struct {
	// disabled: no service is listed; requests pass untouched.
	disabled bool
	match    matcher
	types    *typeResolver
	// print are the print_options; newlineDelimited and sse frame
	// server-streaming responses.
	print            protojson.MarshalOptions
	whitespace       bool
	newlineDelimited bool
	sse              bool

	matchIncomingRoute           bool
	ignoreUnknownQueryParameters bool
	// captureUnknownQueryParameters keeps them in an HttpBody request's
	// extensions (capture_unknown_query_parameters).
	captureUnknownQueryParameters bool
	convertGrpcStatus             bool
	caseInsensitiveEnums          bool
	rejectUnknownMethod           bool
	rejectUnknownQueryParameters  bool
	rejectCollisions              bool
	maxRequest, maxResponse       int
}

// compile compiles a GrpcJsonTranscoder; errors name the field path.
func compile(c *transcoderv3.GrpcJsonTranscoder) (*transcoder, error) {
	t := &transcoder{
		matchIncomingRoute:            c.GetMatchIncomingRequestRoute(),
		ignoreUnknownQueryParameters:  c.GetIgnoreUnknownQueryParameters(),
		captureUnknownQueryParameters: c.GetCaptureUnknownQueryParameters(),
		convertGrpcStatus:             c.GetConvertGrpcStatus(),
		caseInsensitiveEnums:          c.GetCaseInsensitiveEnumParsing(),
		maxRequest:                    defaultBufferLimit,
		maxResponse:                   defaultBufferLimit,
	}
	if v := c.GetMaxRequestBodySize(); v != nil {
		t.maxRequest = int(v.GetValue())
	}
	if v := c.GetMaxResponseBodySize(); v != nil {
		t.maxResponse = int(v.GetValue())
	}
	rv := c.GetRequestValidationOptions()
	t.rejectUnknownMethod = rv.GetRejectUnknownMethod()
	t.rejectUnknownQueryParameters = rv.GetRejectUnknownQueryParameters()
	t.rejectCollisions = rv.GetRejectBindingBodyFieldCollisions()

	po := c.GetPrintOptions()
	t.whitespace = po.GetAddWhitespace()
	t.newlineDelimited = po.GetStreamNewlineDelimited()
	t.sse = po.GetStreamSseStyleDelimited()

	var raw []byte
	switch d := c.GetDescriptorSet().(type) {
	case *transcoderv3.GrpcJsonTranscoder_ProtoDescriptor:
		b, err := datasource.Read(&corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: d.ProtoDescriptor}})
		if err != nil {
			return nil, fmt.Errorf("proto_descriptor: %w", err)
		}
		raw = b
	case *transcoderv3.GrpcJsonTranscoder_ProtoDescriptorBin:
		raw = d.ProtoDescriptorBin
	default:
		return nil, errors.New("descriptor_set: one of proto_descriptor or proto_descriptor_bin must be set")
	}
	field := "proto_descriptor"
	if _, ok := c.GetDescriptorSet().(*transcoderv3.GrpcJsonTranscoder_ProtoDescriptorBin); ok {
		field = "proto_descriptor_bin"
	}
	files, err := buildFiles(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	t.types = newTypeResolver(files)
	t.print = protojson.MarshalOptions{
		EmitDefaultValues: po.GetAlwaysPrintPrimitiveFields(),
		UseEnumNumbers:    po.GetAlwaysPrintEnumsAsInts(),
		UseProtoNames:     po.GetPreserveProtoFieldNames(),
		Resolver:          t.types,
	}

	t.match = matcher{
		spec:             unescapeSpec(c.GetUrlUnescapeSpec()),
		plus:             c.GetQueryParamUnescapePlus(),
		unregisteredVerb: c.GetMatchUnregisteredCustomVerb(),
		verbs:            map[string]bool{},
	}
	ignored := map[string]bool{}
	for _, q := range c.GetIgnoredQueryParameters() {
		ignored[q] = true
	}
	t.match.ignored = ignored
	t.disabled = len(c.GetServices()) == 0
	for i, name := range c.GetServices() {
		d, err := files.FindDescriptorByName(protoreflect.FullName(name))
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if err != nil || !ok {
			return nil, fmt.Errorf("services[%d]: could not find '%s' in the proto descriptor", i, name)
		}
		if err := t.addService(sd, c.GetAutoMapping()); err != nil {
			return nil, fmt.Errorf("services[%d]: %w", i, err)
		}
	}
	return t, nil
}

// buildFiles builds the descriptors of a serialized FileDescriptorSet.
// Imports it does not carry (google/api/annotations.proto, the
// well-known types) are taken from the ones linked into the proxy, as a
// set made without --include_imports needs.
func buildFiles(raw []byte) (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		return nil, errors.New("unable to parse proto descriptor")
	}
	files := new(protoregistry.Files)
	r := &fileResolver{local: files}
	pending := set.GetFile()
	for len(pending) > 0 {
		var next []*descriptorpb.FileDescriptorProto
		var lastErr error
		for _, fdp := range pending {
			if _, err := files.FindFileByPath(fdp.GetName()); err == nil {
				continue
			}
			if !r.hasDeps(fdp) {
				next = append(next, fdp)
				continue
			}
			fd, err := protodesc.NewFile(fdp, r)
			if err != nil {
				return nil, fmt.Errorf("unable to build proto descriptor pool: %s: %w", fdp.GetName(), err)
			}
			if err := files.RegisterFile(fd); err != nil {
				lastErr = err
			}
		}
		if lastErr != nil {
			return nil, fmt.Errorf("unable to build proto descriptor pool: %w", lastErr)
		}
		if len(next) == len(pending) {
			return nil, fmt.Errorf("unable to build proto descriptor pool: %s: imports missing from the set", next[0].GetName())
		}
		pending = next
	}
	return files, nil
}

// fileResolver finds a file or descriptor in the set being built, then
// among the proxy's own.
type fileResolver struct {
	local *protoregistry.Files
}

// hasDeps reports whether every import of fdp can be resolved.
func (r *fileResolver) hasDeps(fdp *descriptorpb.FileDescriptorProto) bool {
	for _, dep := range fdp.GetDependency() {
		if _, err := r.FindFileByPath(dep); err != nil {
			return false
		}
	}
	return true
}

// FindFileByPath implements protodesc.Resolver.
func (r *fileResolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.local.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

// FindDescriptorByName implements protodesc.Resolver.
func (r *fileResolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.local.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}

// typeResolver finds message types (for google.protobuf.Any) among the
// set's, then the proxy's own (google.rpc.Status and its details).
type typeResolver struct {
	local *dynamicpb.Types
}

func newTypeResolver(files *protoregistry.Files) *typeResolver {
	return &typeResolver{local: dynamicpb.NewTypes(files)}
}

// FindMessageByName implements protoregistry.MessageTypeResolver.
func (r *typeResolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := r.local.FindMessageByName(name); err == nil {
		return mt, nil
	}
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

// FindMessageByURL implements protoregistry.MessageTypeResolver.
func (r *typeResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := r.local.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

// FindExtensionByName implements protoregistry.ExtensionTypeResolver.
func (r *typeResolver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	if xt, err := r.local.FindExtensionByName(name); err == nil {
		return xt, nil
	}
	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

// FindExtensionByNumber implements protoregistry.ExtensionTypeResolver.
func (r *typeResolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	if xt, err := r.local.FindExtensionByNumber(message, field); err == nil {
		return xt, nil
	}
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}

// addService registers the HTTP rules of a service's methods: their
// google.api.http options, or with auto_mapping a POST of
// "/<service>/<method>" with the body "*" for the methods without one.
func (t *transcoder) addService(sd protoreflect.ServiceDescriptor, autoMapping bool) error {
	methods := sd.Methods()
	for i := range methods.Len() {
		md := methods.Get(i)
		m := &method{
			desc:     md,
			grpcPath: "/" + string(sd.FullName()) + "/" + string(md.Name()),
		}
		rule := httpRule(md)
		if rule == nil {
			if !autoMapping {
				continue
			}
			rule = &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: m.grpcPath}, Body: "*"}
		}
		if err := t.addRule(m, rule, true); err != nil {
			return fmt.Errorf("cannot register '%s' to path matcher: %w", md.FullName(), err)
		}
	}
	return nil
}

// httpRule is a method's google.api.http option, nil when it has none.
func httpRule(md protoreflect.MethodDescriptor) *annotations.HttpRule {
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	if !ok || opts == nil || !proto.HasExtension(opts, annotations.E_Http) {
		return nil
	}
	r, _ := proto.GetExtension(opts, annotations.E_Http).(*annotations.HttpRule)
	return r
}

// addRule registers one HTTP rule and, at the top level, its
// additional_bindings.
func (t *transcoder) addRule(m *method, r *annotations.HttpRule, top bool) error {
	var verb, path string
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		verb, path = "GET", p.Get
	case *annotations.HttpRule_Put:
		verb, path = "PUT", p.Put
	case *annotations.HttpRule_Post:
		verb, path = "POST", p.Post
	case *annotations.HttpRule_Delete:
		verb, path = "DELETE", p.Delete
	case *annotations.HttpRule_Patch:
		verb, path = "PATCH", p.Patch
	case *annotations.HttpRule_Custom:
		verb, path = p.Custom.GetKind(), p.Custom.GetPath()
	default:
		return errors.New("http rule without a pattern")
	}
	tmpl, err := parseTemplate(path)
	if err != nil {
		return fmt.Errorf("path template %q: %w", path, err)
	}
	in := m.desc.Input()
	for _, v := range tmpl.vars {
		if _, err := resolvePath(in, v.fieldPath); err != nil {
			return fmt.Errorf("path template %q: %w", path, err)
		}
	}
	rl := &rule{httpMethod: verb, tmpl: tmpl, method: m, body: r.GetBody()}
	switch rl.body {
	case "", "*":
		rl.httpBody = rl.body == "*" && in.FullName() == httpBodyName
	default:
		fds, err := resolvePath(in, strings.Split(rl.body, "."))
		if err != nil {
			return fmt.Errorf("body %q: %w", rl.body, err)
		}
		rl.bodyPath = fds
		last := fds[len(fds)-1]
		rl.httpBody = last.Message() != nil && last.Message().FullName() == httpBodyName && !last.IsList()
	}
	if rb := r.GetResponseBody(); rb != "" {
		fds, err := resolvePath(m.desc.Output(), strings.Split(rb, "."))
		if err != nil {
			return fmt.Errorf("response_body %q: %w", rb, err)
		}
		last := fds[len(fds)-1]
		if last.Message() == nil || last.IsList() || last.Message().FullName() != httpBodyName {
			// As Envoy: "not supported yet for non-HttpBody fields".
			return fmt.Errorf("response_body %q: setting \"response_body\" is not supported yet for non-HttpBody fields", rb)
		}
		rl.responsePath = fds
	}
	if tmpl.verb != "" {
		t.match.verbs[tmpl.verb] = true
	}
	t.match.add(rl)
	if !top && len(r.GetAdditionalBindings()) > 0 {
		return errors.New("additional_bindings may not be nested")
	}
	for _, ab := range r.GetAdditionalBindings() {
		if err := t.addRule(m, ab, false); err != nil {
			return err
		}
	}
	return nil
}

// resolvePath resolves a dotted field path (proto or JSON names) in md:
// every field but the last a singular message.
func resolvePath(md protoreflect.MessageDescriptor, path []string) ([]protoreflect.FieldDescriptor, error) {
	fds := make([]protoreflect.FieldDescriptor, 0, len(path))
	for i, name := range path {
		if md == nil {
			return nil, fmt.Errorf("field %q is not a message", strings.Join(path[:i], "."))
		}
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			fd = md.Fields().ByJSONName(name)
		}
		if fd == nil {
			return nil, fmt.Errorf("no field %q in %s", name, md.FullName())
		}
		fds = append(fds, fd)
		md = nil
		if i < len(path)-1 && !fd.IsList() && !fd.IsMap() {
			md = fd.Message()
		}
	}
	return fds, nil
}
