package bootstrap

import "testing"

func TestValidateWatchdog(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"main thread timeouts": {overlay: "watchdogs: {main_thread_watchdog: {miss_timeout: 0.05s, megamiss_timeout: 0.5s, kill_timeout: 0s}}"},
		"deprecated watchdog":  {overlay: "watchdog: {miss_timeout: 0.3s}"},
		"what it cannot do": {
			overlay: `watchdogs: {main_thread_watchdog: {miss_timeout: 0s, kill_timeout: 10s, multikill_timeout: 5s, multikill_threshold: {value: 50}, actions: [{event: KILL, config: {name: p, typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}}}]}, worker_watchdog: {miss_timeout: 1s}}`,
			want: []string{
				"watchdogs.main_thread_watchdog.actions: not supported by Outrigger",
				"watchdogs.worker_watchdog: not supported by Outrigger: its watchdog watches the Go runtime's scheduling, see docs/stats.md (there are no worker threads)",
				"watchdogs.main_thread_watchdog.kill_timeout: not supported by Outrigger: its watchdog watches the Go runtime's scheduling, see docs/stats.md",
				"watchdogs.main_thread_watchdog.multikill_timeout: not supported by Outrigger: its watchdog watches the Go runtime's scheduling, see docs/stats.md",
				"watchdogs.main_thread_watchdog.multikill_threshold: not supported by Outrigger: its watchdog watches the Go runtime's scheduling, see docs/stats.md",
				"watchdogs.main_thread_watchdog.miss_timeout: must be greater than 0",
			},
		},
		"both fields": {
			overlay: "{watchdog: {miss_timeout: 0.3s}, watchdogs: {main_thread_watchdog: {miss_timeout: 0.3s}}}",
			want:    []string{"watchdog: cannot be set together with watchdogs"},
		},
	})
}

// TestValidateXDSTPBootstrap: the xDS-TP bootstrap fields, which Envoy
// declares but does not implement, are refused saying so.
func TestValidateXDSTPBootstrap(t *testing.T) {
	const why = ": not implemented by Envoy either (not yet implemented there), so not supported by Outrigger"
	runValidateCases(t, map[string]validateCase{
		"xds-tp": {
			overlay: "{node_context_params: [metadata], config_sources: [{ads: {}}], default_config_source: {ads: {}}}",
			want: []string{
				"node_context_params" + why,
				"config_sources" + why,
				"default_config_source" + why,
			},
		},
	})
}
