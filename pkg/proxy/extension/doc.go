// Package extension is the registry of the extensions a proxy links in:
// their names (in the proxy. and envoy. spellings), Envoy's categories,
// the config message types that select them, and the factories that build
// them. The configuration support check, /server_info's extension list
// and docs/extensions.md all read one registry, built in one place
// (package builtin); there is no second list.
package extension
