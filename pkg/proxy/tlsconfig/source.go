package tlsconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
)

// maxSourceBytes bounds what a DataSource file may hold: certificates,
// keys and CRLs are small, and a wrong path (a device, a huge file) must
// not eat the proxy's memory.
const maxSourceBytes = 4 << 20

// readSource reads a DataSource: a file, or inline bytes or string. It
// returns the data and where it came from (the file name, or "inline"),
// for error messages. Errors name the field below the DataSource.
func readSource(ds *corev3.DataSource) ([]byte, string, error) {
	switch s := ds.GetSpecifier().(type) {
	case *corev3.DataSource_Filename:
		b, err := readFile(s.Filename)
		if err != nil {
			return nil, s.Filename, fmt.Errorf("filename: %w", err)
		}
		return b, s.Filename, nil
	case *corev3.DataSource_InlineBytes:
		return s.InlineBytes, "inline", nil
	case *corev3.DataSource_InlineString:
		return []byte(s.InlineString), "inline", nil
	case *corev3.DataSource_EnvironmentVariable:
		// Read once, as Envoy reads it when the context is built.
		v, err := datasource.Env(s.EnvironmentVariable)
		return []byte(v), "environment variable " + s.EnvironmentVariable, err
	}
	return nil, "", errors.New("specifier: one of filename, inline_string, inline_bytes or environment_variable is required")
}

// readFile reads a whole file of at most maxSourceBytes.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read %q: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read %q: %w", name, err)
	case len(b) > maxSourceBytes:
		return nil, fmt.Errorf("cannot read %q: larger than %d bytes", name, maxSourceBytes)
	}
	return b, nil
}
