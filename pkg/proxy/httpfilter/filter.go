// Package httpfilter is the interface between the HTTP connection manager
// and the HTTP filters, in the style of Envoy's stream filters. A filter
// package registers a Factory; the connection manager compiles each
// configured filter once (Factory.Compile), then, for every request, runs
// the chain: the decoder steps in configuration order on the request, the
// terminal filter (the router) last, and the encoder steps in reverse order
// on the response. The connection manager knows no filter by name.
//
// Each request runs in a goroutine of its own, so a filter may block in a
// step (to call an authorization service, to delay a request) for as long
// as its configuration allows: only that request waits.
package httpfilter

import (
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Status is what a filter step returns.
type Status uint8

const (
	// Continue hands the request (or response) to the next filter.
	Continue Status = iota
	// Stop ends the chain here: the filter answered the request itself
	// (Stream.SendLocalReply), and no later filter, nor the router, runs.
	Stop
)

// Factory builds one kind of HTTP filter from its configuration.
type Factory interface {
	// Compile checks and compiles a filter's typed_config, once per
	// connection manager. Errors name the field path below typed_config
	// ("pass_through_mode: must be set").
	Compile(config proto.Message, ctx Context) (Config, error)
}

// Context is what a filter's configuration may use of the server.
type Context struct {
	// Stats is the server's stat store; StatPrefix the connection
	// manager's scope ("http.<stat_prefix>."), under which Envoy keeps
	// most filters' stats.
	Stats      *stats.Store
	StatPrefix string
	// Log is the "http" component logger.
	Log logr.Logger
	// Health is the server's health-check state.
	Health HealthState
	// Runtime reads runtime values; never nil.
	Runtime Runtime
	// Now is the clock of recorded times; never nil.
	Now func() time.Time
}

// HealthState is the server's health-check state.
type HealthState interface {
	// HealthChecksFailed reports /healthcheck/fail in effect (until
	// /healthcheck/ok) or the server draining.
	HealthChecksFailed() bool
}

// Runtime reads the server's runtime values.
type Runtime interface {
	// Uint64 returns key's value as an integer, def when it has none.
	Uint64(key string, def uint64) uint64
}

// Config is a compiled filter configuration.
type Config interface {
	// NewFilter returns the filter of one request. A filter that keeps no
	// state per request returns one shared value, so that the request
	// path allocates nothing.
	NewFilter() Filter
}

// Terminal is implemented by the configuration of the terminal filter, the
// router: the connection manager routes and forwards the request itself
// once the filters before it continued. It must be the last filter, and
// only the last.
type Terminal interface {
	Config
	// IsTerminal reports true.
	IsTerminal() bool
}

// Filter is one request's filter. It implements the steps it takes part
// in: Decoder, Encoder, or both.
type Filter any

// Decoder is a filter that sees the request head.
type Decoder interface {
	// DecodeHeaders runs when the request head has arrived, before the
	// request is routed.
	DecodeHeaders(s Stream) Status
}

// Encoder is a filter that sees the response head.
type Encoder interface {
	// EncodeHeaders runs before the response head is sent: it may edit
	// s.ResponseHeaders. Its Status is ignored: the response has
	// started.
	EncodeHeaders(s Stream) Status
}

// Stream is one request as a filter sees it. Its values are valid during
// the step they are given to.
type Stream interface {
	// Request is what routing looks at: method, path, authority, scheme
	// and the request headers.
	Request() *router.Request
	// RequestHeaders are the request's headers, lower-case names, for
	// the filter to edit.
	RequestHeaders() router.HeaderEditor
	// ResponseHeaders are the response's headers, during EncodeHeaders.
	ResponseHeaders() router.HeaderEditor
	// ResponseStatus is the response's status, during EncodeHeaders.
	ResponseStatus() int
	// SendLocalReply answers the request with status and body (text/plain
	// when not empty), the response flags of the access log, and the
	// %RESPONSE_CODE_DETAILS%. The filter then returns Stop.
	SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string)
}
