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
		v, ok := os.LookupEnv(s.EnvironmentVariable)
		if !ok {
			return nil, fmt.Errorf("environment_variable: %s is not set", s.EnvironmentVariable)
		}
		return []byte(v), nil
	}
	return nil, errors.New("specifier: not supported by Outrigger")
}
