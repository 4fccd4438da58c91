package adminclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The parsers below read admin answers, which come from outside the
// controller: they reject what they do not understand rather than guess.

// ParseServerInfo reads the state and current-epoch uptime of a
// /server_info answer.
func ParseServerInfo(body []byte) (ServerInfo, error) {
	var doc struct {
		State  *string `json:"state"`
		Uptime *string `json:"uptime_current_epoch"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return ServerInfo{}, fmt.Errorf("parse server info: %w", err)
	}
	if doc.State == nil || doc.Uptime == nil {
		return ServerInfo{}, errors.New("parse server info: no state or uptime_current_epoch")
	}
	// A protobuf Duration in JSON: decimal seconds with an "s" suffix.
	up, err := time.ParseDuration(*doc.Uptime)
	if err != nil || !strings.HasSuffix(*doc.Uptime, "s") || up < 0 {
		return ServerInfo{}, fmt.Errorf("parse server info: uptime_current_epoch %q is not a duration in seconds", *doc.Uptime)
	}
	return ServerInfo{State: *doc.State, Uptime: up}, nil
}

// Runtime is a /runtime answer.
type Runtime struct {
	// Layers are the layer names, in override order.
	Layers []string
	// Entries maps every key to its values.
	Entries map[string]RuntimeEntry
}

// RuntimeEntry is one key of /runtime.
type RuntimeEntry struct {
	// LayerValues has one value per layer, "" where the layer has none.
	LayerValues []string `json:"layer_values"`
	// FinalValue is the value in effect.
	FinalValue string `json:"final_value"`
}

// ParseRuntime reads a /runtime answer.
func ParseRuntime(body []byte) (Runtime, error) {
	var doc struct {
		Layers  *[]string               `json:"layers"`
		Entries map[string]RuntimeEntry `json:"entries"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Runtime{}, fmt.Errorf("parse runtime: %w", err)
	}
	if doc.Layers == nil {
		return Runtime{}, errors.New("parse runtime: no layers")
	}
	for k, e := range doc.Entries {
		if len(e.LayerValues) != len(*doc.Layers) {
			return Runtime{}, fmt.Errorf("parse runtime: key %q has %d layer values for %d layers", k, len(e.LayerValues), len(*doc.Layers))
		}
	}
	if doc.Entries == nil {
		doc.Entries = map[string]RuntimeEntry{}
	}
	return Runtime{Layers: *doc.Layers, Entries: doc.Entries}, nil
}

// ParseLoggers reads the logger list that /logging prints after the line
// "active loggers:", one "  <name>: <level>" line per logger.
func ParseLoggers(body []byte) (map[string]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), maxBody)
	levels := map[string]string{}
	listing := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "active loggers:":
			listing = true
		case !listing:
		case line == "":
			listing = false
		default:
			item, ok := strings.CutPrefix(line, "  ")
			i := strings.LastIndex(item, ": ")
			if !ok || i <= 0 || i+2 == len(item) {
				return nil, fmt.Errorf("parse loggers: line %q is not \"  <name>: <level>\"", line)
			}
			levels[item[:i]] = item[i+2:]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse loggers: %w", err)
	}
	if len(levels) == 0 {
		return nil, errors.New("parse loggers: no \"active loggers:\" list")
	}
	return levels, nil
}

// perWorker matches the per-worker copy of a listener stat
// (listener.<address>.worker_<n>.<stat>), which the total already counts.
var perWorker = regexp.MustCompile(`\.worker_[0-9]+\.`)

// ParseActiveConnections sums the downstream_cx_active gauges of a
// /stats?format=json answer, leaving out the admin listener's
// (listener.admin.*) and per-worker copies.
func ParseActiveConnections(body []byte) (int64, error) {
	var doc struct {
		Stats *[]json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("parse stats: %w", err)
	}
	if doc.Stats == nil {
		return 0, errors.New("parse stats: no stats list")
	}
	var sum int64
	for _, raw := range *doc.Stats {
		var stat struct {
			Name  *string      `json:"name"`
			Value *json.Number `json:"value"`
		}
		if err := json.Unmarshal(raw, &stat); err != nil {
			return 0, fmt.Errorf("parse stats: %w", err)
		}
		if stat.Name == nil || stat.Value == nil {
			continue // histograms, text readouts
		}
		name := *stat.Name
		if !strings.HasSuffix(name, ".downstream_cx_active") || strings.HasPrefix(name, "listener.admin.") || perWorker.MatchString(name) {
			continue
		}
		v, err := strconv.ParseInt(stat.Value.String(), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("parse stats: %s is %q, not a gauge", name, stat.Value.String())
		}
		if sum+v < sum {
			return 0, fmt.Errorf("parse stats: %s overflows the sum", name)
		}
		sum += v
	}
	return sum, nil
}
