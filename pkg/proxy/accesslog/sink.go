package accesslog

import (
	"io"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Sink records the access-log entries of one configured access logger: a
// file, standard output, a gRPC service. The connection manager calls Log
// once per finished request, from many goroutines at once.
type Sink interface {
	// Log records e. buf is the caller's scratch space, returned (maybe
	// grown) so that the next call reuses it; a sink that renders lines
	// renders them there, so that logging allocates nothing. An error
	// means the entry was lost.
	Log(buf []byte, e *Entry) ([]byte, error)
}

// SinkFactory builds one kind of access logger from its typed_config. The
// extension registry holds one per access logger.
type SinkFactory interface {
	// Compile checks and compiles a configuration, once per access_log
	// entry. Errors name the field path below typed_config.
	Compile(config proto.Message, ctx SinkContext) (Sink, error)
}

// Destination is where a line-writing sink writes, as Envoy's access log
// manager names it.
type Destination uint8

// The destinations.
const (
	// File is a path, shared by every logger naming it, reopened by
	// /reopen_logs.
	File Destination = iota
	// Stdout and Stderr are the process's standard streams.
	Stdout
	Stderr
)

// SinkContext is what an access logger may use of the server.
type SinkContext struct {
	// Open returns the writer of a destination (path is File's). Writers
	// are buffered and flushed by the server (--file-flush-interval-msec);
	// each receives one Write per line from many goroutines at once. Nil
	// opens nothing, and sinks that write lines are then refused.
	Open func(d Destination, path string) (io.Writer, error)
	// OpenGRPC opens the channel of a GrpcService; nil refuses sinks that
	// call gRPC services.
	OpenGRPC func(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Cluster returns a cluster of the configuration by name, nil when
	// there is none: what loggers that post to an HTTP service connect
	// through. Nil refuses them.
	Cluster func(name string) grpcservice.Cluster
	// Node is the bootstrap's node, which identifies the proxy to log
	// services.
	Node *corev3.Node
	// Stats is the server's stat store; nil keeps no stats.
	Stats *stats.Store
	// Log is the access-log component's logger.
	Log logr.Logger
	// Extensions holds the formatter extensions that log formats may name
	// (SubstitutionFormatString.formatters); nil has none.
	Extensions *extension.Registry
}

// Closer is implemented by sinks that hold resources (a gRPC stream, a
// flush timer): the owner of the access_log list closes them when it is
// done with it, and Close delivers what is buffered, within a bound.
type Closer interface {
	Close() error
}

// LineSink is a sink that writes each entry as one formatted line.
type LineSink struct {
	Format *Formatter
	W      io.Writer
}

// Log renders e into buf and writes the line.
func (s LineSink) Log(buf []byte, e *Entry) ([]byte, error) {
	buf = s.Format.Append(buf[:0], e)
	_, err := s.W.Write(buf)
	return buf, err
}
