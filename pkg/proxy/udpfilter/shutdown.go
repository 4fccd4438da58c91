package udpfilter

import (
	"context"
	"sync"
)

// CloseAndWait is a Filter's Shutdown for filters whose work is goroutines
// counted in wg: it closes the filter (which makes them end) and waits for
// wg, until ctx ends at the latest.
func CloseAndWait(ctx context.Context, f Filter, wg *sync.WaitGroup) error {
	_ = f.Close()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
