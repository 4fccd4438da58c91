package grpcjsontranscoder

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// method is a gRPC method the filter transcodes to.
type method struct {
	desc protoreflect.MethodDescriptor
	// grpcPath is "/<package.Service>/<Method>", the upstream :path.
	grpcPath string
}

// rule is one HTTP rule of a method: the HTTP method and path template
// that select it, and where the request body and the response body go.
type rule struct {
	// httpMethod is GET, POST... or a custom kind ("*" for any).
	httpMethod string
	tmpl       *template
	method     *method
	// body is the rule's body: "" for none, "*" for the whole message,
	// else a field path, resolved as bodyPath.
	body     string
	bodyPath []protoreflect.FieldDescriptor
	// httpBody: the body goes raw into a google.api.HttpBody (the
	// message, or the body field).
	httpBody bool
	// responsePath is response_body's field path (to a
	// google.api.HttpBody), nil for the whole message.
	responsePath []protoreflect.FieldDescriptor
	// ambiguous: another rule has the same method and path shape; as in
	// the transcoding library, a request of that shape then matches no
	// rule.
	ambiguous bool
}

// shape is the key of a rule's method and path template for finding
// duplicates: the variables' names do not take part in matching.
func (r *rule) shape() string {
	var b strings.Builder
	b.WriteString(r.httpMethod)
	for _, sg := range r.tmpl.segments {
		b.WriteByte('/')
		switch sg.kind {
		case segStar:
			b.WriteString("*")
		case segDoubleStar:
			b.WriteString("**")
		default:
			b.WriteString(sg.literal)
		}
	}
	b.WriteByte(':')
	b.WriteString(r.tmpl.verb)
	return b.String()
}

// matcher finds the rule of a request, as the transcoding library's path
// matcher does.
type matcher struct {
	rules []*rule
	// verbs are the custom verbs of the templates: a request path's
	// ":verb" is one only if registered, or unregisteredVerb is set
	// (match_unregistered_custom_verb).
	verbs            map[string]bool
	unregisteredVerb bool
	spec             unescapeSpec
	// plus: '+' in query values is a space (query_param_unescape_plus).
	plus bool
	// ignored are ignored_query_parameters.
	ignored map[string]bool
	// shapes finds the rule registered with a shape (rule.shape).
	shapes map[string]*rule
}

// add registers a rule; one with the shape of a rule registered before
// makes that rule ambiguous.
func (m *matcher) add(r *rule) {
	if m.shapes == nil {
		m.shapes = map[string]*rule{}
	}
	key := r.shape()
	if prev, ok := m.shapes[key]; ok {
		prev.ambiguous = true
		return
	}
	m.shapes[key] = r
	m.rules = append(m.rules, r)
}

// lookup finds the rule for method and path (query string included) and
// the bindings of its path variables and query parameters.
func (m *matcher) lookup(httpMethod, path string) (*rule, []binding) {
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	parts, verb := m.split(path)
	var best *rule
	var bestBindings []binding
	var bestScore []segKind
	for _, r := range m.rules {
		if r.httpMethod != httpMethod && r.httpMethod != "*" {
			continue
		}
		bs, score, ok := r.tmpl.match(parts, verb, m.spec)
		if !ok {
			continue
		}
		if best == nil || moreSpecific(score, bestScore) {
			best, bestBindings, bestScore = r, bs, score
		}
	}
	if best == nil || best.ambiguous {
		return nil, nil
	}
	return best, m.queryBindings(query, bestBindings)
}

// split splits a request path into its segments and custom verb: the
// last segment's ":verb" when the verb is registered (or any with
// match_unregistered_custom_verb); trailing empty segments are dropped.
func (m *matcher) split(path string) ([]string, string) {
	verb := ""
	colon, slash := strings.LastIndexByte(path, ':'), strings.LastIndexByte(path, '/')
	if colon >= 0 && colon > slash {
		if v := path[colon+1:]; m.unregisteredVerb || m.verbs[v] {
			verb, path = v, path[:colon]
		}
	}
	var parts []string
	if len(path) > 1 {
		parts = strings.Split(path[1:], "/")
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts, verb
}

// queryBindings appends the bindings of the query parameters
// "field.path=value" (those without '=' and the ignored ones left out).
func (m *matcher) queryBindings(query string, bs []binding) []binding {
	for query != "" {
		var p string
		p, query, _ = strings.Cut(query, "&")
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" || m.ignored[name] {
			continue
		}
		bs = append(bs, binding{
			fieldPath: strings.Split(name, "."),
			value:     unescapeWith(value, allCharacters, m.plus),
			query:     true,
		})
	}
	return bs
}
