package listener

import (
	"errors"
	"fmt"
	"net"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
)

// An internal listener (Listener.internal_listener) has no socket: it
// takes the in-memory connections that upstream connections to an
// envoy_internal_address naming it open (see AcceptInternal). Everything
// past the socket is a listener's like any other: listener filters that
// read the connection's bytes, filter chains, stats, drain, access logs.

// ErrNoBootstrapExtension refuses an internal listener when the bootstrap
// lacks the internal_listener extension, which Envoy makes mandatory.
var ErrNoBootstrapExtension = errors.New("internal_listener: the InternalListener bootstrap extension (envoy.bootstrap.internal_listener in bootstrap_extensions) is mandatory")

// internalErrors checks an internal listener's configuration as Envoy's
// listener manager does: no address, none of the TCP listener features
// that need a socket, no socket options; and, in Outrigger, none of
// use_original_dst (there is no original destination to restore).
func internalErrors(lc *listenerv3.Listener, haveExtension bool) []error {
	var errs []error
	if !haveExtension {
		errs = append(errs, ErrNoBootstrapExtension)
	}
	if lc.GetAddress() != nil {
		errs = append(errs, errors.New("address: should not be used when an internal listener config is provided"))
	}
	if len(lc.GetAdditionalAddresses()) > 0 {
		errs = append(errs, errors.New("additional_addresses: should not be used when an internal listener config is provided"))
	}
	unsupported := func(field string) {
		errs = append(errs, fmt.Errorf("%s: an internal listener has no socket: unsupported tcp listener feature", field))
	}
	if lc.GetConnectionBalanceConfig().GetExactBalance() != nil {
		unsupported("connection_balance_config.exact_balance")
	}
	if lc.GetEnableMptcp() {
		unsupported("enable_mptcp")
	}
	if lc.GetEnableReusePort() != nil {
		unsupported("enable_reuse_port")
	}
	if lc.GetFreebind().GetValue() {
		unsupported("freebind")
	}
	if lc.GetTcpBacklogSize() != nil {
		unsupported("tcp_backlog_size")
	}
	if lc.GetTcpFastOpenQueueLength() != nil {
		unsupported("tcp_fast_open_queue_length")
	}
	if lc.GetTransparent().GetValue() {
		unsupported("transparent")
	}
	if len(lc.GetSocketOptions()) > 0 {
		errs = append(errs, errors.New("socket_options: an internal listener does not support socket options"))
	}
	if lc.GetUseOriginalDst().GetValue() {
		errs = append(errs, errors.New("use_original_dst: not supported on an internal listener (its connections have no original destination)"))
	}
	return errs
}

// internalAddressErrors refuses an envoy_internal_address as a listening
// address: an internal listener says internal_listener instead, as Envoy
// requires.
func internalAddressErrors(lc *listenerv3.Listener) []error {
	const why = "envoy_internal_address: use the internal_listener field instead of address for internal listeners"
	var errs []error
	if lc.GetAddress().GetEnvoyInternalAddress() != nil {
		errs = append(errs, errors.New("address."+why))
	}
	for i, aa := range lc.GetAdditionalAddresses() {
		if aa.GetAddress().GetEnvoyInternalAddress() != nil {
			errs = append(errs, fmt.Errorf("additional_addresses[%d].address.%s", i, why))
		}
	}
	return errs
}

// Internal reports whether the listener is an internal listener.
func (l *Listener) Internal() bool { return l.internal }

// internalAddress is an internal listener's address as /listeners and
// /config_dump show it: its name.
func (l *Listener) internalAddress() *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{EnvoyInternalAddress: &corev3.EnvoyInternalAddress{
		AddressNameSpecifier: &corev3.EnvoyInternalAddress_ServerListenerName{ServerListenerName: l.name},
	}}}
}

// ErrInternalStopped refuses a connection to an internal listener that no
// longer serves.
var ErrInternalStopped = errors.New("internal listener stopped")

// AcceptInternal admits a connection to an internal listener as accept
// does one a socket accepted (limits, overload actions, listener filters,
// filter chain), each connection counting for the next worker in turn.
// It fails, leaving c to the caller, when the listener is not serving.
func (l *Listener) AcceptInternal(c net.Conn) error {
	l.mu.Lock()
	ok := l.internal && l.serving && !l.stopped
	l.mu.Unlock()
	if !ok {
		return ErrInternalStopped
	}
	w := int(l.nextWorker.Add(1)-1) % len(l.workerStats)
	l.accept(c, &l.workerStats[w])
	return nil
}
