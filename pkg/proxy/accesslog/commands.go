package accesslog

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// FormatterCategory is Envoy's extension category of formatter extensions,
// the command parsers a SubstitutionFormatString names in formatters.
const FormatterCategory = "envoy.formatter"

// CommandParser parses the command operators a formatter extension adds,
// as Envoy's CommandParser does. The parsers of a format's formatters are
// asked before the built-in operators.
type CommandParser interface {
	// Parse returns the provider of %command(args):maxLen% (hasArgs tells
	// %X% from %X()%; maxLen is -1 without ":Z"), or nil when command is
	// not one of the parser's. The formatter truncates the value to
	// maxLen, so providers need not. Errors say what is wrong with the
	// operator; the caller adds where it is.
	Parse(command, args string, hasArgs bool, maxLen int) (Provider, error)
}

// Provider renders one command operator of a formatter extension.
type Provider interface {
	// Value is the operator's value for e, and whether it has one (the
	// format prints its missing value otherwise). It returns a string
	// rather than appending to the caller's buffer so that buffers on the
	// caller's stack stay there: a slice passed through an interface
	// call escapes.
	Value(e *Entry) (string, bool)
}

// TypedProvider is a Provider whose value keeps a JSON type of its own
// in a typed JSON format (json_format with typed values): a single
// operator that is one renders JSONValue's value rather than its string
// quoted. %TYPED_CEL% is one.
type TypedProvider interface {
	Provider
	// JSONValue is the value for e as JSON text, and whether it has one
	// (the format prints null otherwise). It returns the text rather
	// than appending to the line's buffer: a buffer handed to an
	// interface method escapes, and every format's Append with it
	// (the router's header values would allocate their buffers).
	JSONValue(e *Entry) (string, bool)
}

// BuiltInFactory is a formatter extension that Envoy treats as built in
// (its operators are in every format, listed in formatters or not):
// BuiltIn is its parser for the formats that do not list it. The CEL
// formatter is one.
type BuiltInFactory interface {
	CommandParserFactory
	BuiltIn() CommandParser
}

// CommandParserFactory builds a formatter extension's command parser from
// its typed_config. The extension registry holds one per formatter.
type CommandParserFactory interface {
	// Compile checks a configuration; errors name the field below
	// typed_config.
	Compile(config proto.Message) (CommandParser, error)
}

// extensionOperators are the operators that only formatter extensions
// add, with the extension's name: a format using one without listing the
// extension is refused with that hint.
var extensionOperators = map[string]string{
	"REQ_WITHOUT_QUERY": "envoy.formatter.req_without_query",
}

// Formatters are the command parsers of a message's formatter extensions
// (its formatters field), which add operators to its formats; nil adds
// none.
type Formatters []CommandParser

// CompileFormatters resolves a formatters field (a SubstitutionFormatString's,
// header_mutation's) with the registry's formatter extensions. Errors name
// the field path from formatters.
func CompileFormatters(cfgs []*corev3.TypedExtensionConfig, reg *extension.Registry) (Formatters, error) {
	return compileFormatters(cfgs, reg)
}

// compileFormatters resolves a SubstitutionFormatString's formatters with
// the registry's formatter extensions. Errors name the field path from
// formatters.
func compileFormatters(cfgs []*corev3.TypedExtensionConfig, reg *extension.Registry) ([]CommandParser, error) {
	var parsers []CommandParser
	for i, tc := range cfgs {
		ext, msg, err := reg.Resolve(extension.Ref{
			Kind: "formatter", Category: FormatterCategory, Name: tc.GetName(), Config: tc.GetTypedConfig(),
		}, false)
		if err != nil {
			return nil, fmt.Errorf("formatters[%d].%w", i, err)
		}
		factory, ok := ext.Factory.(CommandParserFactory)
		if !ok {
			return nil, fmt.Errorf("formatters[%d].typed_config: extension %q is not a formatter", i, ext.Name)
		}
		p, err := factory.Compile(msg)
		if err != nil {
			return nil, fmt.Errorf("formatters[%d].typed_config.%w", i, err)
		}
		parsers = append(parsers, p)
	}
	if reg != nil {
		// After the listed ones, which come first as in Envoy. Looked up
		// by name rather than by walking the registry: a control plane's
		// thousands of formats each do this.
		// The formatter extensions Envoy treats as built in that have
		// operators of their own (BuiltInFactory).
		for _, name := range [...]string{"envoy.formatter.cel"} {
			x, ok := reg.ByName(FormatterCategory, name)
			if b, isBuiltIn := x.Factory.(BuiltInFactory); ok && isBuiltIn && !x.Disabled {
				parsers = append(parsers, b.BuiltIn())
			}
		}
	}
	return parsers, nil
}

// parseExtension asks the formatter extensions' parsers for command; nil
// when none knows it.
func parseExtension(parsers []CommandParser, command, args string, hasArgs bool, maxLen int) (Provider, error) {
	for _, cp := range parsers {
		p, err := cp.Parse(command, args, hasArgs, maxLen)
		if err != nil || p != nil {
			return p, err
		}
	}
	return nil, nil
}

// ParseHeaderArgs parses the "X" or "X?Y" argument of a header operator
// into lower-case header names, for extensions whose operators name
// headers as %REQ(X?Y)% does.
func ParseHeaderArgs(args string) (main, alt string, err error) {
	return parseHeaderArgs(args)
}

// RequestHeader reads a request header of e by its lower-case name, the
// pseudo-headers included, as %REQ(...)% reads it.
func RequestHeader(e *Entry, name string) (string, bool) {
	return requestHeader(e, name)
}
