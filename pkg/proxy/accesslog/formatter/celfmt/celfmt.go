// Package celfmt is the formatter extension envoy.formatter.cel:
// %CEL(EXPRESSION):Z% prints a CEL expression over the entry's
// attributes (package celattrs), and %TYPED_CEL(EXPRESSION):Z% does the
// same but, alone in a typed JSON value, keeps the value's JSON type.
// An expression that fails to evaluate (an attribute the entry does not
// have) is a missing value ("-"), as in Envoy. Envoy now treats the
// extension as built in: its operators are in every format that has the
// extension registry, listed in formatters or not, and Outrigger does the
// same (accesslog.BuiltInFactory). As in Envoy's command syntax, an
// expression cannot contain ')'.
package celfmt

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/cel/v3"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/celattrs"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.formatter.cel"

// Factory builds the extension's command parser; its configuration is
// empty.
type Factory struct{}

var _ accesslog.BuiltInFactory = Factory{}

// Compile implements accesslog.CommandParserFactory.
func (Factory) Compile(config proto.Message) (accesslog.CommandParser, error) {
	if _, ok := config.(*celv3.Cel); !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	return parser{}, nil
}

// BuiltIn implements accesslog.BuiltInFactory.
func (Factory) BuiltIn() accesslog.CommandParser { return parser{} }

// parser parses %CEL(...)% and %TYPED_CEL(...)%.
type parser struct{}

// Parse implements accesslog.CommandParser: the expression is compiled
// once, with Envoy's default CEL environment; one that does not parse is
// refused.
func (parser) Parse(cmd, args string, hasArgs bool, maxLen int) (accesslog.Provider, error) {
	if cmd != "CEL" && cmd != "TYPED_CEL" {
		return nil, nil
	}
	if !hasArgs || args == "" {
		return nil, fmt.Errorf("%%%s(...)%% needs an expression", cmd)
	}
	env, err := cel.NewEnv()
	if err != nil {
		return nil, err
	}
	prg, err := env.CompileText(args)
	if err != nil {
		//lint:ignore ST1005 Envoy's words, so that searches for them find them
		return nil, fmt.Errorf("Not able to parse filter expression: %w", err)
	}
	p := &provider{prg: prg, maxLen: maxLen}
	if cmd == "TYPED_CEL" {
		return typedProvider{p}, nil
	}
	return p, nil
}

// provider evaluates one expression per entry. Value runs on many
// goroutines at once: each evaluation takes its attributes from the pool.
type provider struct {
	prg    *cel.Program
	maxLen int
	pool   sync.Pool
}

// eval evaluates the expression over e.
func (p *provider) eval(e *accesslog.Entry, fn func(*celattrs.Attributes) (string, bool)) (string, bool) {
	st, _ := p.pool.Get().(*celattrs.Attributes)
	if st == nil {
		st = new(celattrs.Attributes)
	}
	v, ok := fn(st)
	st.Reset() // drop the entry's references before pooling
	p.pool.Put(st)
	return v, ok
}

// Value implements accesslog.Provider: the value printed as Envoy prints
// it (package cel's EvalString), missing on an error.
func (p *provider) Value(e *accesslog.Entry) (string, bool) {
	return p.eval(e, func(st *celattrs.Attributes) (string, bool) {
		v, err := p.prg.EvalString(st.Fill(e))
		return v, err == nil
	})
}

// typedProvider is %TYPED_CEL%: Value as %CEL%'s, and a JSON value of
// the expression's type in a typed JSON format.
type typedProvider struct{ *provider }

var _ accesslog.TypedProvider = typedProvider{}

// JSONValue implements accesslog.TypedProvider: booleans, numbers and
// null as they are, strings (truncated to the length) as strings, bytes
// in base64, durations and timestamps as %CEL% prints them, lists and
// maps as JSON; an error is null.
func (p typedProvider) JSONValue(e *accesslog.Entry) (string, bool) {
	return p.eval(e, func(st *celattrs.Attributes) (string, bool) {
		v, err := p.prg.Eval(st.Fill(e))
		if err != nil {
			return "", false
		}
		return p.json(v)
	})
}

// json renders one value as JSON.
func (p typedProvider) json(v ref.Val) (string, bool) {
	quote := func(s string) (string, bool) {
		if p.maxLen >= 0 && len(s) > p.maxLen {
			s = s[:p.maxLen]
		}
		b, err := protojson.Marshal(structpb.NewStringValue(s))
		return string(b), err == nil
	}
	switch v := v.(type) {
	case types.Bool:
		return strconv.FormatBool(bool(v)), true
	case types.Int:
		return strconv.FormatInt(int64(v), 10), true
	case types.Uint:
		return strconv.FormatUint(uint64(v), 10), true
	case types.Double:
		b, err := protojson.Marshal(structpb.NewNumberValue(float64(v)))
		return string(b), err == nil
	case types.Null:
		return "null", true
	case types.String:
		return quote(string(v))
	case types.Bytes:
		return quote(base64.StdEncoding.EncodeToString(v))
	case types.Duration, types.Timestamp:
		s, err := cel.Print(v)
		if err != nil {
			return "", false
		}
		return quote(s)
	}
	native, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return "", false
	}
	b, err := protojson.Marshal(native.(*structpb.Value))
	return string(b), err == nil
}
