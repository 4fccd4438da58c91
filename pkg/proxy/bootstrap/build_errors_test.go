package bootstrap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

func TestWithBuildErrors(t *testing.T) {
	validation := errors.Join(
		&FieldError{Path: "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.tracing", Reason: "not supported by Outrigger"},
		&FieldError{Path: "admin.address.socket_address.port_value", Reason: "value must be less than or equal to 65535"},
	)
	build := errors.Join(
		// Below a path validation already reported: dropped.
		fmt.Errorf("static_resources.listeners[0].filter_chains[0].filters[0].typed_config.tracing.provider: %w", errors.New("no tracer")),
		// The same text again: dropped.
		&FieldError{Path: "admin.address.socket_address.port_value", Reason: "value must be less than or equal to 65535"},
		// Only building finds these: kept, in order, once each.
		fmt.Errorf("static_resources.listeners[1].filter_chains[0].filters[0].typed_config.access_log[0]: %w",
			&FieldError{Path: "format", Reason: "command operator %FOO% is not supported by Outrigger"}),
		&FieldError{Path: "static_resources.clusters[0].load_assignment", Reason: "bad"},
		&FieldError{Path: "static_resources.clusters[0].load_assignment", Reason: "bad"},
		// A sibling whose name extends a reported one is not inside it.
		&FieldError{Path: "admin.address.socket_address.port_value2", Reason: "other"},
		errors.New("a problem of the whole configuration: no path"),
	)
	got := fieldpath.Split(WithBuildErrors(validation, build))
	want := []string{
		"static_resources.listeners[0].filter_chains[0].filters[0].typed_config.tracing: not supported by Outrigger",
		"admin.address.socket_address.port_value: value must be less than or equal to 65535",
		"static_resources.listeners[1].filter_chains[0].filters[0].typed_config.access_log[0]: format: command operator %FOO% is not supported by Outrigger",
		"static_resources.clusters[0].load_assignment: bad",
		"admin.address.socket_address.port_value2: other",
		"a problem of the whole configuration: no path",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("error %d = %q, want %q", i, got[i], want[i])
		}
	}
	if err := WithBuildErrors(nil, nil); err != nil {
		t.Errorf("no errors: got %v", err)
	}
}
