package httpconn

// spliceSupported: net.TCPConn.ReadFrom splices between TCP sockets.
const spliceSupported = true
