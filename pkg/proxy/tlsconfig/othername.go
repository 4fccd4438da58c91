package tlsconfig

import (
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// oidSubjectAltName is the subjectAltName extension's OID.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// otherNames are the values of the certificate's otherName SANs whose
// type-id is oid, as strings the way Envoy's SAN matcher sees them:
// string types as their bytes, BOOLEAN as true or false, INTEGER and
// ENUMERATED in decimal, an OBJECT IDENTIFIER dotted. Values of other
// types (SEQUENCE, ...) give nothing to match.
func otherNames(c *x509.Certificate, oid asn1.ObjectIdentifier) []string {
	var out []string
	for _, ext := range c.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		in := cryptobyte.String(ext.Value)
		var names cryptobyte.String
		if !in.ReadASN1(&names, cbasn1.SEQUENCE) {
			return nil
		}
		for !names.Empty() {
			var (
				gn  cryptobyte.String
				tag cbasn1.Tag
			)
			if !names.ReadAnyASN1(&gn, &tag) {
				return out
			}
			// otherName [0] IMPLICIT SEQUENCE { type-id, [0] EXPLICIT value }
			if tag != cbasn1.Tag(0).ContextSpecific().Constructed() {
				continue
			}
			var (
				typeID asn1.ObjectIdentifier
				wrap   cryptobyte.String
			)
			if !gn.ReadASN1ObjectIdentifier(&typeID) || !typeID.Equal(oid) ||
				!gn.ReadASN1(&wrap, cbasn1.Tag(0).ContextSpecific().Constructed()) {
				continue
			}
			if v, ok := otherNameValue(wrap); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// otherNameValue renders an otherName's value (see otherNames).
func otherNameValue(in cryptobyte.String) (string, bool) {
	var (
		body cryptobyte.String
		tag  cbasn1.Tag
	)
	if !in.ReadAnyASN1(&body, &tag) {
		return "", false
	}
	switch tag {
	case cbasn1.UTF8String, cbasn1.IA5String, cbasn1.PrintableString, cbasn1.T61String,
		cbasn1.Tag(26) /* VisibleString */, cbasn1.Tag(27) /* GeneralString */, cbasn1.Tag(18), /* NumericString */
		cbasn1.Tag(28) /* UniversalString */, cbasn1.Tag(30) /* BMPString */, cbasn1.OCTET_STRING:
		return string(body), true
	case cbasn1.BOOLEAN:
		if len(body) != 1 {
			return "", false
		}
		return strconv.FormatBool(body[0] != 0), true
	case cbasn1.INTEGER, cbasn1.ENUM:
		if len(body) == 0 {
			return "", false
		}
		n := new(big.Int).SetBytes(body)
		if body[0]&0x80 != 0 { // two's complement negative
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(body))))
		}
		return n.String(), true
	case cbasn1.OBJECT_IDENTIFIER:
		var oid asn1.ObjectIdentifier
		full := cryptobyte.NewBuilder(nil)
		full.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(body) })
		s := cryptobyte.String(full.BytesOrPanic())
		if !s.ReadASN1ObjectIdentifier(&oid) {
			return "", false
		}
		return oid.String(), true
	case cbasn1.NULL:
		return "", true
	}
	return "", false
}

// parseOID reads a dotted object identifier ("1.3.6.1.4.1.311.20.2.3").
func parseOID(s string) (asn1.ObjectIdentifier, error) {
	if s == "" {
		return nil, errors.New("required with san_type OTHER_NAME")
	}
	var oid asn1.ObjectIdentifier
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid object identifier %q", s)
		}
		oid = append(oid, n)
	}
	if len(oid) < 2 {
		return nil, fmt.Errorf("invalid object identifier %q", s)
	}
	return oid, nil
}
