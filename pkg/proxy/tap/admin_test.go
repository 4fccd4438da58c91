package tap

import (
	"strings"
	"testing"
)

const request = `{config_id: debug, tap_config: {match: {any_match: true}, output_config: {sinks: [{streaming_admin: {}}]}}}`

func TestRegistrySessions(t *testing.T) {
	var r Registry
	if r.HasFilters() {
		t.Fatal("an empty registry has filters")
	}
	r.Register("debug", HTTPFilter)
	if _, err := r.AttachTap([]byte(strings.Replace(request, "debug", "other", 1))); err == nil ||
		err.Error() != "Unknown config id 'other'. No extension has registered with this id." {
		t.Errorf("unknown id: %v", err)
	}
	s, err := r.AttachTap([]byte(request))
	if err != nil {
		t.Fatal(err)
	}
	if r.Active("debug") == nil || r.Active("other") != nil {
		t.Error("the session is not active for its id only")
	}
	if _, err := r.AttachTap([]byte(request)); err == nil || err.Error() != "An attached /tap admin stream already exists. Detach it." {
		t.Errorf("second attach: %v", err)
	}
	active := r.Active("debug")
	active.Submit(active.NewTrace().Wrapper(active.Format), 1)
	if tr := <-s.Traces(); !strings.Contains(string(tr), "http_buffered_trace") {
		t.Errorf("trace %s", tr)
	}
	s.Detach()
	if r.Active("debug") != nil {
		t.Error("still active after Detach")
	}
	s, err = r.AttachTap([]byte(request))
	if err != nil {
		t.Fatalf("attach after detach: %v", err)
	}
	s.Detach()
	r.Unregister("debug", HTTPFilter)
	if r.HasFilters() {
		t.Error("filters left after the last one unregistered")
	}
	if _, err := r.AttachTap([]byte(request)); err == nil || !strings.HasPrefix(err.Error(), "Unknown config id 'debug'") {
		t.Errorf("attach to an unregistered id: %v", err)
	}
}

func TestAttachJSONAndLegacyMatch(t *testing.T) {
	var r Registry
	r.Register("debug", HTTPFilter)
	s, err := r.AttachTap([]byte(`{"config_id": "debug", "tap_config": {"match_config": {"any_match": true},
		"output_config": {"sinks": [{"streaming_admin": {}}], "max_buffered_rx_bytes": 7}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Detach()
	if c := r.Active("debug"); c == nil || c.MaxRx != 7 || c.MaxTx != DefaultMaxBufferedBytes || !c.Match.Matches(&Exchange{}) {
		t.Errorf("session config %+v", c)
	}
}

func TestAttachRefusals(t *testing.T) {
	var r Registry
	r.Register("debug", HTTPFilter)
	cases := map[string]struct{ body, want string }{
		"not yaml":     {`{`, "Unable to parse tap request"},
		"unknown":      {`{config_id: debug, bogus: 1}`, "bogus"},
		"no id":        {`{tap_config: {}}`, "config_id"},
		"min sent":     {strings.Replace(request, "[{streaming_admin: {}}]", "[{streaming_admin: {}}], min_streamed_sent_bytes: 1", 1), "tap_config.output_config.min_streamed_sent_bytes"},
		"file sink":    {strings.Replace(request, "streaming_admin: {}", "file_per_tap: {path_prefix: /tmp/x}", 1), "tap_config.output_config.sinks[0]"},
		"proto format": {strings.Replace(request, "streaming_admin: {}", "streaming_admin: {}, format: PROTO_BINARY", 1), "tap_config.output_config.sinks[0].format"},
		"no sample":    {strings.Replace(request, "output_config:", "tap_enabled: {runtime_key: k}, output_config:", 1), "tap_config.tap_enabled.default_value: required"},
		"two sinks":    {strings.Replace(request, "[{streaming_admin: {}}]", "[{streaming_admin: {}}, {streaming_admin: {}}]", 1), "tap_config.output_config.sinks"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := r.AttachTap([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// min_streamed_sent_bytes is for config ids of tap transport sockets only
// (Envoy's HTTP filter never reads it), and with streaming only.
func TestAttachMinStreamedSent(t *testing.T) {
	var r Registry
	r.Register("http", HTTPFilter)
	r.Register("sock", TransportSocket)
	body := func(id string) []byte {
		return []byte(`{config_id: ` + id + `, tap_config: {match: {any_match: true}, output_config: {sinks: [{streaming_admin: {}}], streaming: true, min_streamed_sent_bytes: 16}}}`)
	}
	if _, err := r.AttachTap(body("http")); err == nil || !strings.HasPrefix(err.Error(), "tap_config.output_config.min_streamed_sent_bytes: not supported by the tap HTTP filter") {
		t.Errorf("HTTP filter id: %v", err)
	}
	s, err := r.AttachTap(body("sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Detach()
	if c := r.Active("sock"); c == nil || c.MinStreamedSent != 16 {
		t.Errorf("session config %+v", c)
	}
}

// A session ends when the last extension is gone (/tap with it), not
// while others remain: an extension registering its id again is tapped.
func TestSessionEndsWithTheLastExtension(t *testing.T) {
	var r Registry
	r.Register("debug", TransportSocket)
	r.Register("other", HTTPFilter)
	sess, err := r.AttachTap([]byte(request))
	if err != nil {
		t.Fatal(err)
	}
	ended := func() bool {
		select {
		case <-sess.Done():
			return true
		default:
			return false
		}
	}
	r.Unregister("debug", TransportSocket)
	if ended() {
		t.Fatal("ended while an extension remains")
	}
	r.Register("debug", HTTPFilter)
	if r.Active("debug") == nil {
		t.Error("an extension registering the id again is not tapped")
	}
	r.Unregister("debug", HTTPFilter)
	r.Unregister("other", HTTPFilter)
	if !ended() {
		t.Fatal("not ended with the last extension gone")
	}
	if r.Active("debug") != nil {
		t.Error("still active after it ended")
	}
	sess.Detach()
}
