package builtin

import (
	_ "embed" // the table of Envoy's extensions
	"fmt"
	"strings"
)

// envoyExtensionsText is every Envoy extension name with its state in
// Outrigger (see the file's header for the format).
//
//go:embed envoy_extensions.txt
var envoyExtensionsText string

// Supported is the state of an extension the registry implements.
const Supported = "supported"

// EnvoyExtension is one line of the table of Envoy's extensions.
type EnvoyExtension struct {
	// Name is Envoy's name, e.g. "envoy.filters.network.redis_proxy".
	Name string
	// Category is Envoy's category, e.g. "envoy.filters.network".
	Category string
	// State is Supported for a registered extension, "supported: how" for
	// one the core implements, otherwise why it is not supported.
	State string
}

// IsSupported reports whether Outrigger implements the extension, in the
// registry or in its core.
func (x EnvoyExtension) IsSupported() bool {
	return x.State == Supported || strings.HasPrefix(x.State, Supported+": ")
}

// EnvoyExtensions parses the table of Envoy's extensions. The table is
// fixed at build time; an error is a defect of the file, which the
// package's tests catch.
func EnvoyExtensions() ([]EnvoyExtension, error) {
	var out []EnvoyExtension
	for i, line := range strings.Split(envoyExtensionsText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "|")
		if len(fields) != 3 {
			return nil, fmt.Errorf("envoy_extensions.txt:%d: want name | category | state", i+1)
		}
		x := EnvoyExtension{
			Name:     strings.TrimSpace(fields[0]),
			Category: strings.TrimSpace(fields[1]),
			State:    strings.TrimSpace(fields[2]),
		}
		if x.Name == "" || x.Category == "" || x.State == "" {
			return nil, fmt.Errorf("envoy_extensions.txt:%d: empty field", i+1)
		}
		if n := len(out); n > 0 && out[n-1].Name >= x.Name {
			return nil, fmt.Errorf("envoy_extensions.txt:%d: %s is out of order or repeated (keep the file sorted by name)", i+1, x.Name)
		}
		out = append(out, x)
	}
	return out, nil
}

// unsupportedReasons maps each extension Outrigger does not implement to
// why, for refusals.
func unsupportedReasons() map[string]string {
	list, err := EnvoyExtensions()
	if err != nil {
		panic(err)
	}
	reasons := map[string]string{}
	for _, x := range list {
		if !x.IsSupported() {
			reasons[x.Name] = x.State
		}
	}
	return reasons
}
