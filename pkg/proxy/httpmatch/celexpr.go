package httpmatch

import (
	"errors"
	"fmt"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// compileCELExpression compiles an xds.type.v3.CelExpression: the checked
// or parsed AST (cel.dev/expr, or the deprecated v1alpha1 fields), else
// the text of cel_expr_string, the first of them that is set in that
// order. Errors name the field.
func compileCELExpression(env *cel.Env, x *xdstypev3.CelExpression, path string) (*cel.Program, error) {
	var (
		prg *cel.Program
		err error
	)
	switch {
	case x.GetCelExprChecked() != nil:
		var c exprpb.CheckedExpr
		if err = convert(x.GetCelExprChecked(), &c); err == nil {
			prg, err = env.CompileChecked(&c)
		}
		path += ".cel_expr_checked"
	case x.GetCelExprParsed() != nil:
		var p exprpb.ParsedExpr
		if err = convert(x.GetCelExprParsed(), &p); err == nil {
			prg, err = env.CompileParsed(p.GetExpr())
		}
		path += ".cel_expr_parsed"
	//lint:ignore SA1019 the deprecated form still configures Envoy
	case x.GetCheckedExpr() != nil:
		//lint:ignore SA1019 the deprecated form still configures Envoy
		prg, err = env.CompileChecked(x.GetCheckedExpr())
		path += ".checked_expr"
	//lint:ignore SA1019 the deprecated form still configures Envoy
	case x.GetParsedExpr() != nil:
		//lint:ignore SA1019 the deprecated form still configures Envoy
		prg, err = env.CompileParsed(x.GetParsedExpr().GetExpr())
		path += ".parsed_expr"
	case x.GetCelExprString() != "":
		prg, err = env.CompileText(x.GetCelExprString())
		path += ".cel_expr_string"
	default:
		return nil, errors.New(path + ": an expression is required")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return prg, nil
}

// convert copies a message into another of the same wire format
// (cel.dev/expr's AST into v1alpha1's, which package cel compiles).
func convert(from, to proto.Message) error {
	b, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, to)
}
