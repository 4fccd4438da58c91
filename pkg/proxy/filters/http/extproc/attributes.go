package extproc

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// attributesKey is the ProcessingRequest.attributes key the values go
// under, the filter's canonical name as in Envoy.
const attributesKey = "envoy.filters.http.ext_proc"

// attribute is one request_attributes or response_attributes entry: its
// name, which is also a CEL expression (request.path,
// request.headers['x']...), compiled.
type attribute struct {
	name string
	prg  *cel.Program
}

// compileAttributes compiles an attribute list; field names it in errors.
func compileAttributes(names []string, field string) ([]attribute, error) {
	if len(names) == 0 {
		return nil, nil
	}
	env, err := cel.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	out := make([]attribute, 0, len(names))
	for i, n := range names {
		prg, err := env.CompileText(n)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		out = append(out, attribute{name: n, prg: prg})
	}
	return out, nil
}

// valueType is the protobuf value CEL values convert to.
var valueType = reflect.TypeOf(&structpb.Value{})

// evaluateAttributes is ProcessingRequest.attributes for the stream: each
// attribute's value under its name; one that fails to evaluate (absent
// from the stream) is left out, as Envoy leaves it out.
func evaluateAttributes(attrs []attribute, s httpfilter.Stream, response bool) map[string]*structpb.Struct {
	var a cel.Activation
	httpfilter.FillStreamCEL(s, response, &a)
	st := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(attrs))}
	for i := range attrs {
		v, err := attrs[i].prg.Eval(&a)
		if err != nil {
			continue
		}
		pv, err := v.ConvertToNative(valueType)
		if err != nil {
			continue
		}
		st.Fields[attrs[i].name] = pv.(*structpb.Value)
	}
	return map[string]*structpb.Struct{attributesKey: st}
}
