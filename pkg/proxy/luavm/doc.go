// Package luavm is what the proxy's Lua extensions share: the HTTP filter
// (filters/http/lua) and the cluster specifier plugin
// (clusterspecifier/lua). It compiles a script once, opens sandboxed
// gopher-lua states that load it (the Lua 5.1 libraries Envoy's scripts
// use, without io, debug or the os functions that end the process or
// touch files; string.rep bounded), runs calls within a time budget that
// stops a looping script, and keeps a pool of idle states per script, as
// Envoy keeps one state per worker, so that globals a script sets live on
// in its state.
package luavm
