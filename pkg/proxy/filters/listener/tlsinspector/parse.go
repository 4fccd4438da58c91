package tlsinspector

import (
	"errors"
	"strings"
)

// clientHello is what the filter takes from a ClientHello.
type clientHello struct {
	serverName string
	alpn       []string
	// length is how many bytes of records it took.
	length int
	// body is the ClientHello message's body, for the fingerprints.
	body []byte
}

var (
	// errNotTLS: the bytes are not a TLS ClientHello.
	errNotTLS = errors.New("not a TLS ClientHello")
	// errTooLarge: the ClientHello is larger than the filter's limit.
	errTooLarge = errors.New("ClientHello too large")
)

// TLS record and handshake constants.
const (
	recordHeaderLen     = 5
	recordTypeHandshake = 0x16
	handshakeHeaderLen  = 4
	typeClientHello     = 1
	extServerName       = 0
	extALPN             = 16
	maxRecordLen        = 1<<14 + 2048
)

// parseClientHello reads the ClientHello at the start of b, which may span
// several handshake records. It returns need > 0 when it takes more bytes
// (how many in all), errNotTLS when b cannot start one, errTooLarge past
// limit (max_client_hello_size).
func parseClientHello(b []byte, limit int) (clientHello, int, error) {
	var msg []byte
	off := 0
	for {
		if len(b)-off < recordHeaderLen {
			if err := checkRecordPrefix(b[off:]); err != nil {
				return clientHello{}, 0, err
			}
			return clientHello{}, off + recordHeaderLen, nil
		}
		h := b[off : off+recordHeaderLen]
		if err := checkRecordPrefix(h); err != nil {
			return clientHello{}, 0, err
		}
		n := int(h[3])<<8 | int(h[4])
		if n == 0 || n > maxRecordLen {
			return clientHello{}, 0, errNotTLS
		}
		end := off + recordHeaderLen + n
		if end > limit+recordHeaderLen*4 {
			return clientHello{}, 0, errTooLarge
		}
		if len(b) < end {
			return clientHello{}, end, nil
		}
		msg = append(msg, b[off+recordHeaderLen:end]...)
		off = end
		if len(msg) < handshakeHeaderLen {
			continue
		}
		if msg[0] != typeClientHello {
			return clientHello{}, 0, errNotTLS
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > limit {
			return clientHello{}, 0, errTooLarge
		}
		if len(msg) < handshakeHeaderLen+size {
			continue
		}
		ch, ok := parseHelloBody(msg[handshakeHeaderLen : handshakeHeaderLen+size])
		if !ok {
			return clientHello{}, 0, errNotTLS
		}
		ch.length = off
		ch.body = msg[handshakeHeaderLen : handshakeHeaderLen+size]
		return ch, 0, nil
	}
}

// checkRecordPrefix checks what there is of a record header: a handshake
// record of a TLS (3.x) version.
func checkRecordPrefix(h []byte) error {
	if len(h) > 0 && h[0] != recordTypeHandshake {
		return errNotTLS
	}
	if len(h) > 1 && h[1] != 3 {
		return errNotTLS
	}
	return nil
}

// reader reads the length-prefixed fields of a handshake message.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) skip(n int) {
	if !r.ok || n > len(r.b) {
		r.ok = false
		return
	}
	r.b = r.b[n:]
}

// vec reads a field with a size prefix of n bytes.
func (r *reader) vec(n int) []byte {
	if !r.ok || len(r.b) < n {
		r.ok = false
		return nil
	}
	size := 0
	for i := range n {
		size = size<<8 | int(r.b[i])
	}
	r.b = r.b[n:]
	if size > len(r.b) {
		r.ok = false
		return nil
	}
	v := r.b[:size]
	r.b = r.b[size:]
	return v
}

func (r *reader) u16() int {
	if !r.ok || len(r.b) < 2 {
		r.ok = false
		return 0
	}
	v := int(r.b[0])<<8 | int(r.b[1])
	r.b = r.b[2:]
	return v
}

// parseHelloBody reads a ClientHello body: the version, random, session
// id, cipher suites and compression methods are skipped; the server_name
// and ALPN extensions are read.
func parseHelloBody(body []byte) (clientHello, bool) {
	r := reader{b: body, ok: true}
	r.skip(2 + 32)
	r.vec(1) // session id
	r.vec(2) // cipher suites
	r.vec(1) // compression methods
	if !r.ok {
		return clientHello{}, false
	}
	var ch clientHello
	if len(r.b) == 0 {
		return ch, true // no extensions
	}
	exts := reader{b: r.vec(2), ok: r.ok}
	for exts.ok && len(exts.b) > 0 {
		typ := exts.u16()
		data := reader{b: exts.vec(2), ok: exts.ok}
		switch typ {
		case extServerName:
			list := reader{b: data.vec(2), ok: data.ok}
			for list.ok && len(list.b) > 0 {
				kind := list.b[0]
				list.skip(1)
				name := list.vec(2)
				if list.ok && kind == 0 && ch.serverName == "" {
					ch.serverName = strings.ToLower(string(name))
				}
			}
		case extALPN:
			list := reader{b: data.vec(2), ok: data.ok}
			for list.ok && len(list.b) > 0 {
				p := list.vec(1)
				if list.ok && len(p) > 0 {
					ch.alpn = append(ch.alpn, string(p))
				}
			}
		}
	}
	return ch, exts.ok
}
