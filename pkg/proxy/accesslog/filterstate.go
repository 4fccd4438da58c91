package accesslog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// FilterStateObject is a value a filter left in a request's filter state
// (Envoy's StreamInfo::FilterState::Object), which %FILTER_STATE% shows.
// Its methods may be called while the filter still updates it.
type FilterStateObject interface {
	// FilterStateString is the PLAIN serialization, false when the
	// object has none.
	FilterStateString() (string, bool)
	// FilterStateProto is the TYPED serialization, nil when the object
	// has none.
	FilterStateProto() proto.Message
}

// FilterStateFielder is a FilterStateObject with named fields (Envoy's
// hasFieldSupport and getField), which %FILTER_STATE(KEY:FIELD:NAME)%
// shows.
type FilterStateFielder interface {
	// FilterStateField is the named field's value, a string or an
	// int64; false when the object has no such field (or no value for
	// it yet).
	FilterStateField(name string) (any, bool)
}

// filterStateRef is a compiled %FILTER_STATE(KEY:F)%: the key, and
// whether F is PLAIN (else TYPED, the default), or the field of
// KEY:FIELD:NAME.
type filterStateRef struct {
	key   string
	plain bool
	field string
}

// parseFilterStateOperator reads FILTER_STATE's arguments: KEY, then
// optionally PLAIN or TYPED, or FIELD and a field name.
func parseFilterStateOperator(args string, hasArgs bool) (*filterStateRef, error) {
	if !hasArgs || args == "" {
		return nil, fmt.Errorf("%%FILTER_STATE(...)%% needs a key")
	}
	parts := strings.SplitN(args, ":", 3)
	ref := &filterStateRef{key: parts[0]}
	format := ""
	if len(parts) > 1 {
		format = parts[1]
	}
	switch {
	case format == "FIELD":
		if len(parts) < 3 || parts[2] == "" {
			return nil, fmt.Errorf("%%FILTER_STATE(%s)%%: FIELD needs a field name (KEY:FIELD:NAME)", args)
		}
		ref.field = parts[2]
	case len(parts) > 2:
		return nil, fmt.Errorf("%%FILTER_STATE(%s)%%: too many arguments (KEY, then PLAIN or TYPED)", args)
	case format == "" || format == "TYPED":
	case format == "PLAIN":
		ref.plain = true
	default:
		return nil, fmt.Errorf("%%FILTER_STATE(%s)%%: invalid format %q (PLAIN or TYPED)", args, format)
	}
	return ref, nil
}

// appendText appends the object's PLAIN form, or its TYPED form as
// compact JSON text; false when the request has no object under the key,
// or the object has no such form.
func (r *filterStateRef) appendText(dst []byte, e *Entry) ([]byte, bool) {
	obj := e.FilterStateObject(r.key)
	if obj == nil {
		return dst, false
	}
	if r.field != "" {
		v, ok := r.fieldValue(obj)
		switch v := v.(type) {
		case string:
			return append(dst, v...), ok
		case int64:
			return strconv.AppendInt(dst, v, 10), ok
		}
		return dst, false
	}
	if r.plain {
		s, ok := obj.FilterStateString()
		if !ok {
			return dst, false
		}
		return append(dst, s...), true
	}
	return appendProtoJSON(dst, obj.FilterStateProto())
}

// appendTyped appends the value in a typed JSON format: the TYPED form
// as a JSON object, the PLAIN form as a JSON string.
func (r *filterStateRef) appendTyped(dst []byte, e *Entry) ([]byte, bool) {
	if r.field != "" {
		// A string field is a JSON string, a number a JSON number.
		v, _ := r.fieldValue(e.FilterStateObject(r.key))
		if s, ok := v.(string); ok {
			start := len(dst)
			return quoteInPlace(append(dst, s...), start), true
		}
		return r.appendText(dst, e)
	}
	if r.plain {
		start := len(dst)
		dst, ok := r.appendText(dst, e)
		if !ok {
			return dst, false
		}
		return quoteInPlace(dst, start), true
	}
	return r.appendText(dst, e)
}

// fieldValue is the object's field, when it has fields.
func (r *filterStateRef) fieldValue(obj FilterStateObject) (any, bool) {
	f, ok := obj.(FilterStateFielder)
	if !ok {
		return nil, false
	}
	return f.FilterStateField(r.field)
}

// appendProtoJSON appends m's proto3 JSON form, compact (protojson's
// spacing varies on purpose).
func appendProtoJSON(dst []byte, m proto.Message) ([]byte, bool) {
	if m == nil {
		return dst, false
	}
	raw, err := protojson.Marshal(m)
	if err != nil {
		return dst, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return dst, false
	}
	return append(dst, buf.Bytes()...), true
}

// FilterStateReader reads a connection's filter state (a
// netfilter.FilterStater): the parent of its requests' filter state.
type FilterStateReader interface {
	FilterState(key string) (any, bool)
}

// FilterStateObject is the object under key: the entry's own, else its
// connection's (ConnFilterState), as Envoy's filter state reads through
// to its parent; nil when there is none.
func (e *Entry) FilterStateObject(key string) FilterStateObject {
	if obj := e.FilterState[key]; obj != nil {
		return obj
	}
	if e.ConnFilterState == nil {
		return nil
	}
	v, _ := e.ConnFilterState.FilterState(key)
	obj, _ := v.(FilterStateObject)
	return obj
}

// SetFilterState keeps obj under key in the entry's filter state,
// replacing any object there.
func (e *Entry) SetFilterState(key string, obj FilterStateObject) {
	if e.FilterState == nil {
		e.FilterState = map[string]FilterStateObject{}
	}
	e.FilterState[key] = obj
}

// AppendFilterStateJSON appends the JSON form of the TYPED serialization
// of the object under key (what Envoy's gRPC access loggers record for
// filter_state_objects_to_log); false when there is no such object or it
// has no TYPED serialization.
func (e *Entry) AppendFilterStateJSON(dst []byte, key string) ([]byte, bool) {
	obj := e.FilterStateObject(key)
	if obj == nil {
		return dst, false
	}
	return appendProtoJSON(dst, obj.FilterStateProto())
}
