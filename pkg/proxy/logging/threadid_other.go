//go:build !linux

package logging

// threadID is %t. Outside Linux there is no cheap thread id; 0 keeps the
// format's shape.
func threadID() int { return 0 }
