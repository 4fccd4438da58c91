package admin

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// nameFields are the fields that name a dumped resource, looked up in the
// resource's record first (a DynamicListener's or a secret's name), then
// in the configuration its Any holds: Listener, Cluster,
// RouteConfiguration, ScopedRouteConfiguration, Secret and
// TypedExtensionConfig have a name, ClusterLoadAssignment a cluster_name.
var nameFields = []protoreflect.Name{"name", "cluster_name"}

// nameMatcher is ?name_regex=: an RE2 pattern that must match a resource's
// whole name, as Envoy's RE2 matchers do (".*listener.*" for a partial
// match). A nil matcher keeps everything.
type nameMatcher struct{ re *regexp.Regexp }

// compileNameRegex compiles ?name_regex=; "" keeps every resource. The
// error's text is Envoy's 400 body.
func compileNameRegex(pattern string) (*nameMatcher, error) {
	if pattern == "" {
		return nil, nil
	}
	// The pattern alone first, so that the error quotes only what the
	// client wrote.
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, &badQuery{fmt.Sprintf("INVALID_ARGUMENT: Error while parsing name_regex from %s: %s",
			pattern, re2Reason(err))}
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, &badQuery{fmt.Sprintf("INVALID_ARGUMENT: Error while parsing name_regex from %s: %s",
			pattern, re2Reason(err))}
	}
	return &nameMatcher{re: re}, nil
}

// keep reports whether the resource record msg is shown.
func (m *nameMatcher) keep(msg protoreflect.Message) bool {
	return m == nil || m.re.MatchString(resourceName(msg))
}

// filter drops, from every list of resources in the dump msg, the records
// whose name does not match. A dump without lists (the bootstrap) is
// unchanged.
func (m *nameMatcher) filter(msg protoreflect.Message) {
	if m == nil {
		return
	}
	fields := msg.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !fd.IsList() || fd.Message() == nil || !msg.Has(fd) {
			continue
		}
		list := msg.Mutable(fd).List()
		kept := 0
		for j := range list.Len() {
			if v := list.Get(j); m.keep(v.Message()) {
				list.Set(kept, v)
				kept++
			}
		}
		list.Truncate(kept)
	}
}

// resourceName is the name of a dumped resource record: its own name field,
// else the name of the configuration packed in its Any, else "".
func resourceName(msg protoreflect.Message) string {
	if name, ok := nameOf(msg); ok {
		return name
	}
	fields := msg.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsList() || fd.IsMap() || fd.Message() == nil ||
			fd.Message().FullName() != anyFullName || !msg.Has(fd) {
			continue
		}
		inner, err := unpackAny(msg.Get(fd).Message())
		if err != nil {
			continue
		}
		if name, ok := nameOf(inner.ProtoReflect()); ok {
			return name
		}
	}
	return ""
}

// nameOf returns the first non-empty name field of msg.
func nameOf(msg protoreflect.Message) (string, bool) {
	for _, n := range nameFields {
		fd := msg.Descriptor().Fields().ByName(n)
		if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
			continue
		}
		if s := msg.Get(fd).String(); s != "" {
			return s, true
		}
	}
	return "", false
}
