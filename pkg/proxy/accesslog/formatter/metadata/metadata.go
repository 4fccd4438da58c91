// Package metadata is the formatter extension envoy.formatter.metadata,
// which once added %METADATA(TYPE:NAMESPACE:KEY...):Z%. Envoy now treats
// that operator as built in: every format has it, and listing the
// extension in formatters changes nothing (Envoy logs that it need not be
// configured). Outrigger does the same: the operator lives in package
// accesslog, and the extension is accepted so that configurations naming
// it load.
package metadata

import (
	"fmt"

	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/metadata/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.formatter.metadata"

// Factory builds the extension's command parser; its configuration is
// empty.
type Factory struct{}

// Compile implements accesslog.CommandParserFactory. The parser adds no
// operator of its own: %METADATA% is the built-in one.
func (Factory) Compile(config proto.Message) (accesslog.CommandParser, error) {
	if _, ok := config.(*metadatav3.Metadata); !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	return builtIn{}, nil
}

// builtIn leaves every operator, %METADATA% included, to the built-in
// parser.
type builtIn struct{}

// Parse implements accesslog.CommandParser.
func (builtIn) Parse(string, string, bool, int) (accesslog.Provider, error) {
	return nil, nil
}
