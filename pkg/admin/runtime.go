package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// runtimeModifyUsage is Envoy's answer to /runtime_modify without parameters
// (no trailing newline).
const runtimeModifyUsage = "usage: /runtime_modify?key1=value1&key2=value2&keyN=valueN\n" +
	"       or send the parameters as form values\n" +
	"use an empty value to remove a previously added override"

// runtimeRoutes serves the layered runtime: /runtime and /runtime_modify.
func (a *Admin) runtimeRoutes() []Route {
	if a.opts.Runtime == nil {
		return nil
	}
	return []Route{
		{
			Path:    "/runtime",
			Help:    "print runtime values",
			Handler: a.handleRuntime,
		},
		{
			Path: "/runtime_modify",
			Help: "Adds or modifies runtime values as passed in query parameters. " +
				"To delete a previously added key, use an empty string as the value. " +
				"Note that deletion only applies to overrides added via this endpoint; " +
				"values loaded from disk can be modified via override but not deleted. " +
				"E.g. ?key1=value1&key2=value2...",
			Mutates: true,
			Handler: a.handleRuntimeModify,
		},
	}
}

// runtimeDump is the /runtime document. Envoy builds it as a protobuf Struct;
// it is rendered here with encoding/json (which sorts the entries' keys) and
// laid out like the protobuf printer's output. The fields print in this
// order: layers, then entries.
type runtimeDump struct {
	Layers  []string                `json:"layers"`
	Entries map[string]runtimeValue `json:"entries"`
}

// runtimeValue is one key of /runtime.
type runtimeValue struct {
	LayerValues []string `json:"layer_values"`
	FinalValue  string   `json:"final_value"`
}

// handleRuntime answers every runtime key with its value in each layer and
// its final value. Empty lists print as [] (Envoy always prints them).
func (a *Admin) handleRuntime(w *Response, _ *Request) {
	rt := a.opts.Runtime
	dump := runtimeDump{
		Layers:  nonNil(rt.LayerNames()),
		Entries: map[string]runtimeValue{},
	}
	for _, e := range rt.Entries() {
		dump.Entries[e.Key] = runtimeValue{LayerValues: nonNil(e.LayerValues), FinalValue: e.FinalValue}
	}
	// Values are printed as they are: no HTML escaping of <, > and &, like
	// the protobuf printer.
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(dump); err != nil {
		w.Fail(fmt.Errorf("render runtime as JSON: %w", err))
		return
	}
	out, err := indentJSON(bytes.TrimRight(compact.Bytes(), "\n"))
	if err != nil {
		w.Fail(err)
		return
	}
	w.SetContentType(ContentTypeJSON)
	_, _ = w.Write(out)
}

// handleRuntimeModify merges every parameter (first value per key) into the
// admin layer; an empty value deletes a key set there before.
func (a *Admin) handleRuntimeModify(w *Response, r *Request) {
	if r.Params.Len() == 0 {
		w.Text(http.StatusBadRequest, runtimeModifyUsage)
		return
	}
	rt := a.opts.Runtime
	if !rt.HasAdminLayer() {
		w.Text(http.StatusServiceUnavailable, "No admin layer specified")
		return
	}
	pairs := make(map[string]string, r.Params.Len())
	for _, k := range r.Params.Names() {
		pairs[k] = r.Params.Get(k)
	}
	if err := rt.Modify(pairs); err != nil {
		w.Text(http.StatusBadRequest, err.Error())
		return
	}
	w.Text(http.StatusOK, "OK\n")
}

// nonNil turns a nil list into an empty one, which JSON prints as [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
