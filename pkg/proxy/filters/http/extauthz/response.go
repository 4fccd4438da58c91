package extauthz

import (
	"context"
	"io"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// checker is an authorization service as the filter calls it.
type checker interface {
	// check asks the service about req; ctx carries the timeout.
	// rendered are the values of an HTTP service's headers_to_add with
	// command operators, rendered for this request (nil for none). It
	// always returns a response: a failure is an error response.
	check(ctx context.Context, req *authv3.CheckRequest, rendered []string) *response
	io.Closer
}

// checkStatus is the outcome of a check.
type checkStatus uint8

const (
	statusOK checkStatus = iota
	statusDenied
	statusError
)

// headerAction is how a header edit applies, as Envoy's
// HeaderValueOption says.
type headerAction uint8

const (
	// actionAdd adds a value (APPEND_IF_EXISTS_OR_ADD).
	actionAdd headerAction = iota
	// actionSet replaces every value or adds it
	// (OVERWRITE_IF_EXISTS_OR_ADD, append: false).
	actionSet
	// actionAddIfAbsent adds only when absent (ADD_IF_ABSENT).
	actionAddIfAbsent
	// actionOverwriteIfExists replaces only when present
	// (OVERWRITE_IF_EXISTS).
	actionOverwriteIfExists
	// actionAppend joins the value to the present one with "," or adds
	// it (the deprecated append: true).
	actionAppend
)

// headerEdit is one header edit of a check's answer.
type headerEdit struct {
	name, value string
	action      headerAction
}

// response is a check's answer.
type response struct {
	status checkStatus
	// callErr is the error of a gRPC check that got no answer (nil when
	// the service answered), for the check's span.
	callErr error
	// http is what an HTTP service's check got, for the check's span.
	http httpAnswer
	// httpStatus is the status of a denied (or failed) request's local
	// reply; 0 means the default (403, or status_on_error).
	httpStatus int
	body       string
	// requestHeaders edit the request going upstream, headersToRemove
	// are removed from it, and responseHeaders edit the response the
	// client gets, when allowed.
	requestHeaders  []headerEdit
	headersToRemove []string
	responseHeaders []headerEdit
	// localHeaders edit the local reply of a denied or failed request.
	localHeaders []headerEdit
	// Query parameters to set and to remove, when allowed.
	queryToSet    [][2]string
	queryToRemove []string
	// reason says why a check failed, for the debug log.
	reason string
	// dynamicMetadata is what the service asks to record as the filter's
	// dynamic metadata (a CheckResponse's dynamic_metadata, or the HTTP
	// service's headers named by dynamic_metadata_from_headers); nil when
	// none.
	dynamicMetadata *structpb.Struct
}

// errorResponse is a failed check.
func errorResponse(reason string) *response {
	return &response{status: statusError, reason: reason}
}

// editsOf converts HeaderValueOptions as Envoy's gRPC client does: the
// deprecated append, when set, says append (true) or set (false), else
// append_action does.
func editsOf(opts []*corev3.HeaderValueOption) []headerEdit {
	out := make([]headerEdit, 0, len(opts))
	for _, o := range opts {
		e := headerEdit{name: strings.ToLower(o.GetHeader().GetKey()), value: o.GetHeader().GetValue()}
		if rv := o.GetHeader().GetRawValue(); len(rv) > 0 {
			e.value = string(rv)
		}
		//lint:ignore SA1019 Envoy still reads the deprecated append.
		if a := o.GetAppend(); a != nil {
			e.action = actionSet
			if a.GetValue() {
				e.action = actionAppend
			}
		} else {
			switch o.GetAppendAction() {
			case corev3.HeaderValueOption_ADD_IF_ABSENT:
				e.action = actionAddIfAbsent
			case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
				e.action = actionSet
			case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
				e.action = actionOverwriteIfExists
			default:
				e.action = actionAdd
			}
		}
		out = append(out, e)
	}
	return out
}

// removable reports whether a header may be edited or removed by the
// service: not a pseudo-header nor Host, which would make the request
// malformed (Envoy's isRemovableHeader).
func removable(name string) bool {
	return name != "" && name[0] != ':' && name != "host"
}

// apply applies edits to h; room, when not nil, bounds the fields the
// edits may add.
func apply(h router.HeaderEditor, edits []headerEdit, room *headerRoom) {
	for _, e := range edits {
		if !removable(e.name) {
			continue
		}
		_, exists := h.Get(e.name)
		switch e.action {
		case actionAdd:
			if room.add() {
				h.Add(e.name, e.value)
			}
		case actionSet:
			if exists || room.add() {
				h.Set(e.name, e.value)
			}
		case actionAddIfAbsent:
			if !exists && room.add() {
				h.Add(e.name, e.value)
			}
		case actionOverwriteIfExists:
			if exists {
				h.Set(e.name, e.value)
			}
		case actionAppend:
			if v, ok := h.Get(e.name); ok {
				h.Set(e.name, v+","+e.value)
			} else if room.add() {
				h.Add(e.name, e.value)
			}
		}
	}
}

// applyLocal applies a denied request's header edits to its local reply
// as Envoy does: the named headers are first removed, so that the
// service's values replace the reply's own, then every value is added
// (Set-Cookie may come several times) while room allows (nil: no limit).
func applyLocal(h router.HeaderEditor, edits []headerEdit, room func() *headerRoom) {
	for _, e := range edits {
		if removable(e.name) {
			h.Del(e.name)
		}
	}
	r := room()
	for _, e := range edits {
		if !removable(e.name) {
			continue
		}
		if !r.add() {
			return
		}
		h.Add(e.name, e.value)
	}
}

// editQuery returns path with its query parameters set and removed as
// Envoy's filter does: the query is parsed into a map (the first value of
// a key wins), edited, and written back sorted by key; ok is false when
// nothing is to change.
func editQuery(path string, set [][2]string, remove []string) (string, bool) {
	if len(set) == 0 && len(remove) == 0 {
		return path, false
	}
	base, query, _ := strings.Cut(path, "?")
	params := map[string]string{}
	if query != "" {
		for part := range strings.SplitSeq(query, "&") {
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			if _, dup := params[k]; !dup {
				params[k] = v
			}
		}
	}
	for _, kv := range set {
		params[kv[0]] = kv[1]
	}
	for _, k := range remove {
		delete(params, k)
	}
	if len(params) == 0 {
		return base, true
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(base)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(params[k])
	}
	return b.String(), true
}
