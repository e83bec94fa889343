package main

// Open arrivals refused with a 503 (main.go's runOpen): naive ones try again at once, polite ones
// after the answer's Retry-After, each up to -attempts requests, every request counted once.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// refusingServer answers each token's first request 503 with `retryAfter`, and serves the next
// ones; it keeps when each token's requests came.
type refusingServer struct {
	mu     sync.Mutex
	seen   map[string][]time.Time
	server *httptest.Server
}

func newRefusingServer(retryAfter string) *refusingServer {
	s := &refusingServer{seen: map[string][]time.Time{}}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get("Authorization")
		s.mu.Lock()
		s.seen[token] = append(s.seen[token], time.Now())
		first := len(s.seen[token]) == 1
		s.mu.Unlock()
		if first {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	return s
}

// crowd sends an open crowd of about `arrivals` arrivals, each with a token of its own.
func crowd(t *testing.T, url, retry string, attempts, arrivals int) (sent, requests, notSent int64, rec *recorder) {
	t.Helper()
	tokens := make([]string, 4*arrivals)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("token-%d", i)
	}
	o := options{url: url, path: "/api/v1/me", mode: "open", rate: float64(arrivals) / 0.5, duration: 500 * time.Millisecond, maxInFlight: 1000, connections: 4, timeout: 5 * time.Second, client: "raw", retry: retry, attempts: attempts}
	newSender, err := newSenders(o, o.connections, tokens)
	if err != nil {
		t.Fatal(err)
	}
	recorders := make([]*recorder, o.connections)
	for i := range recorders {
		recorders[i] = &recorder{status: map[int]int{}}
	}
	begin := time.Now()
	runOpen(o, newSender, recorders, begin, begin, begin.Add(o.duration), &sent, &requests, &notSent)
	return sent, requests, notSent, merge(recorders)
}

func TestNaiveArrivalsTryAgainAtOnceUpToTheirAttempts(t *testing.T) {
	s := newRefusingServer("1")
	defer s.server.Close()
	sent, requests, notSent, rec := crowd(t, s.server.URL, "naive", 3, 10)
	if sent < 5 || notSent != 0 {
		t.Fatalf("sent %d arrivals, %d not sent", sent, notSent)
	}
	// Refused once, served the second time: two requests an arrival, a 503 and a 200 each.
	if requests != 2*sent || rec.status[503] != int(sent) || rec.status[200] != int(sent) {
		t.Fatalf("%d arrivals, %d requests, statuses %v", sent, requests, rec.status)
	}
}

func TestPoliteArrivalsWaitOutTheRetryAfterBeforeTryingAgain(t *testing.T) {
	s := newRefusingServer("1")
	defer s.server.Close()
	sent, requests, _, rec := crowd(t, s.server.URL, "polite", 3, 10)
	if requests != 2*sent || rec.status[200] != int(sent) {
		t.Fatalf("%d arrivals, %d requests, statuses %v", sent, requests, rec.status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for token, times := range s.seen {
		if len(times) != 2 {
			t.Fatalf("%s: %d requests", token, len(times))
		}
		if gap := times[1].Sub(times[0]); gap < time.Second {
			t.Fatalf("%s tried again %v after its 503, before its Retry-After of 1 s", token, gap)
		}
	}
}

func TestAnArrivalGivesUpAfterItsAttempts(t *testing.T) {
	always := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer always.Close()
	for _, retry := range []string{"naive", "polite"} {
		sent, requests, _, rec := crowd(t, always.URL, retry, 3, 10)
		if requests != 3*sent || rec.status[503] != int(requests) || rec.refused != int(requests) {
			t.Fatalf("%s: %d arrivals, %d requests, statuses %v", retry, sent, requests, rec.status)
		}
	}
	sent, requests, _, _ := crowd(t, always.URL, "once", 1, 10)
	if requests != sent {
		t.Fatalf("once: %d arrivals, %d requests", sent, requests)
	}
}

func TestRawClientReadsRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int
	}{{"3", 3}, {"", -1}, {"Wed, 21 Oct 2015 07:28:00 GMT", -1}} {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.header != "" {
				w.Header().Set("Retry-After", tc.header)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		conn, request := newRawConn(t, server.URL)
		reply, err := conn.do(request)
		conn.close()
		server.Close()
		if err != nil || reply.status != 503 || reply.retryAfter != tc.want {
			t.Fatalf("Retry-After %q: %+v, %v; want %d", tc.header, reply, err, tc.want)
		}
	}
}

func TestHealthzProbesCountTheirWaitFromTheirIntendedTime(t *testing.T) {
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "ok")
	}))
	defer server.Close()
	stop := make(chan struct{})
	got := make(chan []float64, 1)
	go func() { got <- probeHealthz(server.URL, 200, 5*time.Second, stop) }()
	// A stalled service for half a second: every prober waits, and the probes due meanwhile too.
	time.Sleep(500 * time.Millisecond)
	close(release)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	latencies := <-got
	delayed := 0
	for _, ms := range latencies {
		if ms >= 100 {
			delayed++
		}
	}
	// About 80 probes were due more than 100 ms before the release; timed from their send, only
	// the first one on each of the 16 connections would show the stall.
	if delayed <= probers {
		t.Fatalf("%d of %d probes show a wait of 100 ms or more; want more than the %d probers", delayed, len(latencies), probers)
	}
}
