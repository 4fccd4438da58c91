package kubectl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
)

// Output formats of -o.
const (
	outputTable = ""
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// configKind is one kind of proxy-config: the /config_dump section it
// prints with -o, and the table it prints otherwise.
type configKind struct {
	name    string
	section string
	// includeEDS asks /config_dump for the EDS section.
	includeEDS bool
	// fromClusters has the table read /clusters?format=json rather than
	// the section.
	fromClusters bool
	// table prints the readable table from what it reads.
	table func(a *app, body []byte) error
}

// configKinds lists the kinds of proxy-config.
func configKinds() []configKind {
	return []configKind{
		{name: "clusters", section: clustersDumpType, table: clustersTable},
		{name: "listeners", section: listenersDumpType, table: listenersTable},
		{name: "routes", section: routesDumpType, table: routesTable},
		{name: "endpoints", section: endpointsDumpType, includeEDS: true, fromClusters: true, table: endpointsTable},
		{name: "secrets", section: secretsDumpType, table: secretsTable},
		{name: "bootstrap", section: bootstrapDumpType, table: bootstrapTable},
	}
}

// configKindNames lists the kinds for usage and errors.
func configKindNames() string {
	var names []string
	for _, k := range configKinds() {
		names = append(names, k.name)
	}
	return strings.Join(names, "|")
}

// proxyConfigCommand is `proxy-config KIND POD`.
func proxyConfigCommand() command {
	return command{
		name:    "proxy-config",
		usage:   configKindNames() + " POD [-o json|yaml]",
		summary: "show a pod's proxy configuration: a table, or the /config_dump section with -o",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVarP(&o.output, "output", "o", outputTable, "output format: json or yaml (the /config_dump section as the proxy reports it); a table when unset")
		},
		needsCluster: true,
		run:          runProxyConfig,
	}
}

// runProxyConfig prints one kind of configuration of one pod's proxy.
func runProxyConfig(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 {
		return usagef("proxy-config: want %s POD, got %d arguments", configKindNames(), len(args))
	}
	var kind *configKind
	for _, k := range configKinds() {
		if k.name == args[0] {
			kind = &k
		}
	}
	if kind == nil {
		return usagef("proxy-config: unknown kind %q; valid kinds: %s", args[0], strings.ReplaceAll(configKindNames(), "|", ", "))
	}
	if err := checkOutput(a.opts.output); err != nil {
		return err
	}
	t, err := a.openPod(ctx, args[1])
	if err != nil {
		return err
	}
	defer t.close()
	var body []byte
	switch {
	case a.opts.output != outputTable:
		body, err = t.configSection(ctx, kind.section, kind.includeEDS)
	case kind.fromClusters:
		body, err = t.get(ctx, "/clusters", url.Values{"format": {"json"}})
	default:
		body, err = t.configSection(ctx, kind.section, false)
	}
	if err != nil {
		return err
	}
	if a.opts.output != outputTable {
		return writeRaw(a.stdout, body, a.opts.output)
	}
	return kind.table(a, body)
}

// checkOutput refuses an -o value other than json or yaml.
func checkOutput(o string) error {
	if o != outputTable && o != outputJSON && o != outputYAML {
		return usagef("--output: %q is not json or yaml", o)
	}
	return nil
}

// parseSection parses a /config_dump section of typeURL into v.
func parseSection(raw []byte, typeURL string, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("parse /config_dump %s: %w", strings.TrimPrefix(typeURL, "type.googleapis.com/envoy.admin.v3."), err)
	}
	return nil
}
