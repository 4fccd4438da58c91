// Package datasource reads Envoy's DataSource (envoy.config.core.v3), the
// configuration's way to give bytes inline, from a file or from an
// environment variable. It is read once, when the configuration loads, as
// Envoy reads it for the extensions that take one.
package datasource

import (
	"errors"
	"fmt"
	"os"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Read returns the bytes ds designates, nil for an empty DataSource.
// Errors name the field below ds ("filename: open ...").
func Read(ds *corev3.DataSource) ([]byte, error) {
	switch s := ds.GetSpecifier().(type) {
	case nil:
		return nil, nil
	case *corev3.DataSource_InlineBytes:
		return s.InlineBytes, nil
	case *corev3.DataSource_InlineString:
		return []byte(s.InlineString), nil
	case *corev3.DataSource_Filename:
		b, err := os.ReadFile(s.Filename)
		if err != nil {
			return nil, fmt.Errorf("filename: %w", err)
		}
		return b, nil
	case *corev3.DataSource_EnvironmentVariable:
		v, err := Env(s.EnvironmentVariable)
		return []byte(v), err
	}
	return nil, errors.New("specifier: not supported by Outrigger")
}

// Env reads the variable an environment_variable DataSource names. Its
// error names the field ("environment_variable: X is not set") and wraps
// the bare reason, for callers that build the path themselves. Envoy
// refuses the configuration when the variable is missing; a variable set
// to nothing is read as empty. Callers with their own reading rules for
// the other specifiers (bounded files, no files) use it for this one.
func Env(name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("environment_variable: %w", unsetError(name))
	}
	return v, nil
}

// unsetError is the reason Env fails: the variable it names is not set.
type unsetError string

func (e unsetError) Error() string { return string(e) + " is not set" }
