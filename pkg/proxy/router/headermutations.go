package router

import (
	"fmt"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// HeaderMutations are compiled mutation_rules HeaderMutation entries
// (remove, append, remove_on_match), applied in order: a mirror policy's
// request_headers_mutations, and the connection manager's early header
// mutation (envoy.http.early_header_mutation.header_mutation).
type HeaderMutations struct {
	list []mirrorMutation
}

// CompileHeaderMutations compiles a list of HeaderMutations; errors name
// the entry ("[1].append.header.key: ...").
func CompileHeaderMutations(ms []*mutationv3.HeaderMutation) (HeaderMutations, error) {
	var out HeaderMutations
	for i, m := range ms {
		mm, err := compileMirrorMutation(m)
		if err != nil {
			return HeaderMutations{}, fmt.Errorf("[%d].%w", i, err)
		}
		out.list = append(out.list, mm)
	}
	return out, nil
}

// Empty reports whether there is nothing to apply.
func (m HeaderMutations) Empty() bool { return len(m.list) == 0 }

// Apply edits h in order; e supplies the values of % operators.
// remove_on_match needs h to be a HeaderMatchRemover too.
func (m HeaderMutations) Apply(h HeaderEditor, e *accesslog.Entry) {
	for _, mm := range m.list {
		switch {
		case mm.ops != nil:
			mm.ops.apply(h, e)
		case mm.match != nil:
			if r, ok := h.(HeaderMatchRemover); ok {
				r.DelMatching(mm.match.match)
			}
		}
	}
}
