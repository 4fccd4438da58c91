// Package killrequest is the kill request HTTP filter
// (envoy.filters.http.kill_request): a request (or, with direction
// RESPONSE, a response) whose x-envoy-kill-request header (or the
// configured kill_request_header) reads true crashes the proxy on
// purpose, with the configured probability, as Envoy's RELEASE_ASSERT
// does: the process aborts with SIGABRT (a core dump where they are
// enabled). It exists to test how a deployment copes with a proxy that
// dies (a restarted container, failed-over traffic); configure it only
// where that is what is wanted. A route's KillRequest replaces the
// probability and direction for the requests it matches.
package killrequest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	killrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/kill_request/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.kill_request"

// defaultHeader is Envoy's kill request header.
const defaultHeader = "x-envoy-kill-request"

// crashMessage is what the proxy says as it crashes, Envoy's words.
const crashMessage = "KillRequestFilter is crashing Envoy!!!"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*killrequestv3.KillRequest)
	if !ok {
		return nil, errors.New("not a KillRequest configuration")
	}
	s, err := compileSettings(c)
	if err != nil {
		return nil, err
	}
	header := defaultHeader
	if c.GetKillRequestHeader() != "" {
		header = strings.ToLower(c.GetKillRequestHeader())
	}
	log := ctx.Log
	return &filterConfig{name: ctx.Name, own: s, header: header, crash: func() { crash(log) }}, nil
}

// CompileRoute implements httpfilter.RouteFactory: a route's KillRequest,
// of which the probability and direction count.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*killrequestv3.KillRequest)
	if !ok {
		return nil, errors.New("not a KillRequest configuration")
	}
	return compileSettings(c)
}

// settings are a level's probability and direction.
type settings struct {
	probability runtime.Fraction
	onResponse  bool
}

// compileSettings compiles the probability and direction of c.
func compileSettings(c *killrequestv3.KillRequest) (*settings, error) {
	f, err := runtime.FractionOf("", c.GetProbability())
	if err != nil {
		return nil, fmt.Errorf("probability.%w", err)
	}
	switch c.GetDirection() {
	case killrequestv3.KillRequest_REQUEST, killrequestv3.KillRequest_RESPONSE:
	default:
		return nil, fmt.Errorf("direction: unknown value %d", c.GetDirection())
	}
	return &settings{probability: f, onResponse: c.GetDirection() == killrequestv3.KillRequest_RESPONSE}, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name   string
	own    *settings
	header string
	// crash ends the process; tests replace it.
	crash func()
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return &filter{c: c, probability: c.own.probability}
}

// filter is one request's filter: the probability its route set, which
// the response's check uses too, as Envoy's filter keeps it.
type filter struct {
	c           *filterConfig
	probability runtime.Fraction
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !isKill(s.RequestHeaders(), f.c.header) {
		return httpfilter.Continue
	}
	onRequest := !f.c.own.onResponse
	if rs, ok := s.RouteConfig(f.c.name).(*settings); ok {
		onRequest = !rs.onResponse
		f.probability = rs.probability
	}
	if onRequest && f.probability.Enabled(nil, rand.Uint64()) {
		f.c.crash()
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: with direction RESPONSE
// (the filter's own), a response that asks for it crashes the proxy.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.c.own.onResponse {
		return httpfilter.Continue
	}
	if isKill(s.ResponseHeaders(), f.c.header) && f.probability.Enabled(nil, rand.Uint64()) {
		f.c.crash()
	}
	return httpfilter.Continue
}

// isKill reports whether the header's first value reads true, as Envoy's
// absl::SimpleAtob reads it: true, t, yes, y or 1, in any case.
func isKill(h router.HeaderGetter, name string) bool {
	v, ok := router.FirstField(h, name)
	if !ok {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "t", "yes", "y", "1":
		return true
	}
	return false
}

// crash aborts the process as Envoy's RELEASE_ASSERT does: the message,
// then SIGABRT, which the Go runtime answers with the goroutines' stacks
// and, with the "crash" traceback level, by dying of the signal (and
// dumping core where that is enabled).
func crash(log logr.Logger) {
	log.Error(nil, "assert failure: false. Details: "+crashMessage)
	// The log sink buffers; the process will not live to flush it.
	fmt.Fprintln(os.Stderr, "assert failure: false. Details: "+crashMessage)
	debug.SetTraceback("crash")
	_ = syscall.Kill(os.Getpid(), syscall.SIGABRT)
	// The signal is delivered asynchronously: the request goes no
	// further meanwhile.
	select {}
}
