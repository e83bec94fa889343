// go-crowd: a load generator for one cheap authenticated GET, in Go, for the crowd of cheap
// requests (issue 7) measured with a generator that takes less of the machine than the lab's.
// On two cores shared by the service, PostgreSQL and the generator, the lab's one Node.js
// generator thread could not send a crowd of 1.5 times the capacity of a fast host: it
// saturated, and left arrivals unsent (bench/README, "A crowd sent from Go"). This sends the
// same requests as the lab's `me-crowd` scenario, closed (virtual users in a loop) or open (a
// constant arrival rate, each latency counted from its arrival's intended time, so a stalled
// service shows in every arrival it delayed), and probes `/healthz` from a connection of its
// own. It prints one JSON object.
//
// Open arrivals that are refused (503) may try again, as the lab's me-crowd-naive and
// me-crowd-polite scenarios do (`-retry naive|polite`, up to `-attempts` requests an arrival):
// naive ones at once, polite ones after the answer's Retry-After (1 s without one). A polite
// arrival waiting out its Retry-After holds a timer, not a connection, so a crowd that is mostly
// waiting costs the generator next to nothing.
//
// By default it writes each request as bytes made once and reads the answers by hand (raw.go):
// net/http's client (`-client net`) took about twice the CPU a request (47 µs against 21), which
// on shared cores the service loses. Open load goes through `-connections` goroutines, each with
// its connection, that take arrivals in turn; an arrival waiting for one counts that wait in its
// latency, never as a timeout.
//
//	go run . -url http://127.0.0.1:3913 -tokens tokens.txt -mode closed -vus 64 -duration 15s
//	go run . -url http://127.0.0.1:3913 -tokens tokens.txt -mode open -rate 18000 -ramp 3s -duration 22s
//
// The standard library only.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type options struct {
	url         string
	path        string
	tokensFile  string
	mode        string
	vus         int
	rate        float64
	ramp        time.Duration
	duration    time.Duration
	maxInFlight int
	connections int
	timeout     time.Duration
	healthzRate float64
	client      string
	retry       string
	attempts    int
}

// recorder keeps every latency of the measured window and the outcomes of all requests, for
// one goroutine.
type recorder struct {
	latencies   []float64 // ms, requests that got an answer within the measured window
	okLatencies []float64 // ms, those of them answered 2xx
	status      map[int]int
	// refused: 503s with a Retry-After (an answer a client can act on), over the whole run.
	refused  int
	timeouts int
	connErrs int
	okInHold int
}

func (r *recorder) record(latency time.Duration, reply answer, err error, inHold bool) {
	switch {
	case err == nil:
		r.status[reply.status]++
		if reply.status == http.StatusServiceUnavailable && reply.retryAfter >= 0 {
			r.refused++
		}
		if inHold {
			ms := float64(latency) / float64(time.Millisecond)
			r.latencies = append(r.latencies, ms)
			if reply.status >= 200 && reply.status < 300 {
				r.okInHold++
				r.okLatencies = append(r.okLatencies, ms)
			}
		}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		r.timeouts++
	default:
		r.connErrs++
	}
}

func merge(recorders []*recorder) *recorder {
	all := &recorder{status: map[int]int{}}
	for _, r := range recorders {
		all.latencies = append(all.latencies, r.latencies...)
		all.okLatencies = append(all.okLatencies, r.okLatencies...)
		all.refused += r.refused
		for status, n := range r.status {
			all.status[status] += n
		}
		all.timeouts += r.timeouts
		all.connErrs += r.connErrs
		all.okInHold += r.okInHold
	}
	return all
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

type percentiles struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

func summarise(values []float64) percentiles {
	if len(values) == 0 {
		return percentiles{}
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(sorted)))) - 1
		if i < 0 {
			i = 0
		}
		return math.Round(sorted[i]*100) / 100
	}
	return percentiles{Count: len(sorted), P50Ms: at(0.5), P90Ms: at(0.9), P99Ms: at(0.99), MaxMs: at(1)}
}

