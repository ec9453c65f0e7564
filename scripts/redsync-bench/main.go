// Acquire+release latency of redsync (Redlock in Go) over the nodes given, one
// goroutine, for comparison with `baton bench --url redlock://…` (BENCHMARKS.md).
//
//	go run . -n 10000 -d 3s 127.0.0.1:7001 127.0.0.1:7002 …
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

func main() {
	n := flag.Int("n", 10000, "most acquire+release pairs")
	d := flag.Duration("d", 3*time.Second, "longest run")
	flag.Parse()
	var pools []redis.Pool
	for _, addr := range flag.Args() {
		pools = append(pools, goredis.NewPool(goredislib.NewClient(&goredislib.Options{Addr: addr})))
	}
	rs := redsync.New(pools...)
	mutex := rs.NewMutex(fmt.Sprintf("bench/redsync-%d", time.Now().UnixNano()), redsync.WithExpiry(30*time.Second))
	ctx := context.Background()
	// Warm-up: connections outside the timing.
	if err := mutex.LockContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mutex.UnlockContext(ctx)
	var lat []time.Duration
	start := time.Now()
	for len(lat) < *n && time.Since(start) < *d {
		t := time.Now()
		if err := mutex.LockContext(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := mutex.UnlockContext(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("redsync over %d nodes: %d acquire+release, %.0f ops/s, p50 %v, p99 %v, max %v\n",
		len(pools), len(lat), float64(len(lat))/elapsed.Seconds(), q(0.5), q(0.99), lat[len(lat)-1])
}
