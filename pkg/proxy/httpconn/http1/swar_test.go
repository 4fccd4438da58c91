package http1

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// parseFieldsBytes is parseFields as it was before the name's check took
// over the search for the colon and values were checked a word at a time:
// the reference the tests below compare it with.
func parseFieldsBytes(head []byte, dst Headers, maxCount int) (Headers, error) {
	dst = dst[:0]
	for len(head) > 0 {
		nl := bytes.IndexByte(head, '\n')
		if nl < 0 {
			return dst, ErrTruncatedHead
		}
		line := head[:nl]
		head = head[nl+1:]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return dst, ErrObsFold
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return dst, ErrHeaderName
		}
		name := line[:colon]
		for i, c := range name {
			l := tokenLower[c]
			if l == 0 {
				return dst, ErrHeaderName
			}
			name[i] = l
		}
		value := trimOWS(line[colon+1:])
		for _, c := range value {
			if chars[c]&classValue == 0 {
				if c == '\r' {
					return dst, ErrBareCR
				}
				return dst, ErrHeaderValue
			}
		}
		if len(dst) == maxCount {
			return dst, ErrTooManyHeaders
		}
		dst = append(dst, Header{Name: name, Value: value})
	}
	return dst, nil
}

// checkFields compares parseFields with the reference on copies of head:
// the same error, the same fields, and when there is no error the same
// head after (names lower-cased in place).
func checkFields(t *testing.T, head []byte, maxCount int) {
	t.Helper()
	wantHead := bytes.Clone(head)
	want, wantErr := parseFieldsBytes(wantHead, nil, maxCount)
	gotHead := bytes.Clone(head)
	got, gotErr := parseFields(gotHead, nil, maxCount)
	if !errors.Is(gotErr, wantErr) || len(got) != len(want) {
		t.Fatalf("parseFields(%q) = %q, %v; the reference says %q, %v", head, got, gotErr, want, wantErr)
	}
	for i := range got {
		if !bytes.Equal(got[i].Name, want[i].Name) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("parseFields(%q) = %q; the reference says %q", head, got, want)
		}
	}
	if wantErr == nil && !bytes.Equal(gotHead, wantHead) {
		t.Fatalf("parseFields(%q) left %q; the reference %q", head, gotHead, wantHead)
	}
}

// TestParseFieldsEveryByte puts every byte value at every position of
// header sections whose names and values have lengths from 0 to 20 (the
// name a mix of upper and lower case letters, digits and '-'; the value
// visible ASCII and spaces), and compares parseFields with the reference.
func TestParseFieldsEveryByte(t *testing.T) {
	const names = "Content-Type-X-9aZ-Q"
	const values = "text/plain; q=0.5 ~x"
	for n := 0; n <= len(names); n += 1 + n/4 {
		for v := 0; v <= len(values); v += 1 + v/4 {
			head := names[:n] + ": " + values[:v] + "\r\nHost: a\r\n\r\n"
			for pos := range n + 2 + v + 2 {
				for c := range 256 {
					b := []byte(head)
					b[pos] = byte(c)
					checkFields(t, b, 100)
				}
			}
		}
	}
	checkFields(t, []byte("A: 1\r\nB: 2\r\n\r\n"), 1)
	checkFields(t, []byte("A: 1\r\nB: 2"), 100)
}

// TestParseFieldsRandom compares parseFields with the reference on random
// header sections: bytes mostly of the plain kinds, an occasional other
// byte (a tab, a line end, a colon, anything).
func TestParseFieldsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-:  /."
	for range 100000 {
		b := make([]byte, 1+r.IntN(80))
		for i := range b {
			switch r.IntN(16) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b[i] = "\r\n\t:"[r.IntN(4)]
			default:
				b[i] = plain[r.IntN(len(plain))]
			}
		}
		checkFields(t, append(b, "\r\n\r\n"...), 100)
	}
}

// TestPlainValueWord compares the word check with the byte rule: true
// exactly when each of the eight bytes is valid in a value and none is a
// tab.
func TestPlainValueWord(t *testing.T) {
	check := func(w []byte) {
		t.Helper()
		want := true
		for _, c := range w {
			if chars[c]&classValue == 0 || c == '\t' {
				want = false
			}
		}
		if got := plainValueWord(binary.LittleEndian.Uint64(w)); got != want {
			t.Fatalf("plainValueWord(%q) = %v, want %v", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("a b~\x80\xff/Z")
			w[pos] = byte(c)
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		check(w[:])
	}
}
