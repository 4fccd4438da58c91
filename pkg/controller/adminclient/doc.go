// Package adminclient makes the typed admin calls the controller needs on a
// pod's proxy: /runtime and /runtime_modify, /logging, /healthcheck/fail and
// /healthcheck/ok, /drain_listeners, /quitquitquit, /server_info and the
// downstream connection stats; Get and Post make any other call, for the
// kubectl plugin, which shows admin answers as they are. PodEndpoint and
// HasContainer find a pod's proxy the way both read it.
//
// The calls travel over a Transport, the AdminTransport of the design: the
// proxy's admin interface listens on the pod's loopback address, which only
// a port-forward through the API server (PortForward, the default) reaches;
// Direct dials the pod IP instead, for proxies whose admin listens there and
// for tests.
package adminclient
