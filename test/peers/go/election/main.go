// election campaigns in an etcd election with the real go.etcd.io/etcd/clientv3/concurrency.Election, on a Session
// (one lease) of its own: a candidate of the Go services that elect a leader.
//
//	election ENDPOINT TTL NAME VALUE
//
// It says, one line each on stdout: `campaigning <lease hex>` as it starts, `leader <lease hex>` once Campaign
// returns (it leads), and `lost <lease hex>` if its session ends under it (its lease revoked or expired). A line on
// stdin makes the leader resign (`resigned <lease hex>`); it exits when stdin closes.
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
		fmt.Fprintln(os.Stderr, "usage: election ENDPOINT TTL NAME VALUE")
		os.Exit(2)
	}
	endpoint, name, value := os.Args[1], os.Args[3], os.Args[4]
	ttl, err := strconv.Atoi(os.Args[2])
	check(err)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	check(err)
	defer client.Close()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(ttl))
	check(err)
	defer session.Close()
	lease := strconv.FormatInt(int64(session.Lease()), 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	go func() {
		<-session.Done()
		fmt.Println("lost", lease)
		cancel()
	}()

	election := concurrency.NewElection(session, name)
	fmt.Println("campaigning", lease)
	if err := election.Campaign(ctx, value); err != nil {
		// Its session ended while it waited: `lost` says so.
		bufio.NewScanner(os.Stdin).Scan()
		return
	}
	fmt.Println("leader", lease)

	stdin := bufio.NewScanner(os.Stdin)
	if stdin.Scan() {
		check(election.Resign(context.Background()))
		fmt.Println("resigned", lease)
		stdin.Scan()
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "election:", err)
		os.Exit(1)
	}
}
