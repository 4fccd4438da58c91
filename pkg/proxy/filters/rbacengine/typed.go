package rbacengine

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
)

// unpackTyped reads the typed_config of an RBAC extension (a permission
// matcher, a custom principal) into cfg, the one config type the engine
// implements for that slot; kind names the slot in the error. Errors name
// the field below the extension.
func unpackTyped(c *corev3.TypedExtensionConfig, cfg proto.Message, kind string) error {
	tc := c.GetTypedConfig()
	if tc == nil {
		return errors.New("typed_config: required")
	}
	if tc.GetTypeUrl() != "type.googleapis.com/"+string(proto.MessageName(cfg)) {
		return fmt.Errorf("typed_config: %s %s is not supported by Outrigger (%s is)",
			kind, tc.GetTypeUrl(), proto.MessageName(cfg))
	}
	if err := tc.UnmarshalTo(cfg); err != nil {
		return fmt.Errorf("typed_config: %w", err)
	}
	return nil
}
