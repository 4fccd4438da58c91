package kubectl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// tapCommand is `tap POD --config-id ID`.
func tapCommand() command {
	return command{
		name:    "tap",
		usage:   "POD (--config-id ID | -f FILE) [--count N] [-o json|yaml]",
		summary: "stream the traces of a pod's tap filter (POST /tap) until --count traces, an interrupt or the proxy ends the stream",
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.configID, "config-id", "", "config_id of the tap filter (envoy.filters.http.tap admin_config) to stream; every request is traced (any_match) unless -f says otherwise")
			fs.StringVarP(&o.tapFile, "filename", "f", "", "tap request to send, YAML or JSON: the /tap body (config_id and tap_config), or a tap_config alone (then --config-id names the filter)")
			fs.IntVar(&o.count, "count", 0, "stop after this many trace messages (each segment of a streamed trace counts); 0 streams until interrupted")
			fs.StringVarP(&o.output, "output", "o", outputJSON, "format of each trace: json (one document per trace) or yaml (documents separated by ---)")
		},
		needsCluster: true,
		run:          runTap,
	}
}

// runTap attaches a /tap session to the pod's proxy and writes each trace
// to stdout as it arrives. The proxy answers a tap request it refuses
// (another session attached, an unknown config id, a bad body) with 400
// and its reason, which becomes the command's error.
func runTap(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("tap: want POD, got %d arguments", len(args))
	}
	if a.opts.count < 0 {
		return usagef("tap: --count: %d is negative", a.opts.count)
	}
	if a.opts.output != outputJSON && a.opts.output != outputYAML {
		return usagef("--output: %q is not json or yaml", a.opts.output)
	}
	body, err := tapRequest(a.opts.configID, a.opts.tapFile)
	if err != nil {
		return err
	}
	t, err := a.openPod(ctx, args[0])
	if err != nil {
		return err
	}
	defer t.close()
	help, err := t.get(ctx, "/help", nil)
	if err != nil {
		return err
	}
	if !hasEndpoint(string(help), "/tap") {
		return fmt.Errorf("tap: the proxy of pod %s/%s has no /tap admin endpoint: its configuration has no tap filter "+
			"(envoy.filters.http.tap) with admin_config", t.endpoint.Namespace, t.endpoint.Pod)
	}
	stream, err := t.session.Stream(ctx, http.MethodPost, "/tap", body)
	if err != nil {
		return t.wrap(err)
	}
	defer func() { _ = stream.Close() }()
	dec := json.NewDecoder(stream)
	for n := 0; a.opts.count == 0 || n < a.opts.count; n++ {
		var trace json.RawMessage
		if err := dec.Decode(&trace); err != nil {
			switch {
			case ctx.Err() != nil, errors.Is(err, io.EOF):
				// Interrupted, or the proxy ended the session.
				return nil
			default:
				return fmt.Errorf("tap: pod %s/%s: read the trace stream: %w", t.endpoint.Namespace, t.endpoint.Pod, err)
			}
		}
		if a.opts.output == outputYAML {
			if _, err := io.WriteString(a.stdout, "---\n"); err != nil {
				return err
			}
		}
		if err := writeRaw(a.stdout, trace, a.opts.output); err != nil {
			return err
		}
	}
	return nil
}

// tapRequest is the /tap body: a tap of every request on configID's
// filter, or the request in file (YAML or JSON), which is either a whole
// /tap body or a tap_config alone. configID names the filter when the
// file has none and must agree with it when it has one.
func tapRequest(configID, file string) ([]byte, error) {
	if file == "" {
		if configID == "" {
			return nil, usagef("tap: --config-id or -f is required")
		}
		return json.Marshal(map[string]any{
			"config_id": configID,
			"tap_config": map[string]any{
				"match":         map[string]any{"any_match": true},
				"output_config": map[string]any{"sinks": []any{map[string]any{"streaming_admin": map[string]any{}}}},
			},
		})
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tap: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("tap: %s: %w", file, err)
	}
	// Numbers stay as written (64-bit values included).
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, fmt.Errorf("tap: %s: want a /tap request (config_id, tap_config) or a tap_config, as a YAML or JSON object", file)
	}
	_, hasConfig := doc["tap_config"]
	if _, hasID := doc["config_id"]; !hasConfig && !hasID {
		// A tap_config alone, as a filter's static_config holds it.
		doc = map[string]any{"tap_config": doc}
	}
	switch id, _ := doc["config_id"].(string); {
	case configID != "" && id != "" && id != configID:
		return nil, usagef("tap: --config-id %q and the config_id %q of %s differ", configID, id, file)
	case configID != "":
		doc["config_id"] = configID
	case id == "":
		return nil, usagef("tap: %s has no config_id: pass --config-id", file)
	}
	for k := range doc {
		if k != "config_id" && k != "tap_config" {
			return nil, fmt.Errorf("tap: %s: unknown field %q of a /tap request (config_id, tap_config)", file, k)
		}
	}
	return json.Marshal(doc)
}

// hasEndpoint reports whether a /help listing has path: one line per
// endpoint, "  /<path>: <help>" ("  /<path> (POST): <help>" for one that
// changes something), its parameters indented further.
func hasEndpoint(help, path string) bool {
	for _, line := range strings.Split(help, "\n") {
		item, ok := strings.CutPrefix(line, "  /")
		p, _, found := strings.Cut(item, ":")
		if ok && found && "/"+strings.TrimSuffix(p, " (POST)") == path {
			return true
		}
	}
	return false
}
