package tap

import (
	"fmt"
	"os"
	"sync/atomic"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"

	"github.com/outrigger-dev/outrigger/pkg/admin"
)

// fileSink is file_per_tap: each trace in a file of its own,
// <path_prefix>_<id>.json, as Envoy names them.
type fileSink struct {
	prefix string
	format tapv3.OutputSink_Format
	next   atomic.Uint64
}

func newFileSink(prefix string, format tapv3.OutputSink_Format) *fileSink {
	return &fileSink{prefix: prefix, format: format}
}

// Submit implements Sink. A trace that cannot be written is lost, as a
// failed write is in Envoy; the request is never held up.
func (f *fileSink) Submit(t *Trace) {
	b, err := admin.MarshalProto(t.Wrapper(f.format), true)
	if err != nil {
		return
	}
	path := fmt.Sprintf("%s_%d.json", f.prefix, f.next.Add(1)-1)
	_ = os.WriteFile(path, b, 0o644)
}
