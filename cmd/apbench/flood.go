package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// floodOptions are the -flood mode's settings.
type floodOptions struct {
	kind      string // logins, register or burst
	from      string // comma-separated local addresses the flood comes from
	probeFrom string // local address of the other user's probe
	pid       int    // the server's pid, for /proc/PID/status
	limit     int    // with -check: the most 401s a burst may get
	check     bool   // exit 1 when a bound is broken
	maxHWM    int64  // MB
	maxP50    time.Duration
}

// flood measures what a burst of password-hashing requests does to the
// server: n at once from the -from addresses (bound as local addresses, so
// the server sees them as different clients), while another user's GET
// /api/v1/users/me is timed and the server's memory is read from /proc.
//
//	apbench -flood logins -n 300 -from 127.0.0.1,127.0.0.3,127.0.0.4 -pid $(pidof agentplatform) -check
//	apbench -flood burst -n 60 -from 127.0.0.5 -limit 10 -check   # failed logins of one known account
//	apbench -flood register -n 300 -pid …
func flood(ctx context.Context, o options, f floodOptions) error {
	froms, err := localAddrs(f.from)
	if err != nil {
		return err
	}
	probeAddr, err := localAddrs(f.probeFrom)
	if err != nil {
		return err
	}
	probe := boundClient(probeAddr[0], 4)

	// The other user, and (for burst) the account being guessed at.
	email := "probe-" + uuid.NewString()[:8] + "@example.com"
	token, err := signup(ctx, probe, o.base, email)
	if err != nil {
		return fmt.Errorf("probe user: %w", err)
	}
	target := ""
	if f.kind == "burst" {
		target = "target-" + uuid.NewString()[:8] + "@example.com"
		if _, err := signup(ctx, probe, o.base, target); err != nil {
			return fmt.Errorf("target user: %w", err)
		}
	}
	before, _ := procStatus(f.pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var lat []time.Duration
	var probeErr error
	wg.Go(func() { lat, probeErr = probeMe(ctx, probe, o.base, token, stop) })
	var maxRSS atomic.Int64
	wg.Go(func() { sampleRSS(f.pid, &maxRSS, stop) })

	clients := make([]*http.Client, len(froms))
	for i, a := range froms {
		clients[i] = boundClient(a, o.n)
	}
	counts := map[int]int{}
	var mu sync.Mutex
	var firstErr error
	gate := make(chan struct{})
	var flooders sync.WaitGroup
	for i := range o.n {
		flooders.Go(func() {
			<-gate
			var path string
			v := url.Values{}
			switch f.kind {
			case "logins":
				path = "/api/v1/auth/login"
				v.Set("email", "nobody-"+uuid.NewString()[:12]+"@example.com")
				v.Set("password", "guess-"+strconv.Itoa(i))
			case "burst":
				path = "/api/v1/auth/login"
				v.Set("email", target)
				v.Set("password", "guess-"+strconv.Itoa(i))
			case "register":
				path = "/api/v1/auth/register"
				v.Set("email", "flood-"+uuid.NewString()[:12]+"@example.com")
				v.Set("password", "flood-password")
				v.Set("confirm_password", "flood-password")
			}
			status, err := postForm(ctx, clients[i%len(clients)], o.base+path, v)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			counts[status]++
		})
	}
	time.Sleep(200 * time.Millisecond) // a baseline for the probe
	start := time.Now()
	close(gate)
	flooders.Wait()
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if probeErr != nil {
		return probeErr
	}
	after, _ := procStatus(f.pid)

	var statuses []string
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		statuses = append(statuses, fmt.Sprintf("%d×%d", counts[s], s))
	}
	fmt.Printf("flood: %d concurrent %s from %s in %.2fs: %s\n", o.n, f.kind, f.from, elapsed.Seconds(), strings.Join(statuses, " "))
	if f.pid > 0 {
		fmt.Printf("server memory: VmHWM %d MB (before the flood %d MB), highest VmRSS sampled %d MB, VmRSS after %d MB\n",
			after.hwm>>20, before.hwm>>20, maxRSS.Load()>>20, after.rss>>20)
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("another user's GET /api/v1/users/me meanwhile: %d requests, p50 %.1fms p90 %.1fms max %.1fms\n",
		len(lat), ms(q(0.5)), ms(q(0.9)), ms(q(1)))

	if !f.check {
		return nil
	}
	var broken []string
	if f.pid > 0 && after.hwm>>20 >= f.maxHWM {
		broken = append(broken, fmt.Sprintf("VmHWM %d MB >= %d MB", after.hwm>>20, f.maxHWM))
	}
	if q(0.5) >= f.maxP50 {
		broken = append(broken, fmt.Sprintf("GET /users/me p50 %s >= %s", q(0.5), f.maxP50))
	}
	if f.kind == "burst" && counts[http.StatusUnauthorized] > f.limit {
		broken = append(broken, fmt.Sprintf("%d 401s > the failure limit %d", counts[http.StatusUnauthorized], f.limit))
	}
	for s, n := range counts {
		if s != http.StatusUnauthorized && s != http.StatusTooManyRequests && !(f.kind == "register" && s == http.StatusSeeOther) {
			broken = append(broken, fmt.Sprintf("%d answers %d", n, s))
		}
	}
	if len(broken) > 0 {
		return errors.New("check failed: " + strings.Join(broken, "; "))
	}
	fmt.Println("check: ok")
	return nil
}

func localAddrs(list string) ([]*net.TCPAddr, error) {
	var out []*net.TCPAddr
	for _, s := range strings.Split(list, ",") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return nil, fmt.Errorf("%q is not an IP address", s)
		}
		out = append(out, &net.TCPAddr{IP: ip})
	}
	return out, nil
}

