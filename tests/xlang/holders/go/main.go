// A Go holder of a real peer client, contending with baton on one name: redsync (Redlock in
// Go, over go-redis) on `?scheme=simple` / `redlock://`, or etcd's `concurrency.Mutex`
// (go.etcd.io/etcd/client/v3) on `etcd://`. Records every ask, grant and release in the
// shared history (one appended JSON line per event, clock CLOCK_MONOTONIC as every holder).
//
//	go-holder via=redsync|etcd-mutex url=… name=… id=go1 n=3 hold_ms=40 history=… [lease_ms=15000]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sys/unix"
)

const wait = 90 * time.Second // one acquire's bound

type hold struct {
	release func() error
	token   *int64
	owner   string
}

func main() {
	a := map[string]string{}
	for _, s := range os.Args[1:] {
		k, v, _ := strings.Cut(s, "=")
		a[k] = v
	}
	n, _ := strconv.Atoi(def(a["n"], "3"))
	holdMs, _ := strconv.Atoi(def(a["hold_ms"], "40"))
	leaseMs, _ := strconv.Atoi(def(a["lease_ms"], "15000"))
	hosts := strings.Split(strings.SplitN(strings.SplitN(a["url"], "://", 2)[1], "?", 2)[0], ",")
	var take func() (hold, error)
	var closeAll func()
	switch a["via"] {
	case "redsync":
		take, closeAll = redsyncHolds(hosts, a["name"], time.Duration(leaseMs)*time.Millisecond)
	case "etcd-mutex":
		take, closeAll = etcdHolds(hosts, a["name"], leaseMs/1000)
	default:
		fail(fmt.Errorf("unknown via %q", a["via"]))
	}
	ev := map[string]any{"id": a["id"], "lang": "go", "via": a["via"], "mode": "lock"}
	// "ready", then wait (bounded) for the driver's go file: all holders start together.
	record(a["history"], ev, "ready", nil, "")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(a["history"] + ".go"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("no %s.go within 2 min", a["history"]))
		}
	}
	for i := 0; i < n; i++ {
		record(a["history"], ev, "ask", nil, "")
		h, err := take()
		if err != nil {
			fail(err)
		}
		record(a["history"], ev, "grant", h.token, h.owner)
		time.Sleep(time.Duration(holdMs) * time.Millisecond)
		record(a["history"], ev, "release", nil, "")
		if err := h.release(); err != nil {
			fail(err)
		}
	}
	closeAll()
}

func redsyncHolds(hosts []string, name string, lease time.Duration) (func() (hold, error), func()) {
	var pools []redis.Pool
	var clients []*goredislib.Client
	for _, h := range hosts {
		c := goredislib.NewClient(&goredislib.Options{Addr: strings.TrimSuffix(h, "/")})
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	// redsync polls: a try every 50 ms, as many as fit in the wait.
	tries := int(wait / (50 * time.Millisecond))
	take := func() (hold, error) {
		m := rs.NewMutex(name, redsync.WithExpiry(lease), redsync.WithTries(tries),
			redsync.WithRetryDelay(50*time.Millisecond))
		if err := m.Lock(); err != nil {
			return hold{}, err
		}
		return hold{release: func() error { _, err := m.Unlock(); return err }, owner: m.Value()}, nil
	}
	return take, func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
}

func etcdHolds(hosts []string, name string, ttl int) (func() (hold, error), func()) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: hosts, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(err)
	}
	// One session (lease) for the process, as baton's etcd client does; the mutex watches
	// the key before its own and wakes on that key's delete.
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		fail(err)
	}
	take := func() (hold, error) {
		m := concurrency.NewMutex(s, name) // keys NAME/<lease hex>, as baton and etcdctl
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := m.Lock(ctx); err != nil {
			return hold{}, err
		}
		// The fencing token baton gives on etcd: the holder key's create revision.
		rev := m.Header().Revision
		if r, err := cli.Get(context.Background(), m.Key()); err == nil && len(r.Kvs) == 1 {
			rev = r.Kvs[0].CreateRevision
		}
		return hold{release: func() error { return m.Unlock(context.Background()) }, token: &rev, owner: m.Key()}, nil
	}
	return take, func() { _ = s.Close(); _ = cli.Close() }
}

func record(path string, ev map[string]any, kind string, token *int64, owner string) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		fail(err)
	}
	e := map[string]any{"t": ts.Nano(), "ev": kind}
	for k, v := range ev {
		e[k] = v
	}
	if kind == "grant" {
		e["token"] = token
		e["owner"] = owner
	}
	line, _ := json.Marshal(e)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		fail(err)
	}
}

func def(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "go-holder:", err)
	os.Exit(1)
}