type result struct {
	Mode             string         `json:"mode"`
	HoldSeconds      float64        `json:"holdSeconds"`
	OfferedPerSecond float64        `json:"offeredPerSecond,omitempty"`
	ServedPerSecond  float64        `json:"servedPerSecond"`
	Retry            string         `json:"retry,omitempty"`
	Sent             int64          `json:"sent"`
	Requests         int64          `json:"requests"`
	NotSent          int64          `json:"notSent"`
	ByStatus         map[string]int `json:"byStatus"`
	RefusedRetry     int            `json:"refusedWithRetryAfter"`
	Timeouts         int            `json:"timeouts"`
	ConnectionErrors int            `json:"connectionErrors"`
	Latency          percentiles    `json:"latency"`
	OkLatency        percentiles    `json:"okLatency"`
	Healthz          percentiles    `json:"healthz"`
	GeneratorCores   float64        `json:"generatorCores"`
}

func readTokens(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tokens []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 64*1024)
	for scanner.Scan() {
		if line := scanner.Text(); line != "" {
			tokens = append(tokens, line)
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token", file)
	}
	return tokens, scanner.Err()
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
}

func newClient(connections int, timeout time.Duration) *http.Client {
	transport := &http.Transport{
		MaxConnsPerHost:     connections,
		MaxIdleConnsPerHost: connections,
		MaxIdleConns:        connections,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &http.Client{Transport: transport, Timeout: timeout}
}

// send makes one GET and reads its body to the end (so the connection is reused).
func send(client *http.Client, url, token string) (answer, error) {
	request, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := client.Do(request)
	if err != nil {
		return answer{}, err
	}
	_, err = io.Copy(io.Discard, response.Body)
	response.Body.Close()
	return answer{response.StatusCode, retryAfterSeconds(response.Header.Get("Retry-After"))}, err
}

// probers: the /healthz probes that may wait for an answer at once, each on a keep-alive
// connection of its own (the lab's prober's bound, packages/lab/src/load/probe.ts).
const probers = 16

// probeHealthz sends GET /healthz at random times (a Poisson process, `rate` a second) until
// `stop`, and returns the latencies in ms, each from the probe's intended time: a probe that
// waited for one of the `probers` to be free counts that wait, so a stalled service shows in
// every probe it delayed, as in the lab. A probe that got no 200 counts as the timeout.
func probeHealthz(base string, rate float64, timeout time.Duration, stop <-chan struct{}) []float64 {
	due := make(chan time.Time, 1<<16)
	var mu sync.Mutex
	var latencies []float64
	var wg sync.WaitGroup
	for i := 0; i < probers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := newClient(1, timeout)
			for intended := range due {
				latency := float64(timeout) / float64(time.Millisecond)
				if reply, err := send(client, base+"/healthz", ""); err == nil && reply.status == http.StatusOK {
					latency = float64(time.Since(intended)) / float64(time.Millisecond)
				}
				mu.Lock()
				latencies = append(latencies, latency)
				mu.Unlock()
			}
		}()
	}
	next := time.Now()
	for {
		next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second)))
		select {
		case <-stop:
			close(due)
			wg.Wait()
			return latencies
		case <-time.After(time.Until(next)):
		}
		due <- next
	}
}

// sender sends request k (token k mod n) and returns its answer; one per goroutine.
type sender func(k int) (answer, error)

// newSenders makes each goroutine's sender: net/http's client, shared, or a raw connection of
// its own (raw.go).
func newSenders(o options, connections int, tokens []string) (func() sender, error) {
	if o.client == "net" {
		client := newClient(connections, o.timeout)
		target := o.url + o.path
		return func() sender {
			return func(k int) (answer, error) { return send(client, target, tokens[k%len(tokens)]) }
		}, nil
	}
	requests, address, err := requestBytes(o.url, o.path, tokens)
	if err != nil {
		return nil, err
	}
	return func() sender {
		conn := &rawConn{address: address, timeout: o.timeout}
		return func(k int) (answer, error) { return conn.do(requests[k%len(requests)]) }
	}, nil
}

func runClosed(o options, newSender func() sender, recorders []*recorder, holdStart, end time.Time, sent *int64) {
	var wg sync.WaitGroup
	for vu := 0; vu < o.vus; vu++ {
		wg.Add(1)
		go func(vu int) {
			defer wg.Done()
			send, rec := newSender(), recorders[vu]
			for time.Now().Before(end) {
				start := time.Now()
				atomic.AddInt64(sent, 1)
				reply, err := send(vu)
				done := time.Now()
				rec.record(done.Sub(start), reply, err, !start.Before(holdStart) && !done.After(end))
			}
		}(vu)
	}
	wg.Wait()
}

