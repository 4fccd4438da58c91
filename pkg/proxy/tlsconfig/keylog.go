package tlsconfig

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
)

// KeyLogOpener opens the file a key_log path names: a writer shared by
// every context logging there, taking one Write per line from many
// goroutines at once (the server's access log files, flushed by
// --file-flush-interval-msec and reopened by /reopen_logs, as Envoy
// writes its key logs through its access log manager).
type KeyLogOpener func(path string) (io.Writer, error)

// keyLog is a compiled CommonTlsContext.key_log: the handshakes of
// connections whose addresses are in its ranges write their secrets to w
// in the NSS key log format (SSLKEYLOGFILE), which Go's KeyLogWriter
// writes as BoringSSL's key log callback does.
type keyLog struct {
	w             io.Writer
	local, remote cidr.Set
}

// compileKeyLog compiles key_log; nil when it logs nothing (no key_log,
// or an empty path, which Envoy takes as off). Errors name the field
// below the CommonTlsContext.
func compileKeyLog(kl *tlsv3.TlsKeyLog, open KeyLogOpener) (*keyLog, error) {
	if kl.GetPath() == "" {
		return nil, nil
	}
	var errs []error
	k := &keyLog{}
	for i, r := range kl.GetLocalAddressRange() {
		p, err := cidr.Parse(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("key_log.local_address_range[%d].%w", i, err))
		}
		k.local = append(k.local, p)
	}
	for i, r := range kl.GetRemoteAddressRange() {
		p, err := cidr.Parse(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("key_log.remote_address_range[%d].%w", i, err))
		}
		k.remote = append(k.remote, p)
	}
	if open == nil {
		errs = append(errs, errors.New("key_log.path: key log files cannot be opened here"))
	} else if w, err := open(kl.GetPath()); err != nil {
		errs = append(errs, fmt.Errorf("key_log.path: %w", err))
	} else {
		k.w = w
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return k, nil
}

// wants reports whether the connection between local and remote logs
// its keys: each address in its ranges, when it has any (Envoy's check;
// an address that is not IP, a pipe's, is in no range).
func (k *keyLog) wants(local, remote net.Addr) bool {
	if k == nil {
		return false
	}
	return inRanges(k.local, local) && inRanges(k.remote, remote)
}

// inRanges reports whether a is in s, or s is empty.
func inRanges(s cidr.Set, a net.Addr) bool {
	if len(s) == 0 {
		return true
	}
	if a == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && s.Contains(ap.Addr())
}
