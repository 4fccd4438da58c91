package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// fakeH2 answers a request after delay with a 200 whose body is body,
// and keeps the request.
type fakeH2 struct {
	delay time.Duration
	body  io.ReadCloser
	req   chan *http.Request
}

func (f *fakeH2) RoundTripHTTP2(req *http.Request, _ *Host) (*http.Response, error) {
	f.req <- req
	select {
	case <-time.After(f.delay):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: f.body}, nil
}

func TestOpenH2Stream(t *testing.T) {
	tests := []struct {
		name    string
		delay   time.Duration
		wait    time.Duration
		wantErr error
	}{
		{name: "answered", delay: 0, wait: time.Second},
		{name: "no wait limit", delay: 10 * time.Millisecond},
		{name: "head too late", delay: time.Minute, wait: 20 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			respR, respW := io.Pipe()
			rt := &fakeH2{delay: tc.delay, body: respR, req: make(chan *http.Request, 1)}
			st, err := OpenH2Stream(context.Background(), rt, &Host{}, &http.Request{Method: http.MethodConnect, Header: http.Header{}}, tc.wait)
			req := <-rt.req
			if req.ContentLength != -1 || req.ProtoMajor != 2 || req.Body == nil {
				t.Errorf("request: length %d, proto %d, body %v; want a streamed HTTP/2 body", req.ContentLength, req.ProtoMajor, req.Body)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if req.Context().Err() == nil {
					t.Error("the stream's context lives on after the failure")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Writes reach the request body; CloseWrite ends it.
			go func() {
				_, _ = st.Write([]byte("up"))
				_ = st.CloseWrite()
			}()
			got, err := io.ReadAll(req.Body)
			if err != nil || string(got) != "up" {
				t.Errorf("request body %q %v, want \"up\"", got, err)
			}
			// As the transport does once it sent END_STREAM: Close,
			// both sides having ended, waits for this.
			_ = req.Body.Close()
			// Reads take the response body.
			go func() {
				_, _ = respW.Write([]byte("down"))
				_ = respW.Close()
			}()
			got, err = io.ReadAll(st)
			if err != nil || string(got) != "down" {
				t.Errorf("response body %q %v, want \"down\"", got, err)
			}
			if err := st.Close(); err != nil {
				t.Error(err)
			}
			if req.Context().Err() == nil {
				t.Error("Close left the stream's context alive")
			}
		})
	}
}

func TestH2StreamCloseAfterBothEnds(t *testing.T) {
	respR, respW := io.Pipe()
	rt := &fakeH2{body: respR, req: make(chan *http.Request, 1)}
	st, err := OpenH2Stream(context.Background(), rt, &Host{}, &http.Request{Method: http.MethodConnect, Header: http.Header{}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := <-rt.req
	_ = respW.Close()
	if _, err := io.ReadAll(st); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = st.Write([]byte("last"))
		_ = st.CloseWrite()
	}()
	// The transport has taken the last bytes but not sent them yet: the
	// stream, ended on both sides, must not be reset under it.
	if got, _ := io.ReadAll(req.Body); string(got) != "last" {
		t.Fatalf("request body %q", got)
	}
	closed := make(chan struct{})
	go func() {
		_ = st.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close did not wait for the transport to finish the request")
	case <-time.After(50 * time.Millisecond):
	}
	if req.Context().Err() != nil {
		t.Fatal("the stream was cancelled before the transport finished the request")
	}
	_ = req.Body.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once the transport finished")
	}
	if req.Context().Err() == nil {
		t.Error("Close left the stream's context alive")
	}
}
