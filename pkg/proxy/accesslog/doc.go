// Package accesslog formats access-log lines with Envoy's substitution
// format strings: the default text format, custom text formats and
// json_format objects, built from a FileAccessLog configuration.
//
// It is pure: it neither opens files nor reads clocks. The connection
// manager fills an Entry per request and appends the formatted line to a
// buffer it owns; Append allocates nothing on that path. The same
// formatter renders the % operators of route header values (package
// router), so both share one operator set.
package accesslog
