package httpfilter

import (
	"errors"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// PrefixErrors puts the field path prefix before err, and before each
// error that err joins (errors.Join), so that every line of a
// configuration's errors names its field, however deep. It is
// fieldpath.Prefix, kept here for the filters that build paths this way.
func PrefixErrors(prefix string, err error) error {
	return fieldpath.Prefix(prefix, err)
}

// ErrNoStats is the error of a filter that keeps stats compiled without a
// stat store: in an upstream chain of a cluster's http_protocol_options,
// whose filters reach nothing of the server but the registry (see
// CompileUpstream, which names the filter refused).
var ErrNoStats = errors.New("no stat store")
