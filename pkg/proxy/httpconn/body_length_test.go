package httpconn

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// lengthPieces is a body source giving its pieces, then io.EOF with the last.
func lengthPieces(ps ...string) bodySource {
	i := 0
	return sourceFunc(func() ([]byte, error) {
		p := []byte(ps[i])
		i++
		if i == len(ps) {
			return p, io.EOF
		}
		return p, nil
	})
}

// readLengthBody reads a body source to its end or first error.
func readLengthBody(b bodySource) (string, error) {
	var out []byte
	for {
		p, err := b.Next()
		out = append(out, p...)
		if errors.Is(err, io.EOF) {
			return string(out), nil
		}
		if err != nil {
			return string(out), err
		}
	}
}

func TestLengthBodyHoldsTheDeclaredLength(t *testing.T) {
	for _, tc := range []struct {
		name string
		left int64
		ps   []string
		want error
	}{
		{"exact", 10, []string{"hello", "world"}, nil},
		{"longer", 9, []string{"hello", "world"}, errLengthMismatch},
		{"shorter", 11, []string{"hello", "world"}, errLengthMismatch},
		{"empty", 0, []string{""}, nil},
	} {
		got, err := readLengthBody(&lengthBody{src: lengthPieces(tc.ps...), left: tc.left})
		if !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && got != "helloworld" && tc.name == "exact" {
			t.Errorf("%s: body %q", tc.name, got)
		}
	}
}

// keeper is an encoder that leaves the body's length as it is.
type keeper struct{}

func (keeper) EncodeData(p []byte) ([]byte, error) { return p, nil }
func (keeper) EncodeEnd(t http.Header) ([]byte, http.Header, error) {
	return nil, t, nil
}
func (keeper) KeepsLength() bool { return true }

// changer is an encoder that may change the body's length.
type changer struct{ keeper }

func (changer) KeepsLength() bool { return false }

func TestResponseLengthDeclared(t *testing.T) {
	declared := declaredLength{set: true, n: 42}
	one := &encodingDown{encs: []httpfilter.DataEncoder{keeper{}, changer{}}, decl: declared}
	if n := one.responseLength(-1); n != 42 || !one.counting || one.left != 42 {
		t.Errorf("one changing encoder: length %d counting %t left %d, want 42 armed", n, one.counting, one.left)
	}
	if err := one.checkLength(); !errors.Is(err, errLengthMismatch) {
		t.Errorf("a body short of its length ends with %v", err)
	}
	two := &encodingDown{encs: []httpfilter.DataEncoder{changer{}, changer{}}, decl: declared}
	if n := two.responseLength(-1); n != -1 || two.counting {
		t.Errorf("two changing encoders: length %d counting %t, want unknown", n, two.counting)
	}
	none := &encodingDown{encs: []httpfilter.DataEncoder{changer{}}}
	if n := none.responseLength(7); n != 7 || none.counting {
		t.Errorf("nothing declared: length %d, want 7", n)
	}
}
