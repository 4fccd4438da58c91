package router

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// appendAction is HeaderValueOption.append_action.
type appendAction uint8

const (
	appendIfExistsOrAdd appendAction = iota
	addIfAbsent
	overwriteIfExistsOrAdd
	overwriteIfExists
)

// headerOps are the header mutations of one level (route, virtual host or
// route configuration) for one direction.
type headerOps struct {
	remove []string
	add    []headerAdd
}

// headerAdd is one compiled HeaderValueOption.
type headerAdd struct {
	name string
	// value is the literal value; format is set instead when the value
	// has % operators.
	value     string
	format    *accesslog.Formatter
	action    appendAction
	keepEmpty bool
}

// compileHeaderOps compiles one level's *_headers_to_add and
// *_headers_to_remove; addField and removeField are the fields' names for
// errors. It returns nil when the level has nothing to do.
func compileHeaderOps(adds []*corev3.HeaderValueOption, removes []string, addField, removeField string) (*headerOps, error) {
	return compileHeaderOpsWith(adds, removes, addField, removeField, nil)
}

// compileHeaderOpsWith is compileHeaderOps with the operators of formatter
// extensions in the values.
func compileHeaderOpsWith(adds []*corev3.HeaderValueOption, removes []string, addField, removeField string, fm accesslog.Formatters) (*headerOps, error) {
	if len(adds) == 0 && len(removes) == 0 {
		return nil, nil
	}
	ops := &headerOps{}
	for i, name := range removes {
		name = strings.ToLower(name)
		if err := modifiable(name); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", removeField, i, err)
		}
		ops.remove = append(ops.remove, name)
	}
	for i, o := range adds {
		a, err := compileHeaderAdd(o, fm)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].%w", addField, i, err)
		}
		ops.add = append(ops.add, a)
	}
	return ops, nil
}

func compileHeaderAdd(o *corev3.HeaderValueOption, fm accesslog.Formatters) (headerAdd, error) {
	h := o.GetHeader()
	a := headerAdd{name: strings.ToLower(h.GetKey()), keepEmpty: o.GetKeepEmptyValue()}
	if err := modifiable(a.name); err != nil {
		return a, fmt.Errorf("header.key: %w", err)
	}
	value, err := HeaderValueText(h)
	if err != nil {
		return a, fmt.Errorf("header.%w", err)
	}
	f, err := accesslog.TextWith(accesslog.TranslateLegacyHeaderFormat(value), true, fm)
	if err != nil {
		return a, fmt.Errorf("header.value: %w", err)
	}
	if lit, ok := f.Literal(); ok {
		a.value = lit
	} else {
		a.format = f
	}
	legacy := legacyAppend(o)
	switch {
	case legacy != nil && o.GetAppendAction() != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
		return a, errors.New("append: cannot be set together with append_action")
	case legacy != nil:
		// The deprecated boolean: true appends, false overwrites.
		if !legacy.GetValue() {
			a.action = overwriteIfExistsOrAdd
		}
	default:
		switch act := o.GetAppendAction(); act {
		case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
			a.action = appendIfExistsOrAdd
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			a.action = addIfAbsent
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
			a.action = overwriteIfExistsOrAdd
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
			a.action = overwriteIfExists
		default:
			return a, fmt.Errorf("append_action: %v is not supported by Outrigger", act)
		}
	}
	return a, nil
}

// modifiable refuses what Envoy refuses to add or remove: pseudo-headers
// and host.
func modifiable(name string) error {
	switch {
	case name == "":
		return errors.New("a header name is required")
	case name[0] == ':' || name == "host":
		return fmt.Errorf("%q cannot be modified (pseudo-headers and host are reserved)", name)
	}
	return nil
}

// opsReadUpstreamConnection reports whether a format of the levels may read
// the entry's upstream connection.
func opsReadUpstreamConnection(levels []*headerOps) bool {
	for _, ops := range levels {
		if ops == nil {
			continue
		}
		for i := range ops.add {
			if ops.add[i].format.ReadsUpstreamConnection() {
				return true
			}
		}
	}
	return false
}

