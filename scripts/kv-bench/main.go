// kv-bench: writes per second and write latency of a three-node key-value service, the
// same load for etcd (its Go client, clientv3) and for strata-kv (its framed-JSON
// protocol, `strata_openraft::service`): N clients, each with its own connection to the
// leader and one 100-byte put in flight, for a fixed time. Each strata-kv write carries a
// session (a random client id and a sequence number), as `service::Client`'s do.
//
//	kv-bench -system etcd -endpoints 127.0.0.1:2379,... -clients 64 -seconds 10
//	kv-bench -system strata -endpoints 127.0.0.1:7001,... -clients 64 -seconds 10
//
// It prints one line: system, clients, writes/s, p50 and p99 latency in microseconds.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type putter interface {
	put(key, value string) error
	close()
}

// --- etcd ---

type etcdClient struct{ c *clientv3.Client }

func (e *etcdClient) put(key, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := e.c.Put(ctx, key, value)
	return err
}

func (e *etcdClient) close() { e.c.Close() }

// etcdLeader is the client endpoint of the member that leads.
func etcdLeader(endpoints []string) (string, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return "", err
	}
	defer c.Close()
	for _, ep := range endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return ep, nil
		}
	}
	return "", errors.New("no etcd member says it leads")
}

// --- strata-kv ---

type strataClient struct {
	conn net.Conn
	r    *bufio.Reader
	id   uint64
	seq  uint64
}

type session struct {
	Client uint64 `json:"client"`
	Seq    uint64 `json:"seq"`
}

type set struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type write struct {
	Session session        `json:"session"`
	Request map[string]set `json:"request"`
}

func frame(conn net.Conn, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = conn.Write(buf)
	return err
}

func unframe(r *bufio.Reader) (map[string]json.RawMessage, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	var answer map[string]json.RawMessage
	err := json.Unmarshal(body, &answer)
	return answer, err
}

func (s *strataClient) put(key, value string) error {
	s.seq++
	w := write{Session: session{s.id, s.seq}, Request: map[string]set{"Set": {key, value}}}
	if err := frame(s.conn, map[string]write{"Write": w}); err != nil {
		return err
	}
	answer, err := unframe(s.r)
	if err != nil {
		return err
	}
	var outcome map[string]json.RawMessage
	if err := json.Unmarshal(answer["Write"], &outcome); err != nil {
		return err
	}
	if _, ok := outcome["Ok"]; !ok {
		return fmt.Errorf("write refused: %s", outcome["Err"])
	}
	return nil
}

func (s *strataClient) close() { s.conn.Close() }

func dialStrata(addr string) (*strataClient, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	conn.(*net.TCPConn).SetNoDelay(true)
	return &strataClient{conn: conn, r: bufio.NewReader(conn), id: rand.Uint64()}, nil
}

// strataLeader asks each node its status until one names itself leader.
func strataLeader(endpoints []string) (string, error) {
	for _, ep := range endpoints {
		c, err := dialStrata(ep)
		if err != nil {
			continue
		}
		if frame(c.conn, "Status") == nil {
			if answer, err := unframe(c.r); err == nil {
				var st struct {
					Leader *uint64 `json:"leader"`
				}
				if json.Unmarshal(answer["Status"], &st) == nil && st.Leader != nil {
					c.close()
					// The nodes are numbered 1.. in the order of -endpoints.
					if int(*st.Leader) >= 1 && int(*st.Leader) <= len(endpoints) {
						return endpoints[*st.Leader-1], nil
					}
				}
			}
		}
		c.close()
	}
	return "", errors.New("no strata-kv node knows a leader")
}

func main() {
	system := flag.String("system", "strata", "etcd or strata")
	endpoints := flag.String("endpoints", "", "comma-separated client addresses (node 1 first)")
	clients := flag.Int("clients", 16, "clients, each with one put in flight")
	seconds := flag.Float64("seconds", 10, "how long to write")
	keys := flag.Int("keys", 10000, "distinct keys")
	flag.Parse()
	eps := strings.Split(*endpoints, ",")

	var leader string
	var err error
	for try := 0; try < 100; try++ {
		if *system == "etcd" {
			leader, err = etcdLeader(eps)
		} else {
			leader, err = strataLeader(eps)
		}
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kv-bench:", err)
		os.Exit(1)
	}

	conns := make([]putter, *clients)
	for i := range conns {
		if *system == "etcd" {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{leader}, DialTimeout: 5 * time.Second})
			if err != nil {
				fmt.Fprintln(os.Stderr, "kv-bench:", err)
				os.Exit(1)
			}
			conns[i] = &etcdClient{c}
		} else {
			c, err := dialStrata(leader)
			if err != nil {
				fmt.Fprintln(os.Stderr, "kv-bench:", err)
				os.Exit(1)
			}
			conns[i] = c
		}
	}
	value := strings.Repeat("x", 100)
	// Warm-up: one put each.
	for i, c := range conns {
		if err := c.put(fmt.Sprintf("warm%d", i), value); err != nil {
			fmt.Fprintln(os.Stderr, "kv-bench: warm-up:", err)
			os.Exit(1)
		}
	}

	var wg sync.WaitGroup
	lat := make([][]time.Duration, *clients)
	failures := make([]int, *clients)
	start := time.Now()
	until := start.Add(time.Duration(*seconds * float64(time.Second)))
	for i, c := range conns {
		wg.Add(1)
		go func(i int, c putter) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(until) {
				key := fmt.Sprintf("key%08d", rng.IntN(*keys))
				t := time.Now()
				if err := c.put(key, value); err != nil {
					failures[i]++
					continue
				}
				lat[i] = append(lat[i], time.Since(t))
			}
		}(i, c)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	for _, c := range conns {
		c.close()
	}
	var all []time.Duration
	failed := 0
	for i := range lat {
		all = append(all, lat[i]...)
		failed += failures[i]
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	at := func(q float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(float64(len(all)) * q)
		if i >= len(all) {
			i = len(all) - 1
		}
		return float64(all[i].Microseconds())
	}
	fmt.Printf("%s\t%d\t%.0f\t%.0f\t%.0f\t%d\n", *system, *clients, float64(len(all))/elapsed, at(0.5), at(0.99), failed)
}
