// Package bootstrap loads and validates the proxy's configuration: an Envoy
// v3 Bootstrap read from --config-path (.yaml, .yml, .json, .pb or .pb_text)
// and/or --config-yaml, merged the way Envoy merges them.
//
// Loading is strict: every unknown field is reported with its full path
// (static_resources.listeners[0].bar), including fields inside typed_config,
// unless the caller allows unknown static fields, in which case they are
// dropped and their paths returned so the caller can warn about them.
//
// Validation runs three passes and reports every problem it finds, not just
// the first: the constraints generated from the API's protoc-gen-validate
// annotations, the support check (a field or extension Outrigger does not
// implement is an error naming its path, never a silent no-op), and
// semantic checks the annotations cannot express.
package bootstrap
