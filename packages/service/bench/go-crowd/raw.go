package main

// rawConn: one keep-alive HTTP/1.1 connection that writes requests made once, at start, and
// reads each response's status line, the headers it needs (Content-Length, Transfer-Encoding,
// Connection) and its body, which it discards. What net/http's client does besides (a request
// object, a header map, two goroutines and their channels per connection, a response object per
// request) cost about 47 µs of CPU a request on the development machine, as much as a third of
// what the service spends serving one; on cores shared with the service, the generator's CPU is
// the service's loss (bench/README, "A crowd sent from Go").

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// requestBytes is each token's GET, written once: request k uses token k mod n.
func requestBytes(base, path string, tokens []string) ([][]byte, string, error) {
	parsed, err := url.Parse(base)
	if err != nil {
		return nil, "", err
	}
	if parsed.Scheme != "http" {
		return nil, "", fmt.Errorf("the raw client speaks plain HTTP, not %q", parsed.Scheme)
	}
	requests := make([][]byte, len(tokens))
	for i, token := range tokens {
		requests[i] = []byte("GET " + path + " HTTP/1.1\r\nHost: " + parsed.Host + "\r\nAuthorization: Bearer " + token + "\r\nUser-Agent: go-crowd\r\n\r\n")
	}
	return requests, parsed.Host, nil
}

type rawConn struct {
	address string
	timeout time.Duration
	conn    net.Conn
	reader  *bufio.Reader
	// reused: the connection has answered a request before, so a failure before the first byte
	// of an answer may be the server closing an idle connection, and the request is sent once
	// more on a new one (as net/http does for a GET).
	reused bool
}

var errMalformed = errors.New("malformed HTTP response")

func (c *rawConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do sends `request` and returns its answer's status.
func (c *rawConn) do(request []byte) (int, error) {
	for {
		if c.conn == nil {
			conn, err := net.DialTimeout("tcp", c.address, c.timeout)
			if err != nil {
				return 0, err
			}
			c.conn = conn
			c.reused = false
			if c.reader == nil {
				c.reader = bufio.NewReaderSize(conn, 16*1024)
			} else {
				c.reader.Reset(conn)
			}
		}
		retry := c.reused
		if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			c.close()
			return 0, err
		}
		status, keepAlive, started, err := c.exchange(request)
		if err != nil {
			c.close()
			if retry && !started && !isTimeout(err) {
				continue
			}
			return 0, err
		}
		c.reused = true
		if !keepAlive {
			c.close()
		}
		return status, nil
	}
}

// exchange writes the request and reads its answer; started: a byte of the answer came.
func (c *rawConn) exchange(request []byte) (status int, keepAlive, started bool, err error) {
	if _, err = c.conn.Write(request); err != nil {
		return 0, false, false, err
	}
	line, err := c.reader.ReadSlice('\n')
	if err != nil {
		return 0, false, len(line) > 0, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, true, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, true, errMalformed
	}
	keepAlive = line[7] == '1'
	length, chunked := -1, false
	for {
		header, err := c.reader.ReadSlice('\n')
		if err != nil {
			return 0, false, true, err
		}
		if len(header) <= 2 {
			break
		}
		colon := bytes.IndexByte(header, ':')
		if colon < 0 {
			return 0, false, true, errMalformed
		}
		name, value := header[:colon], bytes.TrimSpace(header[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, false, true, errMalformed
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keepAlive = false
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				keepAlive = true
			}
		}
	}
	switch {
	case chunked:
		err = c.discardChunked()
	case length >= 0:
		_, err = c.reader.Discard(length)
	default:
		// No length: the body runs to the connection's end.
		_, err = io.Copy(io.Discard, c.reader)
		keepAlive = false
	}
	if err != nil {
		return 0, false, true, err
	}
	return status, keepAlive, true, nil
}

func (c *rawConn) discardChunked() error {
	for {
		line, err := c.reader.ReadSlice('\n')
		if err != nil {
			return err
		}
		size := bytes.TrimSpace(line)
		if semicolon := bytes.IndexByte(size, ';'); semicolon >= 0 {
			size = size[:semicolon]
		}
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return errMalformed
		}
		if n == 0 {
			// Trailers, then the empty line.
			for {
				trailer, err := c.reader.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(trailer) <= 2 {
					return nil
				}
			}
		}
		if _, err := c.reader.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}
