package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// unsupportedReason is the refusal of a populated field missing from the
// support tables.
func unsupportedReason(name protoreflect.FullName) string {
	if why, ok := refusedTLS[name]; ok {
		return why
	}
	return "not supported by Outrigger"
}
