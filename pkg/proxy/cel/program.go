// Package cel evaluates CEL expressions (github.com/google/cel-go) over
// Envoy's attribute vocabulary: request.*, response.*, source.*,
// destination.*, connection.*, upstream.*, xds.*, metadata and
// filter_state, as Envoy's filters/common/expr does. Expressions come as
// text or as the parsed or checked protobuf AST
// (google.api.expr.v1alpha1.Expr, CheckedExpr) that RBAC and the rate limit
// descriptors carry; attributes are read lazily from an Attributes value
// at evaluation, and one the stream does not have is an evaluation error
// (no such key), never a made-up value.
package cel

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// Env compiles expressions. It is immutable and safe for concurrent use;
// one is enough for a whole configuration.
type Env struct {
	env *cel.Env
}

// NewEnv makes the environment of Envoy's default expressions (see
// NewEnvWith).
func NewEnv() (*Env, error) { return NewEnvWith(Options{}) }

// NewEnvWith makes an environment: CEL's standard library less what
// Envoy's security-oriented defaults and o leave out (see Options),
// Envoy's top-level attribute names, and the protobuf types that
// attributes carry (metadata, the node).
func NewEnvWith(o Options) (*Env, error) {
	opts := append(o.envOptions(), cel.Types(&corev3.Metadata{}, &corev3.Node{}))
	for _, name := range topLevel {
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	env, err := cel.NewCustomEnv(opts...)
	if err != nil {
		return nil, err
	}
	return &Env{env: env}, nil
}

// Program is a compiled expression. It is immutable and safe for
// concurrent use.
type Program struct {
	prg     cel.Program
	adapter types.Adapter
}

// CompileText parses an expression from its text.
func (e *Env) CompileText(text string) (*Program, error) {
	ast, iss := e.env.Parse(text)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	return e.program(e.check(ast))
}

// check type-checks a parsed AST against the attribute names, all of
// dynamic type, when it can: a checked AST names its variables, so the
// interpreter resolves request.headers as "request" then "headers"
// rather than trying "request.headers" first. An expression that does
// not check (an unknown name) stays unchecked and fails at evaluation,
// as Envoy's do, which does not check them; an unknown function is still
// refused by program, as Envoy's expression builder refuses it.
func (e *Env) check(ast *cel.Ast) (out *cel.Ast) {
	// A malformed hand-built AST may upset the checker: program then
	// reports it.
	defer func() {
		if recover() != nil {
			out = ast
		}
	}()
	checked, iss := e.env.Check(ast)
	if iss.Err() != nil {
		return ast
	}
	return checked
}

// CompileParsed compiles a parsed expression (google.api.expr.v1alpha1.Expr).
func (e *Env) CompileParsed(x *exprpb.Expr) (*Program, error) {
	if x == nil || x.GetExprKind() == nil {
		return nil, errors.New("empty expression")
	}
	return e.program(e.check(cel.ParsedExprToAst(&exprpb.ParsedExpr{Expr: x})))
}

// CompileChecked compiles a checked expression
// (google.api.expr.v1alpha1.CheckedExpr).
func (e *Env) CompileChecked(x *exprpb.CheckedExpr) (*Program, error) {
	if x.GetExpr().GetExprKind() == nil {
		return nil, errors.New("expr: empty expression")
	}
	return e.program(cel.CheckedExprToAst(x))
}

// program plans an AST; planning finds unknown functions and malformed
// trees.
func (e *Env) program(ast *cel.Ast) (p *Program, err error) {
	// A hand-built protobuf AST can be malformed in ways the planner does
	// not expect: a configuration error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("malformed expression: %v", r)
		}
	}()
	if hasComprehension(ast) {
		// Envoy builds its expressions with comprehensions disabled.
		return nil, errors.New("comprehension expressions (all, exists, exists_one, map, filter) are disabled, as in Envoy")
	}
	if err := e.knownFunctions(ast); err != nil {
		return nil, err
	}
	prg, err := e.env.Program(ast)
	if err != nil {
		return nil, err
	}
	return &Program{prg: prg, adapter: e.env.CELTypeAdapter()}, nil
}

// Eval evaluates the program over a; an attribute a does not have, or any
// other evaluation failure, is an error.
func (p *Program) Eval(a *Activation) (ref.Val, error) {
	a.adapter = p.adapter
	v, _, err := p.prg.Eval(a)
	if err != nil {
		return nil, err
	}
	if types.IsError(v) {
		return nil, v.(*types.Err)
	}
	return v, nil
}

// Matches reports whether the program evaluates to true over a, as
// Envoy's RBAC conditions read it: an error or a value that is not a
// boolean does not match.
func (p *Program) Matches(a *Activation) bool {
	v, err := p.Eval(a)
	return err == nil && v == types.True
}

// EvalString evaluates the program to a string, as Envoy prints a value
// into a rate limit descriptor: strings as they are, numbers in decimal,
// booleans as true/false, bytes raw, timestamps in RFC 3339, durations in
// seconds ("1.5s"), null as NULL. Lists, maps and messages have no
// printed form here and are errors.
func (p *Program) EvalString(a *Activation) (string, error) {
	v, err := p.Eval(a)
	if err != nil {
		return "", err
	}
	return Print(v)
}

// Print prints a value as EvalString does.
func Print(v ref.Val) (string, error) {
	switch v := v.(type) {
	case types.String:
		return string(v), nil
	case types.Int:
		return strconv.FormatInt(int64(v), 10), nil
	case types.Uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case types.Double:
		return strconv.FormatFloat(float64(v), 'g', -1, 64), nil
	case types.Bool:
		return strconv.FormatBool(bool(v)), nil
	case types.Bytes:
		return string(v), nil
	case types.Null:
		return "NULL", nil
	case types.Timestamp:
		return v.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return strconv.FormatFloat(v.Duration.Seconds(), 'f', -1, 64) + "s", nil
	}
	return "", fmt.Errorf("a %s value cannot be printed", v.Type().TypeName())
}

// knownFunctions refuses a call that no overload of the environment can
// serve: a function it does not declare, or one called with a number of
// arguments (or as a method, or not) that none of its overloads takes.
// Envoy's expression builder fails such an expression when the
// configuration loads ("No overloads provided for FunctionStep
// creation"); cel-go would plan it and fail every evaluation.
func (e *Env) knownFunctions(a *cel.Ast) error {
	var err error
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(x celast.Expr) {
		if err != nil || x.Kind() != celast.CallKind {
			return
		}
		call := x.AsCall()
		fn := call.FunctionName()
		decl, ok := e.env.Functions()[fn]
		if !ok {
			err = fmt.Errorf("unknown function %q", fn)
			return
		}
		args := len(call.Args())
		for _, o := range decl.OverloadDecls() {
			if o.IsMemberFunction() == call.IsMemberFunction() && len(o.ArgTypes()) == args+btoi(call.IsMemberFunction()) {
				return
			}
		}
		style := "function"
		if call.IsMemberFunction() {
			style = "method"
		}
		err = fmt.Errorf("no overload of %q takes %d arguments as a %s", fn, args, style)
	}))
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hasComprehension reports whether the expression has a comprehension
// (what the all, exists, map and filter macros expand to).
func hasComprehension(a *cel.Ast) bool {
	found := false
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		found = found || e.Kind() == celast.ComprehensionKind
	}))
	return found
}
