package rbacengine

import (
	"strings"
	"testing"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	celgo "github.com/google/cel-go/cel"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
)

// parsedExpr is the protobuf AST of an expression, the form a policy's
// condition carries (what a control plane sends).
func parsedExpr(t *testing.T, text string) *exprpb.Expr {
	t.Helper()
	env, err := celgo.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Parse(text)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	pe, err := celgo.AstToParsedExpr(ast)
	if err != nil {
		t.Fatal(err)
	}
	return pe.GetExpr()
}

// conditionPolicy is a policy that matches any request and connection,
// and the condition.
func conditionPolicy(cond *exprpb.Expr, checked bool) *rbacv3.Policy {
	p := &rbacv3.Policy{
		Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}},
		Principals:  []*rbacv3.Principal{{Identifier: &rbacv3.Principal_Any{Any: true}}},
	}
	if checked {
		p.CheckedCondition = &exprpb.CheckedExpr{Expr: cond}
	} else {
		p.Condition = cond
	}
	return p
}

// TestConditions checks Envoy's semantics: a policy matches when its
// permissions, principals and condition all match, and a condition that
// fails to evaluate (an attribute the request does not have) does not
// match.
func TestConditions(t *testing.T) {
	tests := map[string]struct {
		expr string
		want bool
	}{
		"a header":                     {`request.headers['x-team'] == 'blue'`, true},
		"another header value":         {`request.headers['x-team'] == 'red'`, false},
		"a missing header is an error": {`request.headers['x-absent'] == 'blue'`, false},
		"a missing header, negated":    {`!(request.headers['x-absent'] == 'blue')`, false},
		"the source address":           {`source.address.startsWith('10.1.2.3:')`, true},
		"the destination port":         {`destination.port == 8080 && destination.address == '127.0.0.1:8080'`, true},
		"the path and method":          {`request.url_path == '/api/v1' && request.method == 'GET' && request.query == 'x=1'`, true},
		"the SNI":                      {`connection.requested_server_name == 'api.example.com'`, true},
		"the response is absent":       {`response.code == 200`, false},
		"not a boolean":                {`request.path`, false},
	}
	for name, tc := range tests {
		for _, checked := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				for _, action := range []rbacv3.RBAC_Action{rbacv3.RBAC_ALLOW, rbacv3.RBAC_DENY} {
					e, err := Compile(&rbacv3.RBAC{Action: action, Policies: map[string]*rbacv3.Policy{"p": conditionPolicy(parsedExpr(t, tc.expr), checked)}})
					if err != nil {
						t.Fatal(err)
					}
					if e.Needs() != NeedAddresses|NeedTLS|NeedRoute {
						t.Errorf("needs %b", e.Needs())
					}
					d := e.Evaluate(request())
					if d.Matched != tc.want {
						t.Errorf("%s (checked %v): matched = %v, want %v", action, checked, d.Matched, tc.want)
					}
					if want := tc.want == (action == rbacv3.RBAC_ALLOW); d.Allowed != want {
						t.Errorf("%s: allowed = %v", action, d.Allowed)
					}
				}
			})
		}
	}
}

// TestConditionPeer reads the client certificate's identity.
func TestConditionPeer(t *testing.T) {
	e, err := Compile(&rbacv3.RBAC{Policies: map[string]*rbacv3.Policy{
		"p": conditionPolicy(parsedExpr(t, `connection.mtls && connection.uri_san_peer_certificate == 'spiffe://acme/web'`), false)}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Evaluate(request()).Matched {
		t.Error("matched without a peer certificate")
	}
	if !e.Evaluate(withPeer(request(), "spiffe://acme/web", "", "web")).Matched {
		t.Error("did not match the peer's URI SAN")
	}
}

func TestConditionErrors(t *testing.T) {
	both := conditionPolicy(parsedExpr(t, `true`), false)
	both.CheckedCondition = &exprpb.CheckedExpr{Expr: parsedExpr(t, `true`)}
	for want, p := range map[string]*rbacv3.Policy{
		`policies["p"].checked_condition: only one of condition and checked_condition`: both,
		`policies["p"].checked_condition: expr: empty expression`:                      {CheckedCondition: &exprpb.CheckedExpr{}},
	} {
		_, err := Compile(&rbacv3.RBAC{Policies: map[string]*rbacv3.Policy{"p": p}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
}

// BenchmarkCondition is the allow path of a policy whose only test is a
// condition on a header.
func BenchmarkCondition(b *testing.B) {
	env, _ := celgo.NewEnv()
	ast, _ := env.Parse(`request.headers['x-team'] == 'blue'`)
	pe, _ := celgo.AstToParsedExpr(ast)
	e, err := Compile(&rbacv3.RBAC{Policies: map[string]*rbacv3.Policy{"p": conditionPolicy(pe.GetExpr(), false)}})
	if err != nil {
		b.Fatal(err)
	}
	in := request()
	b.ReportAllocs()
	for b.Loop() {
		if !e.Evaluate(in).Allowed {
			b.Fatal("denied")
		}
	}
}
