package extauthz

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
)

// vetRequestEdits applies validate_mutations and
// decoder_header_mutation_rules to an allowed answer's request header
// edits and removals, as Envoy's filter does: an edit whose name or
// value is invalid (validate_mutations), or that the rules refuse with
// disallow_is_error, rejects the answer (ok false); one the rules refuse
// otherwise is dropped. An invalid name to remove, or one the rules
// refuse, is dropped (the rules' errors still reject). Without either
// setting the edits come back as they are.
func (c *config) vetRequestEdits(resp *response) (edits []headerEdit, remove []string, ok bool) {
	if !c.validateMutations && c.mutationRules == nil {
		return resp.requestHeaders, resp.headersToRemove, true
	}
	edits = make([]headerEdit, 0, len(resp.requestHeaders))
	for _, e := range resp.requestHeaders {
		op := mutationrules.Set
		if e.action == actionAppend {
			op = mutationrules.Append
		}
		switch c.checkMutation(op, e.name, e.value) {
		case mutationrules.OK:
			edits = append(edits, e)
		case mutationrules.Fail:
			return nil, nil, false
		}
	}
	remove = make([]string, 0, len(resp.headersToRemove))
	for _, name := range resp.headersToRemove {
		name = strings.ToLower(name)
		if c.validateMutations && !mutationrules.ValidHeaderName(name) {
			continue
		}
		if c.mutationRules == nil {
			remove = append(remove, name)
			continue
		}
		switch c.mutationRules.Check(mutationrules.Remove, name, "") {
		case mutationrules.OK:
			remove = append(remove, name)
		case mutationrules.Fail:
			return nil, nil, false
		}
	}
	return edits, remove, true
}

// checkMutation is Envoy's validateAndCheckDecoderHeaderMutation: an
// invalid name or value fails with validate_mutations, then the rules
// decide (no rules: OK).
func (c *config) checkMutation(op mutationrules.Op, name, value string) mutationrules.Result {
	if c.validateMutations && !validHeader(name, value) {
		return mutationrules.Fail
	}
	if c.mutationRules == nil {
		return mutationrules.OK
	}
	return c.mutationRules.Check(op, name, value)
}

// validHeader is Envoy's headerNameIsValid and headerValueIsValid.
func validHeader(name, value string) bool {
	return mutationrules.ValidHeaderName(name) && mutationrules.ValidHeaderValue(value)
}

// validHeaders reports whether every edit is a valid header.
func validHeaders(edits []headerEdit) bool {
	for _, e := range edits {
		if !validHeader(e.name, e.value) {
			return false
		}
	}
	return true
}

// validQuery reports whether the query parameters to set are URL-encoded,
// as validate_mutations asks (Envoy's queryParameterIsUrlEncoded: only
// letters, digits, "*-._" and %-escapes).
func validQuery(set [][2]string) bool {
	for _, kv := range set {
		if !urlEncoded(kv[0]) || !urlEncoded(kv[1]) {
			return false
		}
	}
	return true
}

// urlEncoded reports whether s needs no more percent-encoding as an
// x-www-form-urlencoded query parameter.
func urlEncoded(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '*' || c == '-' || c == '.' || c == '_':
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// clearsRouteCache reports whether an allowed answer clears the route
// cache: clear_route_cache, and with clear_route_cache_headers an edit or
// removal of one of those headers or any query change, else any edit at
// all. As in Envoy, the answer's edits count before the mutation rules
// sort them.
func (c *config) clearsRouteCache(resp *response) bool {
	if !c.clearRouteCache {
		return false
	}
	if len(resp.queryToSet) > 0 || len(resp.queryToRemove) > 0 {
		return true
	}
	if c.routeCacheHeaders == nil {
		return len(resp.requestHeaders) > 0 || len(resp.headersToRemove) > 0
	}
	for _, e := range resp.requestHeaders {
		if c.routeCacheHeaders[e.name] {
			return true
		}
	}
	for _, name := range resp.headersToRemove {
		if c.routeCacheHeaders[strings.ToLower(name)] {
			return true
		}
	}
	return false
}
