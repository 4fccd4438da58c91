package tlsinspector

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Extensions the fingerprints read.
const (
	extSupportedGroups   = 10
	extECPointFormats    = 11
	extSignatureAlgs     = 13
	extSupportedVersions = 43
)

// helloFields are the ClientHello fields JA3 and JA4 are made of, in the
// order the client sent them, GREASE values left out.
type helloFields struct {
	version      uint16
	ciphers      []uint16
	extensions   []uint16
	groups       []uint16
	pointFormats []uint8
	sigAlgs      []uint16
	versions     []uint16 // supported_versions
	sni          bool
	alpn         string // the first protocol offered
}

// grease reports whether v is a GREASE value (RFC 8701: 0x?a?a with both
// bytes equal), which the fingerprints ignore.
func grease(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// readHelloFields reads body, a ClientHello message body the filter
// already parsed (so well formed).
func readHelloFields(body []byte) (helloFields, bool) {
	var f helloFields
	r := reader{b: body, ok: true}
	f.version = uint16(r.u16())
	r.skip(32)
	r.vec(1)
	cs := reader{b: r.vec(2), ok: r.ok}
	for cs.ok && len(cs.b) >= 2 {
		if v := uint16(cs.u16()); !grease(v) {
			f.ciphers = append(f.ciphers, v)
		}
	}
	r.vec(1)
	if !r.ok {
		return f, false
	}
	if len(r.b) == 0 {
		return f, true
	}
	exts := reader{b: r.vec(2), ok: r.ok}
	for exts.ok && len(exts.b) > 0 {
		typ := uint16(exts.u16())
		data := reader{b: exts.vec(2), ok: exts.ok}
		if !exts.ok || grease(typ) {
			continue
		}
		f.extensions = append(f.extensions, typ)
		switch typ {
		case extServerName:
			f.sni = true
		case extALPN:
			list := reader{b: data.vec(2), ok: data.ok}
			if p := list.vec(1); list.ok && f.alpn == "" {
				f.alpn = string(p)
			}
		case extSupportedGroups:
			f.groups = u16List(data.vec(2))
		case extECPointFormats:
			f.pointFormats = append([]uint8(nil), data.vec(1)...)
		case extSignatureAlgs:
			f.sigAlgs = u16List(data.vec(2))
		case extSupportedVersions:
			f.versions = u16List(data.vec(1))
		}
	}
	return f, exts.ok
}

// u16List reads a list of 16-bit values, GREASE left out.
func u16List(b []byte) []uint16 {
	var out []uint16
	for i := 0; i+1 < len(b); i += 2 {
		if v := uint16(b[i])<<8 | uint16(b[i+1]); !grease(v) {
			out = append(out, v)
		}
	}
	return out
}

// ja3 is the JA3 hash: the MD5, in hex, of
// "version,ciphers,extensions,groups,point formats" with the values in
// decimal, dash-separated, in the client's order.
func ja3(f helloFields) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(f.version)))
	for _, list := range [][]uint16{f.ciphers, f.extensions, f.groups} {
		b.WriteByte(',')
		joinDec(&b, list)
	}
	b.WriteByte(',')
	for i, p := range f.pointFormats {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	sum := md5.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func joinDec(b *strings.Builder, list []uint16) {
	for i, v := range list {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(int(v)))
	}
}

// ja4 is the JA4 fingerprint of a ClientHello over TCP:
// t<version><d|i><ciphers><extensions><alpn>_<ciphers hash>_<extensions
// and signature algorithms hash>, as FoxIO's specification computes it.
func ja4(f helloFields) string {
	version := f.version
	for _, v := range f.versions {
		version = max(version, v)
	}
	sni := 'i'
	if f.sni {
		sni = 'd'
	}
	a := fmt.Sprintf("t%s%c%02d%02d%s", ja4Version(version), sni, min(len(f.ciphers), 99), min(len(f.extensions), 99), ja4ALPN(f.alpn))
	ciphers := slices.Clone(f.ciphers)
	slices.Sort(ciphers)
	var exts []uint16
	for _, e := range f.extensions {
		if e != extServerName && e != extALPN {
			exts = append(exts, e)
		}
	}
	slices.Sort(exts)
	c := "000000000000"
	if len(ciphers) > 0 {
		c = hash12(hexList(ciphers))
	}
	e := "000000000000"
	if len(exts) > 0 {
		s := hexList(exts)
		if len(f.sigAlgs) > 0 {
			s += "_" + hexList(f.sigAlgs)
		}
		e = hash12(s)
	}
	return a + "_" + c + "_" + e
}

// ja4Version is JA4's two characters of a TLS version.
func ja4Version(v uint16) string {
	switch v {
	case 0x0304:
		return "13"
	case 0x0303:
		return "12"
	case 0x0302:
		return "11"
	case 0x0301:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	}
	return "00"
}

// ja4ALPN is JA4's two characters of the first ALPN protocol: its first
// and last characters, or of its hex form when either is not
// alphanumeric; "00" without one.
func ja4ALPN(p string) string {
	if p == "" {
		return "00"
	}
	first, last := p[0], p[len(p)-1]
	if !alnum(first) || !alnum(last) {
		h := hex.EncodeToString([]byte(p))
		return string(h[0]) + string(h[len(h)-1])
	}
	return string(first) + string(last)
}

func alnum(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// hexList is the values as four hex digits each, comma-separated.
func hexList(list []uint16) string {
	var b strings.Builder
	for i, v := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%04x", v)
	}
	return b.String()
}

// hash12 is the first 12 hex digits of the SHA-256 of s.
func hash12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}
