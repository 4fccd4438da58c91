package extproc

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// loggingInfo is the filter state the filter leaves under its name when
// it has filter_metadata, as Envoy's ExtProcLoggingInfo carries the
// configured filter_metadata for the code that reads the object (no
// formatter shows it: Envoy's PLAIN and TYPED forms hold the call
// statistics only, which Outrigger does not keep).
type loggingInfo struct {
	// FilterMetadata is filter_metadata.
	FilterMetadata *structpb.Struct
}

var _ accesslog.FilterStateObject = (*loggingInfo)(nil)

// FilterStateString implements accesslog.FilterStateObject: none.
func (*loggingInfo) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject: none.
func (*loggingInfo) FilterStateProto() proto.Message { return nil }
