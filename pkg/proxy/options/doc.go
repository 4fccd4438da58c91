// Package options is the proxy's command line: it parses the arguments with
// pflag, fills in the defaults, validates every value and every combination,
// and reports the result the way /server_info shows it
// (adminv3.CommandLineOptions).
//
// The option names, defaults and error messages follow the proxy
// specification and, where it is silent, Envoy's command line, so scripts and
// manifests written for Envoy work unchanged. Parsing has no side effects: it
// reads no global state (the machine's CPU counts come in through an
// Environment) and it returns warnings for the caller to log instead of
// logging them itself, because logging is not set up yet when the command
// line is read.
package options
