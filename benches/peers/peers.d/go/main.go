// The Go peers of `benches/peers/bench-peers`: redsync (Redis, one node or Redlock over
// several) and etcd clientv3's `concurrency.Mutex`, timed in the three scenarios of
// `baton bench` and printed as one JSON object (the shape every side of the bench prints):
//
//	peers-go -peer redsync|etcd -endpoints 127.0.0.1:31010[,…] -d 3s -n 10000 -handoff-max 100
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// A lock handle of either peer: one name, one owner.
type locker interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

type rsLock struct{ m *redsync.Mutex }

func (l rsLock) lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l rsLock) unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

type etcdLock struct{ m *concurrency.Mutex }

func (l etcdLock) lock(ctx context.Context) error   { return l.m.Lock(ctx) }
func (l etcdLock) unlock(ctx context.Context) error { return l.m.Unlock(ctx) }

// factory makes a handle on `name`; `owner` tells handles of one name apart.
type factory func(name string, owner int) locker

func redsyncFactory(endpoints []string) (factory, func()) {
	var pools []redis.Pool
	var clients []*goredislib.Client
	for _, addr := range endpoints {
		// PoolSize 64: one connection per task of the 64-task scenario, as baton's pipelined link needs none.
		c := goredislib.NewClient(&goredislib.Options{Addr: addr, PoolSize: 64})
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	return func(name string, _ int) locker {
			// A 30 s lease, as baton's watchdog lease (redsync has no watchdog); default retries.
			return rsLock{rs.NewMutex(name, redsync.WithExpiry(30*time.Second))}
		}, func() {
			for _, c := range clients {
				c.Close()
			}
		}
}

func etcdFactory(endpoints []string) (factory, func()) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	die(err)
	// Two sessions (leases): a mutex is keyed by its session, so the two handles of the
	// hand-off need one each; every uncontended name shares the first.
	var sessions [2]*concurrency.Session
	for i := range sessions {
		sessions[i], err = concurrency.NewSession(cli, concurrency.WithTTL(30))
		die(err)
	}
	return func(name string, owner int) locker {
			return etcdLock{concurrency.NewMutex(sessions[owner%2], "/"+name)}
		}, func() {
			for _, s := range sessions {
				s.Close()
			}
			cli.Close()
		}
}

type stats struct {
	Ops       int      `json:"ops"`
	OpsPerSec *float64 `json:"ops_per_sec"`
	P50       float64  `json:"p50_us"`
	P99       float64  `json:"p99_us"`
	Max       float64  `json:"max_us"`
	// The timed part's wall-clock window, seconds since the epoch (bench-peers --cpu).
	T0 float64 `json:"t0_unix"`
	T1 float64 `json:"t1_unix"`
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func summarize(lat []time.Duration, start time.Time, rate bool) stats {
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return us(lat[int(p*float64(len(lat)-1))])
	}
	s := stats{Ops: len(lat), P50: q(0.5), P99: q(0.99), Max: q(1), T0: unix(start), T1: unix(start.Add(elapsed))}
	if rate && elapsed > 0 {
		r := float64(len(lat)) / elapsed.Seconds()
		s.OpsPerSec = &r
	}
	return s
}

func cycle(ctx context.Context, l locker) {
	die(l.lock(ctx))
	die(l.unlock(ctx))
}

// uncontended: `tasks` goroutines, a name each, until `n` cycles in all or `d`.
func uncontended(ctx context.Context, mk factory, tasks, n int, d time.Duration) stats {
	locks := make([]locker, tasks)
	for i := range locks {
		locks[i] = mk(fmt.Sprintf("bench/peer/%d-%d/%d", tasks, time.Now().UnixNano(), i), 0)
		cycle(ctx, locks[i]) // warm-up: connections outside the timing
	}
	var claimed atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, l := range locks {
		wg.Add(1)
		go func(l locker) {
			defer wg.Done()
			var lat []time.Duration
			for time.Now().Before(deadline) && claimed.Add(1) <= int64(n) {
				t := time.Now()
				cycle(ctx, l)
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}(l)
	}
	wg.Wait()
	return summarize(all, start, true)
}

// handoff: two handles on one name; the holder lets the waiter park 10 ms, then releases;
// a sample runs from the release call to the waiter's grant.
func handoff(ctx context.Context, mk factory, n, most int, d time.Duration) stats {
	name := fmt.Sprintf("bench/peer/handoff-%d", time.Now().UnixNano())
	holder, waiter := mk(name, 0), mk(name, 1)
	die(holder.lock(ctx))
	var lat []time.Duration
	start := time.Now()
	for len(lat) < n && len(lat) < most && time.Since(start) < d {
		ready := make(chan struct{})
		granted := make(chan time.Time)
		go func(w locker) {
			close(ready)
			die(w.lock(ctx))
			granted <- time.Now()
		}(waiter)
		<-ready
		time.Sleep(10 * time.Millisecond)
		t := time.Now()
		die(holder.unlock(ctx))
		lat = append(lat, (<-granted).Sub(t))
		holder, waiter = waiter, holder
	}
	s := summarize(lat, start, false)
	die(holder.unlock(ctx))
	return s
}

func die(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers-go:", err)
		os.Exit(1)
	}
}

func main() {
	peer := flag.String("peer", "redsync", "redsync | etcd")
	endpoints := flag.String("endpoints", "127.0.0.1:6379", "comma-separated host:port")
	n := flag.Int("n", 10000, "most cycles per scenario")
	d := flag.Duration("d", 3*time.Second, "longest time per scenario")
	most := flag.Int("handoff-max", 100, "most hand-offs (the peers poll: each costs up to a retry delay)")
	flag.Parse()
	eps := strings.Split(*endpoints, ",")
	var mk factory
	var closeAll func()
	switch *peer {
	case "redsync":
		mk, closeAll = redsyncFactory(eps)
	case "etcd":
		mk, closeAll = etcdFactory(eps)
	default:
		die(fmt.Errorf("unknown peer %q", *peer))
	}
	defer closeAll()
	ctx := context.Background()
	out := map[string]stats{
		"one":     uncontended(ctx, mk, 1, *n, *d),
		"many":    uncontended(ctx, mk, 64, *n, *d),
		"handoff": handoff(ctx, mk, *n, *most, *d),
	}
	die(json.NewEncoder(os.Stdout).Encode(map[string]any{"scenarios": out}))
}
