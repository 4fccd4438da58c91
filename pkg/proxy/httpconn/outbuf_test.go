package httpconn

import (
	"bytes"
	"net"
	"testing"
)

// pairRecorder is a pairWriter and io.Writer that records what it was
// given: each writePair's vectors as they came, and every byte in order.
type pairRecorder struct {
	pairs [][][]byte
	all   bytes.Buffer
}

func (w *pairRecorder) Write(p []byte) (int, error) { return w.all.Write(p) }

func (w *pairRecorder) writePair(v *net.Buffers) (int64, error) {
	w.pairs = append(w.pairs, append([][]byte(nil), *v...))
	var n int64
	for _, b := range *v {
		m, _ := w.all.Write(b)
		n += int64(m)
	}
	*v = nil
	return n, nil
}

// TestOutBufWriteLast: a large last piece leaves beside what is gathered,
// in one writePair whose second vector is the piece itself (not a copy),
// and the buffer keeps no reference to it; a small piece, a piece with
// nothing gathered before it, or a writer that cannot pair, is written as
// write writes it. Every byte arrives in order either way.
func TestOutBufWriteLast(t *testing.T) {
	head := []byte("HTTP/1.1 200 OK\r\ncontent-length: 20000\r\n\r\n")
	for _, tc := range []struct {
		name      string
		size      int
		gathered  bool
		canPair   bool
		wantPairs int
	}{
		{"large after the head", 20000, true, true, 1},
		{"pairMin after the head", pairMin, true, true, 1},
		{"below pairMin", pairMin - 1, true, true, 0},
		{"nothing gathered", 20000, false, true, 0},
		{"writer without writev", 20000, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &pairRecorder{}
			var o outBuf
			o.reset(w)
			if tc.canPair {
				o.pw = w
			}
			if tc.gathered {
				_ = o.write(head)
			}
			p := bytes.Repeat([]byte("b"), tc.size)
			if err := o.writeLast(p); err != nil {
				t.Fatal(err)
			}
			if err := o.flush(); err != nil {
				t.Fatal(err)
			}
			want := append([]byte(nil), p...)
			if tc.gathered {
				want = append(append([]byte(nil), head...), p...)
			}
			if !bytes.Equal(w.all.Bytes(), want) {
				t.Fatalf("wrote %d bytes, want the %d gathered and given", w.all.Len(), len(want))
			}
			if len(w.pairs) != tc.wantPairs {
				t.Fatalf("%d writePair calls, want %d", len(w.pairs), tc.wantPairs)
			}
			if tc.wantPairs == 1 {
				v := w.pairs[0]
				if len(v) != 2 || !bytes.Equal(v[0], head) || &v[1][0] != &p[0] {
					t.Fatalf("writePair got %d vectors, want the head and the piece itself", len(v))
				}
				if o.pair[1] != nil || len(o.b) != 0 || !o.wrote {
					t.Fatalf("after writeLast: pair kept %d bytes, %d gathered, wrote %v", len(o.pair[1]), len(o.b), o.wrote)
				}
			}
		})
	}
}
