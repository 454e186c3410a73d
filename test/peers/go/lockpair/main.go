// lockpair takes one etcd lock, then another, with the real go.etcd.io/etcd/clientv3/concurrency.Mutex of one
// Session (one lease): it is the Go service of issue 22 that holds /locks/a while it waits in /locks/b's queue.
//
//	lockpair ENDPOINT TTL FIRST SECOND
//
// It says, one line each on stdout: `holding FIRST <lease hex>` once it holds FIRST; then, after a line on stdin,
// `waiting SECOND <lease hex>` and `holding SECOND <lease hex>` once it holds that too. It unlocks both and exits when
// stdin closes (or at the second line), so a test ends it by closing stdin or killing it.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: lockpair ENDPOINT TTL FIRST SECOND")
		os.Exit(2)
	}
	endpoint, first, second := os.Args[1], os.Args[3], os.Args[4]
	ttl, err := strconv.Atoi(os.Args[2])
	check(err)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	check(err)
	defer client.Close()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(ttl))
	check(err)
	defer session.Close()
	lease := strconv.FormatInt(int64(session.Lease()), 16)
	ctx := context.Background()

	a := concurrency.NewMutex(session, first)
	check(a.Lock(ctx))
	fmt.Println("holding", first, lease)

	stdin := bufio.NewScanner(os.Stdin)
	if !stdin.Scan() {
		check(a.Unlock(ctx))
		return
	}
	b := concurrency.NewMutex(session, second)
	fmt.Println("waiting", second, lease)
	check(b.Lock(ctx))
	fmt.Println("holding", second, lease)
	stdin.Scan()
	check(b.Unlock(ctx))
	check(a.Unlock(ctx))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockpair:", err)
		os.Exit(1)
	}
}
