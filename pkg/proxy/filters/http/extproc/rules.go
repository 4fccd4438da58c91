package extproc

import (
	"errors"
	"fmt"
	"strings"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// checkResult is what the rules say of one header mutation.
type checkResult uint8

const (
	checkOK checkResult = iota
	// checkIgnore skips the mutation (counted as rejected).
	checkIgnore
	// checkFail fails the whole message (disallow_is_error).
	checkFail
)

// checkOp is the kind of mutation checked.
type checkOp uint8

const (
	opSet checkOp = iota
	opAppend
	opRemove
)

// rules is a compiled HeaderMutationRules, deciding as Envoy's
// mutation_rules Checker does.
type rules struct {
	allowRouting, allowEnvoy, disallowSystem, disallowAll, disallowIsError bool
	allow, disallow                                                        *router.StringMatch
}

// compileRules compiles mutation_rules; errors name the field below it.
func compileRules(r *mutationrulesv3.HeaderMutationRules) (*rules, error) {
	c := &rules{
		allowRouting:    r.GetAllowAllRouting().GetValue(),
		allowEnvoy:      r.GetAllowEnvoy().GetValue(),
		disallowSystem:  r.GetDisallowSystem().GetValue(),
		disallowAll:     r.GetDisallowAll().GetValue(),
		disallowIsError: r.GetDisallowIsError().GetValue(),
	}
	if c.allowRouting {
		// The connection manager keeps the authority, method and scheme
		// apart from the headers a filter edits.
		return nil, errors.New("allow_all_routing: only false is supported by Outrigger (host, :authority, :method and :scheme cannot be changed by a processor)")
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

// check decides one mutation of header name (lower case) to value.
func (r *rules) check(op checkOp, name, value string) checkResult {
	if r.allowed(op, name) && (op == opRemove || validValue(name, value)) {
		return checkOK
	}
	if r.disallowIsError {
		return checkFail
	}
	return checkIgnore
}

// allowed is Envoy's isAllowed.
func (r *rules) allowed(op checkOp, name string) bool {
	if op == opRemove && (strings.HasPrefix(name, ":") || name == "host") {
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
	if strings.HasPrefix(name, ":") && (op == opAppend || r.disallowSystem) {
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
	if !strings.HasPrefix(name, ":") && !validHeaderValue(value) {
		return false
	}
	if name == ":status" {
		code, ok := parseStatus(value)
		return ok && code >= 200
	}
	return true
}

// validHeaderValue reports a value without NUL, CR or LF.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\x00\r\n")
}

// validHeaderName reports a non-empty token of header name characters
// (a leading ':' allowed for pseudo-headers).
func validHeaderName(n string) bool {
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