type arrival struct {
	k        int
	intended time.Time
	// attempt: the requests this arrival has sent so far.
	attempt int
}

// The dispatcher sleeps at least this long between batches of arrivals (each latency is counted
// from its arrival's intended time, so a batch's first arrivals count the wait): a sleep per
// arrival, 20,000 a second, cost the generator more than the requests.
const minDispatchSleep = 200 * time.Microsecond

// retryWait is how long a polite arrival waits before it tries again: the answer's Retry-After,
// 1 s without one.
func retryWait(reply answer) time.Duration {
	if reply.retryAfter < 0 {
		return time.Second
	}
	return time.Duration(reply.retryAfter) * time.Second
}

func runOpen(o options, newSender func() sender, recorders []*recorder, begin, holdStart, end time.Time, sent, requests, notSent *int64) {
	// Arrivals sent and not yet done, waiting for a connection or out a Retry-After included.
	var inFlight int64
	var underWay sync.WaitGroup
	queue := make(chan arrival, o.maxInFlight)
	// Polite arrivals back from their Retry-After; never more than the arrivals in flight.
	retries := make(chan arrival, o.maxInFlight)
	done := func() {
		atomic.AddInt64(&inFlight, -1)
		underWay.Done()
	}
	// serve sends an arrival's requests until it is answered, gives up, or waits out a Retry-After.
	serve := func(a arrival, send sender, rec *recorder) {
		for {
			reply, err := send(a.k)
			finished := time.Now()
			a.attempt++
			atomic.AddInt64(requests, 1)
			rec.record(finished.Sub(a.intended), reply, err, !a.intended.Before(holdStart) && !finished.After(end))
			if err != nil || reply.status != http.StatusServiceUnavailable || a.attempt >= o.attempts {
				done()
				return
			}
			if o.retry == "polite" {
				again := a
				time.AfterFunc(retryWait(reply), func() { retries <- again })
				return
			}
		}
	}
	var workers sync.WaitGroup
	for worker := 0; worker < o.connections; worker++ {
		workers.Add(1)
		go func(rec *recorder) {
			defer workers.Done()
			send := newSender()
			for {
				select {
				case a := <-retries:
					serve(a, send, rec)
				case a, ok := <-queue:
					if !ok {
						return
					}
					serve(a, send, rec)
				}
			}
		}(recorders[worker])
	}
	rampSeconds := o.ramp.Seconds()
	// The k-th arrival's offset: the ramp's rate rises linearly from 0 to `rate`, then holds.
	offset := func(k int) time.Duration {
		n := float64(k) + 1
		rampArrivals := o.rate * rampSeconds / 2
		if n <= rampArrivals && rampSeconds > 0 {
			return time.Duration(math.Sqrt(2*n*rampSeconds/o.rate) * float64(time.Second))
		}
		return time.Duration((rampSeconds + (n-rampArrivals)/o.rate) * float64(time.Second))
	}
	for k := 0; ; k++ {
		intended := begin.Add(offset(k))
		if !intended.Before(end) {
			break
		}
		if wait := time.Until(intended); wait > 0 {
			time.Sleep(max(wait, minDispatchSleep))
		}
		if atomic.LoadInt64(&inFlight) >= int64(o.maxInFlight) {
			atomic.AddInt64(notSent, 1)
			continue
		}
		atomic.AddInt64(&inFlight, 1)
		atomic.AddInt64(sent, 1)
		underWay.Add(1)
		queue <- arrival{k: k, intended: intended}
	}
	// Every arrival done first: a polite one may still come back from its Retry-After.
	underWay.Wait()
	close(queue)
	workers.Wait()
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "http://127.0.0.1:3000", "the service's base URL")
	flag.StringVar(&o.path, "path", "/api/v1/me", "the path every request GETs")
	flag.StringVar(&o.tokensFile, "tokens", "", "a file of access tokens, one a line (request k uses token k mod n)")
	flag.StringVar(&o.mode, "mode", "open", "closed (virtual users in a loop) or open (a constant arrival rate)")
	flag.IntVar(&o.vus, "vus", 64, "closed: virtual users, each on a connection")
	flag.Float64Var(&o.rate, "rate", 1000, "open: arrivals a second once the ramp is over")
	flag.DurationVar(&o.ramp, "ramp", 3*time.Second, "open: the rate rises from 0 over this long (not measured)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the load is held after the ramp (measured)")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 2000, "open: arrivals in flight at most; one more is counted as not sent")
	flag.IntVar(&o.connections, "connections", 256, "open: keep-alive connections at most (closed: one per user)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "a request's timeout")
	flag.Float64Var(&o.healthzRate, "healthz-rate", 10, "/healthz probes a second, at random times")
	flag.StringVar(&o.client, "client", "raw", "raw (requests written once, responses read by hand: raw.go) or net (net/http's client)")
	flag.StringVar(&o.retry, "retry", "once", "open: what a refused (503) arrival does: once (nothing more), naive (tries again at once) or polite (after its Retry-After)")
	flag.IntVar(&o.attempts, "attempts", 3, "open, with -retry naive or polite: requests an arrival sends at most")
	flag.Parse()
	tokens, err := readTokens(o.tokensFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-crowd:", err)
		os.Exit(2)
	}
	if o.mode != "open" && o.mode != "closed" {
		fmt.Fprintln(os.Stderr, "go-crowd: -mode is open or closed")
		os.Exit(2)
	}
	if o.retry != "once" && o.retry != "naive" && o.retry != "polite" {
		fmt.Fprintln(os.Stderr, "go-crowd: -retry is once, naive or polite")
		os.Exit(2)
	}
	if o.retry == "once" || o.mode == "closed" {
		o.attempts = 1
	}
	if o.attempts < 1 {
		fmt.Fprintln(os.Stderr, "go-crowd: -attempts is 1 or more")
		os.Exit(2)
	}
	if o.client != "raw" && o.client != "net" {
		fmt.Fprintln(os.Stderr, "go-crowd: -client is raw or net")
		os.Exit(2)
	}
	connections := o.connections
	if o.mode == "closed" {
		connections = o.vus
	}
	newSender, err := newSenders(o, connections, tokens)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-crowd:", err)
		os.Exit(2)
	}
	// One recorder per goroutine that sends, merged at the end: no lock shared by them all.
	recorders := make([]*recorder, connections)
	for i := range recorders {
		recorders[i] = &recorder{status: map[int]int{}}
	}
	var sent, requests, notSent int64

	stop := make(chan struct{})
	healthz := make(chan []float64, 1)
	go func() { healthz <- probeHealthz(o.url, o.healthzRate, o.timeout, stop) }()
	cpuBefore := cpuSeconds()
	begin := time.Now()
	holdStart := begin.Add(o.ramp)
	if o.mode == "closed" {
		holdStart = begin
	}
	end := holdStart.Add(o.duration)
	if o.mode == "closed" {
		runClosed(o, newSender, recorders, holdStart, end, &sent)
		requests = sent
	} else {
		runOpen(o, newSender, recorders, begin, holdStart, end, &sent, &requests, &notSent)
	}
	rec := merge(recorders)
	elapsed := time.Since(begin).Seconds()
	close(stop)
	probes := <-healthz

	byStatus := map[string]int{}
	for status, n := range rec.status {
		byStatus[fmt.Sprint(status)] = n
	}
	out := result{
		Mode:             o.mode,
		HoldSeconds:      o.duration.Seconds(),
		ServedPerSecond:  math.Round(float64(rec.okInHold)/o.duration.Seconds()*10) / 10,
		Sent:             sent,
		Requests:         requests,
		NotSent:          notSent,
		ByStatus:         byStatus,
		Timeouts:         rec.timeouts,
		ConnectionErrors: rec.connErrs,
		Latency:          summarise(rec.latencies),
		OkLatency:        summarise(rec.okLatencies),
		RefusedRetry:     rec.refused,
		Healthz:          summarise(probes),
		GeneratorCores:   math.Round((cpuSeconds()-cpuBefore)/elapsed*1000) / 1000,
	}
	if o.mode == "open" {
		out.OfferedPerSecond = o.rate
		out.Retry = o.retry
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "go-crowd:", err)
		os.Exit(1)
	}
}