// boundClient connects from local address a, keeping up to conns idle
// connections so a flood reuses nothing it did not open.
func boundClient(a *net.TCPAddr, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: a, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxIdleConns: conns,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func postForm(ctx context.Context, c *http.Client, u string, v url.Values) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", u, strings.NewReader(v.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

// signup registers email and returns a session token.
func signup(ctx context.Context, c *http.Client, base, email string) (string, error) {
	if err := callWith(ctx, c, "POST", base+"/api/v1/auth/register", "", map[string]string{
		"email": email, "password": "probe-password", "confirm_password": "probe-password"}, nil); err != nil {
		return "", err
	}
	var login struct {
		Token string `json:"access_token"`
	}
	err := callWith(ctx, c, "POST", base+"/api/v1/auth/login", "", map[string]string{"email": email, "password": "probe-password"}, &login)
	return login.Token, err
}

// probeMe times GET /api/v1/users/me, one at a time, until stop.
func probeMe(ctx context.Context, c *http.Client, base, token string, stop <-chan struct{}) ([]time.Duration, error) {
	var lat []time.Duration
	for {
		select {
		case <-stop:
			return lat, nil
		default:
		}
		req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/users/me", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		t := time.Now()
		res, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /api/v1/users/me: %d", res.StatusCode)
		}
		lat = append(lat, time.Since(t))
		time.Sleep(20 * time.Millisecond)
	}
}

type memory struct{ hwm, rss int64 } // bytes

// procStatus reads VmHWM (the peak resident set) and VmRSS of pid.
func procStatus(pid int) (memory, error) {
	var m memory
	if pid <= 0 {
		return m, nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmHWM":
			m.hwm = kb << 10
		case "VmRSS":
			m.rss = kb << 10
		}
	}
	return m, sc.Err()
}

func sampleRSS(pid int, highest *atomic.Int64, stop <-chan struct{}) {
	if pid <= 0 {
		return
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if m, err := procStatus(pid); err == nil && m.rss > highest.Load() {
			highest.Store(m.rss)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
