// Package reqwithoutquery is the formatter extension
// envoy.formatter.req_without_query: %REQ_WITHOUT_QUERY(X?Y):Z%, a request
// header (typically :PATH) with its query string removed, so that access
// logs leave out what queries may carry (tokens, personal data). As in
// Envoy, the operator exists only in formats that list the extension in
// their formatters.
package reqwithoutquery

import (
	"fmt"
	"strings"

	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.formatter.req_without_query"

// command is the operator the extension adds.
const command = "REQ_WITHOUT_QUERY"

// Factory builds the extension's command parser; its configuration is
// empty.
type Factory struct{}

// Compile implements accesslog.CommandParserFactory.
func (Factory) Compile(config proto.Message) (accesslog.CommandParser, error) {
	if _, ok := config.(*rwqv3.ReqWithoutQuery); !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	return parser{}, nil
}

// parser parses %REQ_WITHOUT_QUERY(X?Y)%.
type parser struct{}

// Parse implements accesslog.CommandParser. The argument is a header and
// an optional alternative, as %REQ(X?Y)% takes; a length truncates.
func (parser) Parse(cmd, args string, _ bool, _ int) (accesslog.Provider, error) {
	if cmd != command {
		return nil, nil
	}
	main, alt, err := accesslog.ParseHeaderArgs(args)
	if err != nil {
		return nil, err
	}
	return header{main: main, alt: alt}, nil
}

// header renders one header without its query string.
type header struct {
	main, alt string
}

// Value implements accesslog.Provider: the main header, else the
// alternative, up to the first '?'.
func (h header) Value(e *accesslog.Entry) (string, bool) {
	v, ok := accesslog.RequestHeader(e, h.main)
	if !ok && h.alt != "" {
		v, ok = accesslog.RequestHeader(e, h.alt)
	}
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(v, '?'); i >= 0 {
		v = v[:i]
	}
	return v, true
}
