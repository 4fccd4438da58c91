// Package mutationrules decides header mutations under a
// HeaderMutationRules (envoy.config.common.mutation_rules.v3), as Envoy's
// filters/common/mutation_rules Checker does, for the filters whose
// external services edit headers (ext_proc, ext_authz).
package mutationrules

import (
	"errors"
	"fmt"
	"strings"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Result is what the rules say of one header mutation.
type Result uint8

const (
	// OK applies the mutation.
	OK Result = iota
	// Ignore skips the mutation.
	Ignore
	// Fail fails the whole message (disallow_is_error).
	Fail
)

// Op is the kind of mutation checked.
type Op uint8

const (
	// Set sets or adds a header.
	Set Op = iota
	// Append appends a value to a header.
	Append
	// Remove removes a header.
	Remove
)

// Rules is a compiled HeaderMutationRules, deciding as Envoy's
// mutation_rules Checker does.
type Rules struct {
	allowRouting, allowEnvoy, disallowSystem, disallowAll, disallowIsError bool
	allow, disallow                                                        *router.StringMatch
}

// Compile compiles a HeaderMutationRules (nil: the defaults); errors
// name the field below it.
func Compile(r *mutationrulesv3.HeaderMutationRules) (*Rules, error) {
	c := &Rules{
		allowRouting:    r.GetAllowAllRouting().GetValue(),
		allowEnvoy:      r.GetAllowEnvoy().GetValue(),
		disallowSystem:  r.GetDisallowSystem().GetValue(),
		disallowAll:     r.GetDisallowAll().GetValue(),
		disallowIsError: r.GetDisallowIsError().GetValue(),
	}
	if c.allowRouting {
		// The connection manager keeps the authority, method and scheme
		// apart from the headers a filter edits.
		return nil, errors.New("allow_all_routing: only false is supported by Outrigger (host, :authority, :method and :scheme cannot be changed by an external service)")
	}
	var err error
	if e := r.GetAllowExpression(); e != nil {
		if c.allow, err = compileRegex(e); err != nil {
			return nil, fmt.Errorf("allow_expression.%w", err)
		}
	}
	if e := r.GetDisallowExpression(); e != nil {
		if c.disallow, err = compileRegex(e); err != nil {
			return nil, fmt.Errorf("disallow_expression.%w", err)
		}
	}
	return c, nil
}

// compileRegex compiles a RegexMatcher as a whole-value match.
func compileRegex(e *matcherv3.RegexMatcher) (*router.StringMatch, error) {
	m, err := router.CompileStringMatch(&matcherv3.StringMatcher{
		MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: e},
	})
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "safe_regex."))
	}
	return &m, nil
}

// Check decides one mutation of header name (lower case) to value.
func (r *Rules) Check(op Op, name, value string) Result {
	if r.allowed(op, name) && (op == Remove || validValue(name, value)) {
		return OK
	}
	if r.disallowIsError {
		return Fail
	}
	return Ignore
}

// allowed is Envoy's isAllowed.
func (r *Rules) allowed(op Op, name string) bool {
	if op == Remove && (strings.HasPrefix(name, ":") || name == "host") {
		// Never removable.
		return false
	}
	if r.disallow != nil && r.disallow.Matches(name) {
		return false
	}
	if r.allow != nil && r.allow.Matches(name) {
		return true
	}
	if r.disallowAll {
		return false
	}
	if !r.allowRouting && routingHeader(name) {
		return false
	}
	if strings.HasPrefix(name, ":") && (op == Append || r.disallowSystem) {
		return false
	}
	if !r.allowEnvoy && strings.HasPrefix(name, "x-envoy") {
		return false
	}
	return true
}

// routingHeader reports the headers allow_all_routing guards.
func routingHeader(name string) bool {
	switch name {
	case "host", ":authority", ":method", ":scheme":
		return true
	}
	return false
}

// validValue is Envoy's isValidValue: header values free of control
// characters, and a :status that is a final status.
func validValue(name, value string) bool {
	if !strings.HasPrefix(name, ":") && !ValidHeaderValue(value) {
		return false
	}
	if name == ":status" {
		code, ok := parseStatus(value)
		return ok && code >= 200
	}
	return true
}

// ValidHeaderValue reports a value without NUL, CR or LF.
func ValidHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\x00\r\n")
}

// ValidHeaderName reports a non-empty token of header name characters
// (a leading ':' allowed for pseudo-headers).
func ValidHeaderName(n string) bool {
	if n == "" {
		return false
	}
	body := strings.TrimPrefix(n, ":")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// parseStatus parses a decimal status of up to three digits.
func parseStatus(v string) (int, bool) {
	if len(v) == 0 || len(v) > 3 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int(v[i]-'0')
	}
	return n, true
}
