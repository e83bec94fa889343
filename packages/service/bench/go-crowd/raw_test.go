package main

// The raw client (raw.go) against real servers on loopback sockets: what it must read as one
// answer each, and when it must open a new connection.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newRawConn(t *testing.T, url string) (*rawConn, []byte) {
	t.Helper()
	requests, address, err := requestBytes(url, "/api/v1/me", []string{"token-1"})
	if err != nil {
		t.Fatal(err)
	}
	return &rawConn{address: address, timeout: 5 * time.Second}, requests[0]
}

func TestRawClientReadsEachKindOfAnswerOnOneConnection(t *testing.T) {
	var connections, served int64
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer token-1" || r.URL.Path != "/api/v1/me" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		n := atomic.AddInt64(&served, 1)
		switch n % 4 {
		case 0: // a length
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true}`)
		case 1: // chunked: flushed before the end
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "part one,")
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "part two")
		case 2: // no body at all
			w.WriteHeader(http.StatusNoContent)
		case 3: // an interim answer first
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "no")
		}
	}))
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			atomic.AddInt64(&connections, 1)
		}
	}
	server.Start()
	defer server.Close()

	conn, request := newRawConn(t, server.URL)
	defer conn.close()
	want := []int{503, 204, 401, 200, 503, 204, 401, 200}
	for i, status := range want {
		got, err := conn.do(request)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got.status != status {
			t.Fatalf("request %d: status %d, want %d", i, got.status, status)
		}
	}
	if n := atomic.LoadInt64(&connections); n != 1 {
		t.Fatalf("%d connections for %d requests, want 1 (keep-alive)", n, len(want))
	}
}

// A server that answers each request on its connection and then closes it, saying so or not.
func TestRawClientOpensANewConnectionWhenTheServerCloses(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	var accepted int64
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			n := atomic.AddInt64(&accepted, 1)
			go func(conn net.Conn, n int64) {
				defer conn.Close()
				reader := bufio.NewReader(conn)
				for {
					line, err := reader.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				switch n % 3 {
				case 1: // says so
					fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok")
				case 2: // does not: the next request finds the connection closed before any answer
					fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				case 0: // HTTP/1.0, the body to the connection's end
					fmt.Fprint(conn, "HTTP/1.0 200 OK\r\n\r\nto the end")
				}
			}(conn, n)
		}
	}()

	conn, request := newRawConn(t, "http://"+listener.Addr().String())
	defer conn.close()
	for i := 0; i < 6; i++ {
		reply, err := conn.do(request)
		if err != nil || reply.status != 200 {
			t.Fatalf("request %d: status %d, %v", i, reply.status, err)
		}
	}
	if n := atomic.LoadInt64(&accepted); n < 6 {
		t.Fatalf("%d connections for 6 requests, each closed after one answer", n)
	}
}

func TestRawClientTimesOutAServerThatNeverAnswers(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	conn, request := newRawConn(t, "http://"+listener.Addr().String())
	conn.timeout = 200 * time.Millisecond
	defer conn.close()
	if _, err := conn.do(request); err == nil || !isTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
}

func TestRequestBytesRefusesAPathAndDefaultsThePort(t *testing.T) {
	if _, _, err := requestBytes("http://127.0.0.1:3000/prefix", "/api/v1/me", []string{"t"}); err == nil {
		t.Fatal("a path in -url must be refused")
	}
	requests, address, err := requestBytes("http://127.0.0.1", "/api/v1/me", []string{"t"})
	if err != nil || address != "127.0.0.1:80" {
		t.Fatalf("address %q, %v", address, err)
	}
	if !strings.HasPrefix(string(requests[0]), "GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\n") {
		t.Fatalf("request %q", requests[0])
	}
}
