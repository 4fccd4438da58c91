package options

import (
	"strings"
	"testing"
)

func TestUsageGolden(t *testing.T) {
	checkGolden(t, "usage.golden", []byte(Usage()))
}

// TestUsageListsEveryOption checks each option's help entry: its names, its
// value type and its default, whatever the golden file says.
func TestUsageListsEveryOption(t *testing.T) {
	usage := Usage()
	tests := map[string]string{
		"config path":  "  -c, --config-path <path>  (default: none)\n",
		"log level":    "  -l, --log-level <level>  (default: info)\n",
		"help":         "  -h, --help  (default: off)\n",
		"concurrency":  "  --concurrency <uint32>  (default: number of hardware threads)\n",
		"socket mode":  "  --socket-mode <octal>  (default: 600)\n",
		"socket path":  "  --socket-path <path>  (default: @proxy_domain_socket)\n",
		"log format":   "  --log-format <format>  (default: \"[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v\")\n",
		"flush":        "  --file-flush-interval-msec <uint32>  (default: 10000)\n",
		"flush size":   "  --file-flush-min-size-kb <uint32>  (default: 64)\n",
		"drain time":   "  --drain-time-s <uint32>  (default: 600)\n",
		"parent":       "  --parent-shutdown-time-s <uint32>  (default: 900)\n",
		"name length":  "  --max-obj-name-len <uint64>  (default: 60)\n",
		"max stats":    "  --max-stats <uint64>  (default: 16384)\n",
		"mode":         "  --mode <serve|validate|init_only>  (default: serve)\n",
		"drain policy": "  --drain-strategy <gradual|immediate>  (default: gradual)\n",
		"ip version":   "  --local-address-ip-version <v4|v6>  (default: v4)\n",
	}
	for name, line := range tests {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(usage, line) {
				t.Errorf("Usage() lacks %q", line)
			}
		})
	}
	for i := range optionTable {
		o := &optionTable[i]
		if !strings.Contains(usage, "--"+o.long+" ") && !strings.Contains(usage, "--"+o.long+"\n") {
			t.Errorf("Usage() does not list --%s", o.long)
		}
		if o.help == "" || strings.Contains(o.help, "\n") {
			t.Errorf("--%s needs a one-line description, got %q", o.long, o.help)
		}
	}
}
