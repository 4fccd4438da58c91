package kubectl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The /config_dump sections the proxy-config commands show, by type URL.
const (
	bootstrapDumpType = "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"
	clustersDumpType  = "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
	listenersDumpType = "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
	routesDumpType    = "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"
	secretsDumpType   = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
	endpointsDumpType = "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump"
)

// configSection reads /config_dump (with EDS when includeEDS) and returns
// its section of typeURL, as the proxy wrote it.
func (t *target) configSection(ctx context.Context, typeURL string, includeEDS bool) (json.RawMessage, error) {
	q := url.Values{}
	if includeEDS {
		q.Set("include_eds", "")
	}
	body, err := t.get(ctx, "/config_dump", q)
	if err != nil {
		return nil, err
	}
	return findSection(body, typeURL)
}

// findSection picks the section of typeURL out of a /config_dump answer.
func findSection(body []byte, typeURL string) (json.RawMessage, error) {
	var dump struct {
		Configs []json.RawMessage `json:"configs"`
	}
	if err := json.Unmarshal(body, &dump); err != nil {
		return nil, fmt.Errorf("parse /config_dump: %w", err)
	}
	for _, c := range dump.Configs {
		var head struct {
			Type string `json:"@type"`
		}
		if err := json.Unmarshal(c, &head); err != nil {
			return nil, fmt.Errorf("parse /config_dump: %w", err)
		}
		if head.Type == typeURL {
			return c, nil
		}
	}
	return nil, fmt.Errorf("/config_dump has no %s section", strings.TrimPrefix(typeURL, "type.googleapis.com/"))
}

// writeRaw prints an admin answer's JSON as JSON (indented) or YAML.
func writeRaw(w io.Writer, raw json.RawMessage, format string) error {
	switch format {
	case outputYAML:
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return fmt.Errorf("convert to YAML: %w", err)
		}
		_, err = w.Write(y)
		return err
	default:
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return fmt.Errorf("indent JSON: %w", err)
		}
		b.WriteByte('\n')
		_, err := b.WriteTo(w)
		return err
	}
}

// lastUpdated shows a last_updated timestamp as an age ("-" if absent).
func (a *app) lastUpdated(ts string) string {
	if ts == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return age(a.now().Sub(t))
}

// shortName drops the proxy./envoy. category prefix of an extension name
// (envoy.filters.network.tcp_proxy -> tcp_proxy).
func shortName(name string) string {
	for _, p := range []string{"envoy.filters.network.", "proxy.filters.network.", "envoy.filters.http.", "proxy.filters.http.",
		"envoy.filters.listener.", "proxy.filters.listener."} {
		if s, ok := strings.CutPrefix(name, p); ok {
			return s
		}
	}
	return name
}
