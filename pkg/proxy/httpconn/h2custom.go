package httpconn

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// The SETTINGS identifiers custom_settings_parameters may not carry when
// their named field is set (RFC 9113 §6.5.2, RFC 8441 §3).
const (
	settingHeaderTableSize = 0x1
)

// validateCustomSettings applies Envoy's rules to custom_settings_parameters
// (source/common/http/protocol_options.cc): server push cannot be enabled,
// extended CONNECT is only configured by allow_connect, an identifier
// given twice must carry one value, and an identifier whose named field
// (hpack_table_size, max_concurrent_streams, initial_stream_window_size)
// is set cannot be given again. Other identifiers, known or not, are sent,
// and the named settings after them, so that the named values (their
// defaults when unset) are the ones the client keeps, as with Envoy.
// Outrigger also refuses a SETTINGS_MAX_FRAME_SIZE it would not honour.
func validateCustomSettings(h2 *corev3.Http2ProtocolOptions) error {
	seen := make(map[uint32]uint32)
	var inconsistent, collisions []string
	for _, p := range h2.GetCustomSettingsParameters() {
		id, v := p.GetIdentifier().GetValue(), p.GetValue().GetValue()
		if prev, ok := seen[id]; ok && prev != v {
			inconsistent = append(inconsistent, fmt.Sprintf("0x%02x", id))
		}
		if _, ok := seen[id]; !ok {
			seen[id] = v
		}
		switch id {
		case settingEnablePush:
			if v == 1 {
				return errors.New("custom_settings_parameters: server push is not supported by Envoy and can not be enabled via a SETTINGS parameter")
			}
		case settingEnableConnectProtocol:
			return errors.New(`custom_settings_parameters: the "allow_connect" SETTINGS parameter must only be configured through the named field`)
		case settingHeaderTableSize:
			if h2.GetHpackTableSize() != nil {
				collisions = append(collisions, "hpack_table_size")
			}
		case settingMaxConcurrentStreams:
			if h2.GetMaxConcurrentStreams() != nil {
				collisions = append(collisions, "max_concurrent_streams")
			}
		case settingInitialWindowSize:
			if h2.GetInitialStreamWindowSize() != nil {
				collisions = append(collisions, "initial_stream_window_size")
			}
		case settingMaxFrameSize:
			// The server reads frames of the protocol's default size
			// only: a larger one announced would be refused.
			if v != h2DefaultMaxFrame {
				return fmt.Errorf("custom_settings_parameters: SETTINGS_MAX_FRAME_SIZE (0x5) other than %d is not supported by Outrigger", h2DefaultMaxFrame)
			}
		}
	}
	if len(inconsistent) > 0 {
		return fmt.Errorf("custom_settings_parameters: inconsistent HTTP/2 custom SETTINGS parameter(s) detected; identifiers = {%s}", strings.Join(inconsistent, ","))
	}
	if len(collisions) > 0 {
		return fmt.Errorf("custom_settings_parameters: the {%s} HTTP/2 SETTINGS parameter(s) can not be configured through both named and custom parameters", strings.Join(collisions, ","))
	}
	return nil
}

// hasCustomSetting reports whether pairs (customSettings) carry id.
func hasCustomSetting(pairs []uint32, id uint32) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == id {
			return true
		}
	}
	return false
}

// customSettings returns the custom parameters to send, each identifier
// once (the first of equal duplicates), in the configured order, as Envoy
// sends them ahead of its named settings.
func customSettings(h2 *corev3.Http2ProtocolOptions) []uint32 {
	var pairs []uint32
	seen := make(map[uint32]bool)
	for _, p := range h2.GetCustomSettingsParameters() {
		id := p.GetIdentifier().GetValue()
		if seen[id] {
			continue
		}
		seen[id] = true
		pairs = append(pairs, id, p.GetValue().GetValue())
	}
	return pairs
}
