package cel

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/cel-go/cel"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Options are the CEL features an expression may use beyond the
// security-oriented defaults Envoy gives every expression: no
// comprehensions (all, exists, map, filter), no string() conversion, no
// string or list concatenation with +. They are Envoy's
// CelExpressionConfig (RBAC policies' cel_config).
type Options struct {
	// StringConversion allows string() (enable_string_conversion).
	StringConversion bool
	// StringConcat allows + on strings (enable_string_concat).
	StringConcat bool
	// StringFunctions adds replace, split, lowerAscii and upperAscii
	// (enable_string_functions).
	StringFunctions bool
}

// OptionsOf reads a CelExpressionConfig; nil is the defaults.
func OptionsOf(c *corev3.CelExpressionConfig) Options {
	return Options{
		StringConversion: c.GetEnableStringConversion(),
		StringConcat:     c.GetEnableStringConcat(),
		StringFunctions:  c.GetEnableStringFunctions(),
	}
}

// envOptions are the environment options that give o's features: the
// standard library less what o leaves out, and the string functions when
// asked.
func (o Options) envOptions() []cel.EnvOption {
	// + is declared anew (see add): the standard one dispatches on its
	// operands' Adder trait at run time, which an excluded overload does
	// not stop for expressions the checker cannot type.
	subset := celenv.NewLibrarySubset()
	subset.ExcludeFunctions = []*celenv.Function{{Name: operators.Add}}
	if !o.StringConversion {
		subset.ExcludeFunctions = append(subset.ExcludeFunctions, &celenv.Function{Name: overloads.TypeConvertString})
	}
	plus := []cel.FunctionOpt{
		cel.Overload(overloads.AddInt64, []*cel.Type{cel.IntType, cel.IntType}, cel.IntType),
		cel.Overload(overloads.AddUint64, []*cel.Type{cel.UintType, cel.UintType}, cel.UintType),
		cel.Overload(overloads.AddDouble, []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType),
		cel.Overload(overloads.AddBytes, []*cel.Type{cel.BytesType, cel.BytesType}, cel.BytesType),
		cel.Overload(overloads.AddTimestampDuration, []*cel.Type{cel.TimestampType, cel.DurationType}, cel.TimestampType),
		cel.Overload(overloads.AddDurationTimestamp, []*cel.Type{cel.DurationType, cel.TimestampType}, cel.TimestampType),
		cel.Overload(overloads.AddDurationDuration, []*cel.Type{cel.DurationType, cel.DurationType}, cel.DurationType),
	}
	if o.StringConcat {
		plus = append(plus, cel.Overload(overloads.AddString, []*cel.Type{cel.StringType, cel.StringType}, cel.StringType))
	}
	// The standard macros stay, so that all(), exists() and the rest
	// parse as in Envoy; the comprehensions they make are then refused
	// (see hasComprehension).
	opts := []cel.EnvOption{
		cel.StdLib(cel.StdLibSubset(subset)),
		cel.Function(operators.Add, append(plus, cel.SingletonBinaryBinding(o.add))...),
	}
	if o.StringFunctions {
		opts = append(opts, stringFunctions()...)
	}
	return opts
}

// stringFunctions are the string functions Envoy's
// enable_string_functions adds.
func stringFunctions() []cel.EnvOption {
	str := func(v ref.Val) string { return string(v.(types.String)) }
	return []cel.EnvOption{
		cel.Function("replace", cel.MemberOverload("string_replace_string_string",
			[]*cel.Type{cel.StringType, cel.StringType, cel.StringType}, cel.StringType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				return types.String(strings.ReplaceAll(str(args[0]), str(args[1]), str(args[2])))
			}))),
		cel.Function("split", cel.MemberOverload("string_split_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
			cel.BinaryBinding(func(s, sep ref.Val) ref.Val {
				return types.NewStringList(types.DefaultTypeAdapter, strings.Split(str(s), str(sep)))
			}))),
		cel.Function("lowerAscii", cel.MemberOverload("string_lower_ascii",
			[]*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(func(s ref.Val) ref.Val { return types.String(asciiCase(str(s), false)) }))),
		cel.Function("upperAscii", cel.MemberOverload("string_upper_ascii",
			[]*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(func(s ref.Val) ref.Val { return types.String(asciiCase(str(s), true)) }))),
	}
}

// asciiCase changes the case of ASCII letters only, as CEL's lowerAscii
// and upperAscii do.
func asciiCase(s string, upper bool) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// add is + with Envoy's defaults: lists never concatenate, strings only
// with StringConcat; other operands add as CEL's standard library adds
// them.
func (o Options) add(l, r ref.Val) ref.Val {
	switch l.(type) {
	case traits.Lister:
		return types.NoSuchOverloadErr()
	case types.String:
		if !o.StringConcat {
			return types.NoSuchOverloadErr()
		}
	}
	a, ok := l.(traits.Adder)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	return a.Add(r)
}
