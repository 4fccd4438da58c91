package hpack

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// unhex decodes hex digits, ignoring spaces and line breaks.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collector decodes blocks and keeps copies of their fields.
type collector struct {
	d      *Decoder
	fields []Field
}

func newCollector(size uint32) *collector {
	c := &collector{}
	c.d = NewDecoder(size, func(f Field) {
		c.fields = append(c.fields, Field{Name: strings.Clone(f.Name), Value: strings.Clone(f.Value), Sensitive: f.Sensitive,
			StaticName: f.StaticName, StaticValue: f.StaticValue})
	})
	return c
}

// block decodes one whole block, written in fragments of chunk bytes
// (0: at once).
func (c *collector) block(b []byte, chunk int) ([]Field, error) {
	c.fields = nil
	if chunk <= 0 {
		chunk = len(b) + 1
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		if _, err := c.d.Write(b[:n]); err != nil {
			return nil, err
		}
		b = b[n:]
	}
	if err := c.d.Close(); err != nil {
		return nil, err
	}
	return c.fields, nil
}

// dynamic lists the dynamic table, newest first.
func (c *collector) dynamic() []string {
	var out []string
	for i := uint64(1); ; i++ {
		n, v, ok := c.d.table.at(i)
		if !ok {
			return out
		}
		out = append(out, string(n)+": "+string(v))
	}
}