// ReadsUpstreamConnection reports whether a value format of the mutation
// may read the entry's upstream connection.
func (m HeaderMutation) ReadsUpstreamConnection() bool {
	return m.ops != nil && opsReadUpstreamConnection([]*headerOps{m.ops})
}

// apply runs one level's mutations as Envoy's HeaderParser does: removals
// first; then every entry is evaluated against the headers as they are
// now, overwrites are applied, and appends last.
func (ops *headerOps) apply(h HeaderEditor, e *accesslog.Entry) {
	for _, name := range ops.remove {
		h.Del(name)
	}
	if len(ops.add) == 0 {
		return
	}
	// applies records, per entry, whether it takes effect: ADD_IF_ABSENT
	// and OVERWRITE_IF_EXISTS depend on whether their header was there
	// before this level changed anything.
	var small [64]bool
	applies := small[:0]
	if len(ops.add) > len(small) {
		applies = make([]bool, 0, len(ops.add))
	}
	for i := range ops.add {
		a := &ops.add[i]
		on := true
		if a.action == addIfAbsent || a.action == overwriteIfExists {
			_, present := h.Get(a.name)
			on = present == (a.action == overwriteIfExists)
		}
		applies = append(applies, on)
	}
	var buf [256]byte
	for _, overwrites := range [2]bool{true, false} {
		for i := range ops.add {
			a := &ops.add[i]
			if !applies[i] || a.overwrites() != overwrites {
				continue
			}
			v, ok := a.render(buf[:0], e)
			switch {
			case !ok:
			case overwrites:
				h.Set(a.name, v)
			default:
				h.Add(a.name, v)
			}
		}
	}
}

// overwrites reports whether the entry replaces the header's values
// rather than adding one.
func (a *headerAdd) overwrites() bool {
	return a.action == overwriteIfExistsOrAdd || a.action == overwriteIfExists
}

// render is the entry's value and whether to use it: an empty value is
// skipped unless keep_empty_value. Only values with operators allocate.
func (a *headerAdd) render(buf []byte, e *accesslog.Entry) (string, bool) {
	v := a.value
	if a.format != nil {
		if e == nil {
			e = &accesslog.Entry{}
		}
		v = string(a.format.AppendValue(buf, e))
	}
	return v, v != "" || a.keepEmpty
}

// HeaderMutation is a compiled list of HeaderValueOptions and header
// names to remove, applied as a route's header edits are: for the filters
// that add headers of their own (the local rate limit filter's
// response_headers_to_add). The zero value does nothing.
type HeaderMutation struct {
	ops *headerOps
}

// CompileHeaderMutation compiles adds and removes; addField and
// removeField name them in errors ("response_headers_to_add[0].header.key:
// ...").
func CompileHeaderMutation(adds []*corev3.HeaderValueOption, removes []string, addField, removeField string) (HeaderMutation, error) {
	return CompileHeaderMutationWith(adds, removes, addField, removeField, nil)
}

// CompileHeaderMutationWith is CompileHeaderMutation whose values may also
// use the operators of the formatter extensions fm (a message's
// formatters field).
func CompileHeaderMutationWith(adds []*corev3.HeaderValueOption, removes []string, addField, removeField string, fm accesslog.Formatters) (HeaderMutation, error) {
	ops, err := compileHeaderOpsWith(adds, removes, addField, removeField, fm)
	return HeaderMutation{ops: ops}, err
}

// Apply edits h: removals first, then additions, as Envoy's HeaderParser
// does. e supplies the values of % operators; nil renders them from an
// empty entry.
func (m HeaderMutation) Apply(h HeaderEditor, e *accesslog.Entry) {
	if m.ops != nil {
		m.ops.apply(h, e)
	}
}

// Empty reports whether the mutation does nothing.
func (m HeaderMutation) Empty() bool { return m.ops == nil }
