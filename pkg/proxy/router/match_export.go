package router

import routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

// Match is a compiled RouteMatch used outside a route table: filters that
// select requests the way routes do (jwt_authn's rules).
type Match struct {
	m routeMatch
}

// CompileMatch compiles a RouteMatch; errors name the field below it.
func CompileMatch(m *routev3.RouteMatch) (*Match, error) {
	rm, err := compileMatch(m)
	if err != nil {
		return nil, err
	}
	return &Match{m: rm}, nil
}

// Matches reports whether req matches, as a route with this match would.
func (m *Match) Matches(req *Request) bool { return m.m.matches(req) }