func fieldsString(fs []Field) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s: %s", f.Name, f.Value)
		if f.Sensitive {
			b.WriteString(" (never indexed)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

type rfcStep struct {
	block   string
	fields  string   // "name: value" lines
	dynamic []string // newest first
	size    uint32
}

// The examples of RFC 7541 Appendix C.
var rfcExamples = []struct {
	name  string
	size  uint32
	steps []rfcStep
}{
	{"C.2.1 literal with indexing", 4096, []rfcStep{{
		"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
		"custom-key: custom-header\n", []string{"custom-key: custom-header"}, 55,
	}}},
	{"C.2.2 literal without indexing", 4096, []rfcStep{{
		"040c 2f73 616d 706c 652f 7061 7468", ":path: /sample/path\n", nil, 0,
	}}},
	{"C.2.3 literal never indexed", 4096, []rfcStep{{
		"1008 7061 7373 776f 7264 0673 6563 7265 74", "password: secret (never indexed)\n", nil, 0,
	}}},
	{"C.2.4 indexed", 4096, []rfcStep{{"82", ":method: GET\n", nil, 0}}},
	{"C.3 requests", 4096, []rfcStep{
		{"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
			":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n",
			[]string{":authority: www.example.com"}, 57},
		{"8286 84be 5808 6e6f 2d63 6163 6865",
			":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\ncache-control: no-cache\n",
			[]string{"cache-control: no-cache", ":authority: www.example.com"}, 110},
		{"8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
			":method: GET\n:scheme: https\n:path: /index.html\n:authority: www.example.com\ncustom-key: custom-value\n",
			[]string{"custom-key: custom-value", "cache-control: no-cache", ":authority: www.example.com"}, 164},
	}},
	{"C.4 requests, Huffman", 4096, []rfcStep{
		{"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
			":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n",
			[]string{":authority: www.example.com"}, 57},
		{"8286 84be 5886 a8eb 1064 9cbf",
			":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\ncache-control: no-cache\n",
			[]string{"cache-control: no-cache", ":authority: www.example.com"}, 110},
		{"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
			":method: GET\n:scheme: https\n:path: /index.html\n:authority: www.example.com\ncustom-key: custom-value\n",
			[]string{"custom-key: custom-value", "cache-control: no-cache", ":authority: www.example.com"}, 164},
	}},
	{"C.5 responses, evictions", 256, []rfcStep{
		{`4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
		  2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
		  6c65 2e63 6f6d`,
			":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n",
			[]string{"location: https://www.example.com", "date: Mon, 21 Oct 2013 20:13:21 GMT", "cache-control: private", ":status: 302"}, 222},
		{"4803 3330 37c1 c0bf",
			":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n",
			[]string{":status: 307", "location: https://www.example.com", "date: Mon, 21 Oct 2013 20:13:21 GMT", "cache-control: private"}, 222},
		{`88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
		  54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
		  5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
		  3d31`,
			":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT\nlocation: https://www.example.com\ncontent-encoding: gzip\nset-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n",
			[]string{"set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1", "content-encoding: gzip", "date: Mon, 21 Oct 2013 20:13:22 GMT"}, 215},
	}},
	{"C.6 responses, Huffman, evictions", 256, []rfcStep{
		{`4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
		  2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
			":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n",
			[]string{"location: https://www.example.com", "date: Mon, 21 Oct 2013 20:13:21 GMT", "cache-control: private", ":status: 302"}, 222},
		{"4883 640e ffc1 c0bf",
			":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n",
			[]string{":status: 307", "location: https://www.example.com", "date: Mon, 21 Oct 2013 20:13:21 GMT", "cache-control: private"}, 222},
		{`88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
		  77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
		  9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
			":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT\nlocation: https://www.example.com\ncontent-encoding: gzip\nset-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n",
			[]string{"set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1", "content-encoding: gzip", "date: Mon, 21 Oct 2013 20:13:22 GMT"}, 215},
	}},
}

// TestRFC7541Examples decodes Appendix C's blocks whole and cut into
// fragments of every size (a field may span CONTINUATION frames),
// checking the fields and the dynamic table after each block.
func TestRFC7541Examples(t *testing.T) {
	for _, ex := range rfcExamples {
		for chunk := range 8 {
			t.Run(fmt.Sprintf("%s/chunk=%d", ex.name, chunk), func(t *testing.T) {
				c := newCollector(ex.size)
				for i, step := range ex.steps {
					fs, err := c.block(unhex(t, step.block), chunk)
					if err != nil {
						t.Fatalf("block %d: %v", i, err)
					}
					if got := fieldsString(fs); got != step.fields {
						t.Fatalf("block %d: fields\n%s\nwant\n%s", i, got, step.fields)
					}
					if got := c.dynamic(); fmt.Sprint(got) != fmt.Sprint(step.dynamic) {
						t.Fatalf("block %d: dynamic table %q, want %q", i, got, step.dynamic)
					}
					if size, _ := c.d.DynamicTableSize(); size != step.size {
						t.Fatalf("block %d: table size %d, want %d", i, size, step.size)
					}
				}
			})
		}
	}
}

// TestDecodingErrors: every malformed block is an error, a DecodingError
// or ErrStringLength (COMPRESSION_ERROR either way), never a panic.
func TestDecodingErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block string
		want  error
	}{
		{"index 0", "80", DecodingError{}},
		{"index past the static table", "be", DecodingError{}},
		{"literal's name index past the tables", "7f00 0161", DecodingError{}},
		{"integer over 32 bits", "ff ff ff ff ff 7f", errIntOverflow},
		{"integer with a sixth continuation byte", "ff 80 80 80 80 80 00", errIntOverflow},
		{"size update over the announced maximum", "3fe2 1f", errSizeTooLarge}, // 4097
		{"size update after a field", "82 20", errSizeUpdateLate},
		{"truncated string", "0003 6162", errTruncated},
		{"truncated integer", "ff", errTruncated},
		{"Huffman: EOS in the string", "0084 ffff ffff 00", ErrInvalidHuffman}, // name: 30 ones and 2 more
		{"Huffman: padding of eight bits", "0082 1fff 00", ErrInvalidHuffman},  // "a" + 11 one bits
		{"Huffman: padding not EOS's prefix", "0081 00 00", ErrInvalidHuffman}, // "0" + 000
		{"Huffman: ends inside a symbol", "0081 fe 00", ErrInvalidHuffman},     // 11111110: an 8+-bit prefix
		{"Huffman: padding one byte after a full symbol", "0082 07ff 00", ErrInvalidHuffman},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(4096)
			_, err := c.block(unhex(t, tc.block), 0)
			if err == nil {
				t.Fatal("no error")
			}
			var de DecodingError
			switch {
			case tc.want == (DecodingError{}):
				if !errors.As(err, &de) {
					t.Fatalf("error %v (%T), want a DecodingError", err, err)
				}
			case err != tc.want:
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSizeUpdates: updates at the start of a block shrink and grow the
// table within the announced bound, evicting the oldest entries; two in a
// row are allowed (§4.2), a lower SetAllowedMaxDynamicTableSize bound
// applies to the next update.
func TestSizeUpdates(t *testing.T) {
	c := newCollector(4096)
	// Three entries of 32+1+1 = 34 bytes: "a: 1", "b: 2", "c: 3".
	if _, err := c.block(unhex(t, "4001 6101 31 4001 6201 32 4001 6301 33"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.dynamic(); fmt.Sprint(got) != "[c: 3 b: 2 a: 1]" {
		t.Fatalf("table %q", got)
	}
	// 68 = 0x44: 0x3f then 68-31 = 37 = 0x25. Room for two: "a" goes.
	if _, err := c.block(unhex(t, "3f25"), 0); err != nil {
		t.Fatal(err)
	}
	if got := c.dynamic(); fmt.Sprint(got) != "[c: 3 b: 2]" {
		t.Fatalf("after shrinking to 68: table %q", got)
	}
	// Index 63 is now "b: 2", index 64 past the end.
	fs, err := c.block(unhex(t, "bf"), 0)
	if err != nil || fieldsString(fs) != "b: 2\n" {
		t.Fatalf("index 63: %q %v", fieldsString(fs), err)
	}
	if _, err := c.block(unhex(t, "c0"), 0); err == nil {
		t.Fatal("index 64 of a two-entry table decoded")
	}
	c = newCollector(4096)
	if _, err := c.block(unhex(t, "4001 6101 31"), 0); err != nil {
		t.Fatal(err)
	}
	// 0 then 4096 at the start of one block: emptied, then usable again.
	fs, err = c.block(unhex(t, "20 3fe1 1f 4001 6201 32 be"), 0)
	if err != nil || fieldsString(fs) != "b: 2\nb: 2\n" {
		t.Fatalf("0 then 4096: %q %v", fieldsString(fs), err)
	}
	if got := c.dynamic(); fmt.Sprint(got) != "[b: 2]" {
		t.Fatalf("after 0 then 4096: table %q", got)
	}
	// A size update in the second block's first fragment after a field
	// of the first block is fine: the block started anew at Close.
	c.d.SetAllowedMaxDynamicTableSize(100)
	if _, err := c.block(unhex(t, "3f46"), 0); err == nil { // 101
		t.Fatal("size update over the new bound accepted")
	}
	c = newCollector(4096)
	c.d.SetAllowedMaxDynamicTableSize(100)
	if _, err := c.block(unhex(t, "3f45"), 0); err != nil { // 100
		t.Fatal(err)
	}
	if _, max := c.d.DynamicTableSize(); max != 100 {
		t.Fatalf("maximum %d, want 100", max)
	}
}

// TestEviction: an entry larger than the table empties it and is still
// emitted (§4.4); a new entry may name the entry it evicts; many
// additions cycle through the table's buffer without growing it past
// twice the maximum size.
func TestEviction(t *testing.T) {
	c := newCollector(64)
	if _, err := c.block(unhex(t, "4001 6101 31"), 0); err != nil { // a: 1, 34 bytes
		t.Fatal(err)
	}
	// 32 + 1 + 40 > 64: too large; emitted, table empty.
	long := strings.Repeat("x", 40)
	fs, err := c.block(append(unhex(t, "4001 6128"), long...), 0)
	if err != nil || fieldsString(fs) != "a: "+long+"\n" {
		t.Fatalf("too large: %q %v", fieldsString(fs), err)
	}
	if got := c.dynamic(); len(got) != 0 {
		t.Fatalf("table after a too large entry: %q", got)
	}
	// "abcdef: 1" (39 bytes) then a literal with indexing naming it
	// (index 62) with a 2-byte value (40 bytes): the old entry must go
	// to make room, and its name is still the new one's.
	fs, err = c.block(unhex(t, "4006 6162 6364 6566 0131 7e02 3233"), 0)
	if err != nil || fieldsString(fs) != "abcdef: 1\nabcdef: 23\n" {
		t.Fatalf("self-evicting name: %q %v", fieldsString(fs), err)
	}
	if got := c.dynamic(); fmt.Sprint(got) != "[abcdef: 23]" {
		t.Fatalf("table %q", got)
	}
	c = newCollector(4096)
	for i := range 5000 {
		v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", i%97))
		b := append([]byte{0x40, 4}, "name"...)
		b = append(b, byte(len(v)))
		b = append(b, v...)
		b = append(b, 0xbe) // the entry just added
		fs, err := c.block(b, 0)
		if err != nil || len(fs) != 2 || fs[0].Value != v || fs[1].Value != v {
			t.Fatalf("round %d: %q %v", i, fieldsString(fs), err)
		}
		if size, _ := c.d.DynamicTableSize(); size > 4096 {
			t.Fatalf("round %d: size %d", i, size)
		}
	}
	if cap(c.d.table.buf) > 2*4096 {
		t.Fatalf("table buffer grew to %d bytes", cap(c.d.table.buf))
	}
}

// TestStringLimits: SetMaxStringLength refuses longer names and values,
// raw or after Huffman decoding, indexed or literal, and bounds what a
// cut field may keep pending.
func TestStringLimits(t *testing.T) {
	c := newCollector(4096)
	c.d.SetMaxStringLength(4)
	if fs, err := c.block(unhex(t, "0004 6162 6364 0131"), 0); err != nil || fieldsString(fs) != "abcd: 1\n" {
		t.Fatalf("4-byte name: %q %v", fieldsString(fs), err)
	}
	if _, err := c.block(unhex(t, "0005 6162 6364 6501 31"), 0); err != ErrStringLength {
		t.Fatalf("5-byte name: %v", err)
	}
	// A length over the limit fails before its bytes arrive.
	c = newCollector(4096)
	c.d.SetMaxStringLength(4)
	if _, err := c.d.Write(unhex(t, "0001 617f 8001")); err != ErrStringLength {
		t.Fatalf("long value's length: %v", err)
	}
	// Huffman "00000" (25 bits of zeros and 7 of padding: "0" is
	// 00000) is 4 bytes that decode to 5.
	c = newCollector(4096)
	c.d.SetMaxStringLength(4)
	if _, err := c.block(unhex(t, "0001 6184 0000 007f"), 0); err != ErrStringLength {
		t.Fatalf("Huffman value decoding over the limit: %v", err)
	}
	// A static entry longer than the limit ("gzip, deflate").
	if _, err := c.block(unhex(t, "90"), 0); err != ErrStringLength {
		t.Fatalf("indexed value over the limit: %v", err)
	}
}

// TestSensitive: the never-indexed flag is reported, and such a field
// does not enter the table.
func TestSensitive(t *testing.T) {
	c := newCollector(4096)
	fs, err := c.block(unhex(t, "1001 6101 31 0001 6201 32 4001 6301 33"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldsString(fs); got != "a: 1 (never indexed)\nb: 2\nc: 3\n" {
		t.Fatalf("fields %q", got)
	}
	if got := c.dynamic(); fmt.Sprint(got) != "[c: 3]" {
		t.Fatalf("table %q", got)
	}
}

// TestStaticStrings: the strings of the static table are reported as such,
// whichever representation refers to them, and no other string is.
func TestStaticStrings(t *testing.T) {
	c := newCollector(4096)
	// Indexed ":method: GET" (2); "user-agent" (58) with a literal value,
	// added to the table; "accept" (19) with a literal value, not added;
	// a literal name; then the dynamic entry added first (62): name and
	// value are the table's, not static.
	block := "82 7a0178 0f040179 0001610162 be"
	fs, err := c.block(unhex(t, block), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: ":method", Value: "GET", StaticName: true, StaticValue: true},
		{Name: "user-agent", Value: "x", StaticName: true},
		{Name: "accept", Value: "y", StaticName: true},
		{Name: "a", Value: "b"},
		{Name: "user-agent", Value: "x"},
	}
	if fmt.Sprint(fs) != fmt.Sprint(want) {
		t.Fatalf("fields %+v, want %+v", fs, want)
	}
}
