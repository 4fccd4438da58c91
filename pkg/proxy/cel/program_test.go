package cel

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/cel-go/cel"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/types/known/structpb"
)

// headers is a small HeaderRanger for the tests.
type headers [][2]string

func (h headers) Get(name string) (string, bool) {
	var vals []string
	for _, f := range h {
		if f[0] == name {
			vals = append(vals, f[1])
		}
	}
	return strings.Join(vals, ","), vals != nil
}

func (h headers) Range(fn func(name, value string) bool) {
	for _, f := range h {
		if !fn(f[0], f[1]) {
			return
		}
	}
}

func testActivation() *Activation {
	md, _ := structpb.NewStruct(map[string]any{"user": "alice"})
	return &Activation{
		Request: &Request{
			Headers: headers{{"x", "y"}, {"user-agent", "curl/8"}, {"x-request-id", "abc"}, {"multi", "a"}, {"multi", "b"}},
			Path:    "/api/v1?a=b", Host: "example.com", Scheme: "http", Method: "GET", Protocol: "HTTP/1.1",
			Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		Source:      netip.MustParseAddrPort("127.0.0.1:4567"),
		Destination: netip.MustParseAddrPort("[::1]:8080"),
		Connection:  &Connection{ID: 7, RequestedServerName: "sni"},
		XDS:         &XDS{ClusterName: "backend", Node: &corev3.Node{Id: "node-1", Cluster: "svc"}},
		Metadata:    &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"auth": md}},
	}
}

func mustEnv(t testing.TB) *Env {
	t.Helper()
	e, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEvalString(t *testing.T) {
	e := mustEnv(t)
	for expr, want := range map[string]string{
		`request.headers['x']`:                     "y",
		`request.headers['X']`:                     "y",
		`request.headers['multi']`:                 "a,b",
		`request.path`:                             "/api/v1?a=b",
		`request.url_path`:                         "/api/v1",
		`request.query`:                            "a=b",
		`request.useragent`:                        "curl/8",
		`request.id`:                               "abc",
		`request.protocol`:                         "HTTP/1.1",
		`request.time`:                             "2026-01-02T03:04:05Z",
		`source.address`:                           "127.0.0.1:4567",
		`source.port`:                              "4567",
		`destination.address`:                      "[::1]:8080",
		`connection.id`:                            "7",
		`connection.mtls`:                          "false",
		`connection.requested_server_name`:         "sni",
		`xds.cluster_name`:                         "backend",
		`xds.node.id`:                              "node-1",
		`metadata.filter_metadata['auth']['user']`: "alice",
		`'x' in request.headers`:                   "true",
		`'nope' in request.headers`:                "false",
		`has(request.headers.x)`:                   "true",
		`request.headers.size()`:                   "4",
		`1.5`:                                      "1.5",
		`null`:                                     "NULL",
		`duration('1500ms')`:                       "1.5s",
	} {
		p, err := e.CompileText(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := p.EvalString(testActivation())
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
}

// TestMissingAttributes checks that what the stream does not have is an
// error, never a default value.
func TestMissingAttributes(t *testing.T) {
	e := mustEnv(t)
	for _, expr := range []string{
		`request.headers['absent']`, `response.code`, `upstream.address`, `filter_state['k']`,
		`connection.tls_version`, `connection.subject_peer_certificate`, `request.duration`, `request.size`,
		`request.nope`, `xds.route_name`, `metadata.filter_metadata['none']['x']`, `request.headers[1]`,
	} {
		p, err := e.CompileText(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		a := testActivation()
		if v, err := p.EvalString(a); err == nil {
			t.Errorf("%s = %q, want an error", expr, v)
		}
		if p.Matches(a) {
			t.Errorf("%s matches", expr)
		}
	}
}

func TestMatches(t *testing.T) {
	e := mustEnv(t)
	for expr, want := range map[string]bool{
		`request.headers['x'] == 'y'`:                             true,
		`request.headers['x'] == 'z'`:                             false,
		`source.address.startsWith('127.0.0.1:')`:                 true,
		`request.method in ['GET', 'HEAD'] && source.port > 1024`: true,
		`'x'`:                          false, // not a boolean
		`response.code == 200 || true`: true,  // CEL's commutative or absorbs the error
	} {
		p, err := e.CompileText(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := p.Matches(testActivation()); got != want {
			t.Errorf("%s matches = %v, want %v", expr, got, want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	e := mustEnv(t)
	for _, expr := range []string{`request.headers[`, `1 +`, `a.b.`} {
		if _, err := e.CompileText(expr); err == nil {
			t.Errorf("%s compiled", expr)
		}
	}
	// Envoy's builder refuses calls no overload serves when the
	// configuration loads; so does Compile, with the function's name.
	for expr, want := range map[string]string{
		`unknown_function(1)`:             `unknown function "unknown_function"`,
		`request.path.startsWith('/', 1)`: `no overload of "startsWith" takes 2 arguments as a method`,
		`size()`:                          `no overload of "size" takes 0 arguments as a function`,
		`request.headers.nope('x')`:       `unknown function "nope"`,
	} {
		if _, err := e.CompileText(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", expr, err, want)
		}
	}
	unknown := &exprpb.Expr{ExprKind: &exprpb.Expr_CallExpr{CallExpr: &exprpb.Expr_Call{Function: "frobnicate"}}}
	if _, err := e.CompileParsed(unknown); err == nil || !strings.Contains(err.Error(), `unknown function "frobnicate"`) {
		t.Errorf("a parsed call of an unknown function: err = %v", err)
	}
	if _, err := e.CompileParsed(&exprpb.Expr{}); err == nil {
		t.Error("an empty parsed expression compiled")
	}
	if _, err := e.CompileChecked(&exprpb.CheckedExpr{}); err == nil {
		t.Error("an empty checked expression compiled")
	}
}

// TestCompileParsed builds request.headers['x'] == 'y' as a protobuf AST,
// the form RBAC's condition carries.
func TestCompileParsed(t *testing.T) {
	e := mustEnv(t)
	p, err := e.CompileParsed(parsed(t, `request.headers['x'] == 'y'`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Matches(testActivation()) {
		t.Error("the parsed expression does not match")
	}
	ce, err := e.CompileChecked(&exprpb.CheckedExpr{Expr: parsed(t, `request.headers['x'] == 'z'`)})
	if err != nil {
		t.Fatal(err)
	}
	if ce.Matches(testActivation()) {
		t.Error("the checked expression matches")
	}
}

// parsed is the protobuf AST of an expression's text.
func parsed(t *testing.T, text string) *exprpb.Expr {
	t.Helper()
	env, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Parse(text)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	pe, err := cel.AstToParsedExpr(ast)
	if err != nil {
		t.Fatal(err)
	}
	return pe.GetExpr()
}

func BenchmarkHeaderEquals(b *testing.B) {
	e := mustEnv(b)
	p, err := e.CompileText(`request.headers['x'] == 'y'`)
	if err != nil {
		b.Fatal(err)
	}
	a := testActivation()
	b.ReportAllocs()
	for b.Loop() {
		if !p.Matches(a) {
			b.Fatal("no match")
		}
	}
}
