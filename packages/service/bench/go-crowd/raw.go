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
	if parsed.Path != "" && parsed.Path != "/" {
		return nil, "", fmt.Errorf("give -url as scheme, host and port only, and the path as -path (not %q)", parsed.Path)
	}
	port := parsed.Port()
	if port == "" {
		port = "80"
	}
	requests := make([][]byte, len(tokens))
	for i, token := range tokens {
		requests[i] = []byte("GET " + path + " HTTP/1.1\r\nHost: " + parsed.Host + "\r\nAuthorization: Bearer " + token + "\r\nUser-Agent: go-crowd\r\n\r\n")
	}
	return requests, net.JoinHostPort(parsed.Hostname(), port), nil
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

// answer is what a sender reads of a response: its status, and its Retry-After in whole
// seconds (-1 without one, or with an HTTP date, which the service never sends).
type answer struct {
	status     int
	retryAfter int
}

// do sends `request` and returns its answer.
func (c *rawConn) do(request []byte) (answer, error) {
	for {
		if c.conn == nil {
			conn, err := net.DialTimeout("tcp", c.address, c.timeout)
			if err != nil {
				return answer{}, err
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
			return answer{}, err
		}
		head, started, err := c.exchange(request)
		if err != nil {
			c.close()
			if retry && !started && !isTimeout(err) {
				continue
			}
			return answer{}, err
		}
		c.reused = true
		if !head.keepAlive {
			c.close()
		}
		return answer{head.status, head.retryAfter}, nil
	}
}

// exchange writes the request and reads its answer's head and body; started: a byte of the
// answer came.
func (c *rawConn) exchange(request []byte) (head responseHead, started bool, err error) {
	if _, err = c.conn.Write(request); err != nil {
		return head, false, err
	}
	for {
		if head, started, err = c.readHead(); err != nil {
			return head, started, err
		}
		// An interim answer (100 Continue, 103 Early Hints) comes before the final one.
		if head.status < 100 || head.status >= 200 || head.status == 101 {
			break
		}
	}
	switch {
	case head.status == 204 || head.status == 304 || (head.status >= 100 && head.status < 200):
		// No body, whatever the headers say (RFC 9112, 6.3).
	case head.chunked:
		err = c.discardChunked()
	case head.length >= 0:
		_, err = c.reader.Discard(head.length)
	default:
		// No length: the body runs to the connection's end.
		_, err = io.Copy(io.Discard, c.reader)
		head.keepAlive = false
	}
	if err != nil {
		return head, true, err
	}
	return head, true, nil
}

type responseHead struct {
	status     int
	keepAlive  bool
	length     int // -1: none given
	chunked    bool
	retryAfter int // whole seconds; -1: none given
}

// readHead reads a status line and its headers; started: a byte of it came.
func (c *rawConn) readHead() (head responseHead, started bool, err error) {
	line, err := c.reader.ReadSlice('\n')
	if err != nil {
		return head, len(line) > 0, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 13 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (line[12] != ' ' && line[12] != '\r' && line[12] != '\n') {
		return head, true, errMalformed
	}
	if head.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return head, true, errMalformed
	}
	head.keepAlive = line[7] == '1'
	head.length = -1
	head.retryAfter = -1
	for {
		header, err := c.reader.ReadSlice('\n')
		if err != nil {
			return head, true, err
		}
		if len(header) <= 2 {
			return head, true, nil
		}
		colon := bytes.IndexByte(header, ':')
		if colon < 0 {
			return head, true, errMalformed
		}
		name, value := header[:colon], bytes.TrimSpace(header[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			if head.length, err = strconv.Atoi(string(value)); err != nil || head.length < 0 {
				return head, true, errMalformed
			}
		case bytes.EqualFold(name, []byte("retry-after")):
			head.retryAfter = retryAfterSeconds(string(value))
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			// The last coding is the one the body is framed by.
			codings := bytes.Split(value, []byte(","))
			head.chunked = bytes.EqualFold(bytes.TrimSpace(codings[len(codings)-1]), []byte("chunked"))
		case bytes.EqualFold(name, []byte("connection")):
			for _, option := range bytes.Split(value, []byte(",")) {
				switch option = bytes.TrimSpace(option); {
				case bytes.EqualFold(option, []byte("close")):
					head.keepAlive = false
				case bytes.EqualFold(option, []byte("keep-alive")):
					head.keepAlive = true
				}
			}
		}
	}
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

// retryAfterSeconds reads a Retry-After's delta-seconds; -1 for anything else (an HTTP date).
func retryAfterSeconds(value string) int {
	seconds, err := strconv.Atoi(value)
	if err != nil || seconds < 0 {
		return -1
	}
	return seconds
}
