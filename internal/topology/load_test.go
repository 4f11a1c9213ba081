package topology

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadKafkaKitProductionMap(t *testing.T) {
	f, err := os.Open("../../testdata/layouts/kafkakit-optimize-input.json")
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only file
	c, err := Load(f, "kafkakit-optimize-input.json")
	require.NoError(t, err)
	assert.Len(t, c.Partitions, 256)
	assert.Len(t, c.Brokers, 23)
	assert.Equal(t, int32(1737), c.Brokers[0].ID)
	assert.Equal(t, int32(1962), c.Brokers[len(c.Brokers)-1].ID)
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, p := range c.Partitions {
		require.Len(t, p.Replicas, 2)
		assert.Equal(t, p.Replicas[0], p.Leader, "no leader field: the first replica leads")
		leaders[p.Leader]++
		for _, r := range p.Replicas {
			replicas[r]++
		}
	}
	// The map's skew as its README states it: 6-45 replicas and 2-26 leaders per broker.
	minMax := func(m map[int32]int) (int, int) {
		lo, hi := 1<<30, 0
		for _, v := range m {
			lo, hi = min(lo, v), max(hi, v)
		}
		return lo, hi
	}
	lo, hi := minMax(replicas)
	assert.Equal(t, [2]int{6, 45}, [2]int{lo, hi})
	lo, hi = minMax(leaders)
	assert.Equal(t, [2]int{2, 26}, [2]int{lo, hi})
}

func TestLoadJSONLeaderAndISR(t *testing.T) {
	c, err := Load(strings.NewReader(`{"version":1,"partitions":[
 {"topic":"b","partition":0,"replicas":[3,1],"leader":1,"isr":[1]},
 {"topic":"a","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},
 {"topic":"a","partition":0,"replicas":[1,2],"leader":-1,"isr":[]}]}`), "x.json")
	require.NoError(t, err)
	require.Len(t, c.Partitions, 3)
	assert.Equal(t, Key{"a", 0}, c.Partitions[0].Key())
	assert.Equal(t, NoLeader, c.Partitions[0].Leader)
	assert.Equal(t, []int32{}, c.Partitions[0].ISR)
	assert.Nil(t, c.Partitions[1].ISR, "absent isr means unknown")
	assert.Equal(t, int32(1), c.Partitions[2].Leader)
	assert.False(t, c.Partitions[2].InSync(3))
}

// TestLoadJSONSizeBytes: kplan observe's snapshots give each partition's
// size; a partition without one is unknown (-1), and keys the layout
// reader does not know (the snapshot's "observe") are skipped.
func TestLoadJSONSizeBytes(t *testing.T) {
	c, err := Load(strings.NewReader(`{"version":1,"observe_schema":1,"partitions":[
 {"topic":"a","partition":0,"replicas":[1],"size_bytes":0},
 {"topic":"a","partition":1,"replicas":[2],"size_bytes":123456789012},
 {"topic":"a","partition":2,"replicas":[2]}],"observe":{"traffic":true,"topics":[{"topic":"a"}]}}`), "x.json")
	require.NoError(t, err)
	require.Len(t, c.Partitions, 3)
	assert.Equal(t, []int64{0, 123456789012, -1}, []int64{c.Partitions[0].SizeBytes, c.Partitions[1].SizeBytes, c.Partitions[2].SizeBytes})
}

func TestLoadJSONErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"malformed", "{\"version\":1,\n\"partitions\":[{\"topic\":\"a\",}]}", "x.json:2:"},
		{"truncated", `{"version":1,"partitions":[`, "unexpected end"},
		{"not object", `[1]`, "unknown format"},
		{"version", `{"version":2,"partitions":[]}`, "x.json:1:13: version: unsupported version 2"},
		{"missing partitions", `{"version":1}`, "partitions: missing"},
		{"duplicate", "{\"partitions\":[\n{\"topic\":\"a\",\"partition\":0,\"replicas\":[1]},\n{\"topic\":\"a\",\"partition\":0,\"replicas\":[2]}]}", "x.json:3:1: partition: duplicate topic-partition a-0"},
		{"empty replicas", "{\"partitions\":[\n  {\"topic\":\"a\",\"partition\":0,\"replicas\":[]}]}", "x.json:2:3: replicas: a-0 has no replicas"},
		{"dup replicas", `{"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}`, "replicas: a-0 names broker 1 twice"},
		{"negative id", `{"partitions":[{"topic":"a","partition":0,"replicas":[1,-2]}]}`, "replicas: broker id -2 is out of range"},
		{"negative partition", `{"partitions":[{"topic":"a","partition":-1,"replicas":[1]}]}`, "partition: -1 is out of range"},
		{"leader outside", `{"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"leader":3}]}`, "leader: a-0: leader 3 is not among replicas [1 2]"},
		{"isr outside", `{"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"isr":[4]}]}`, "isr: a-0: in-sync replica 4"},
		{"no topic", `{"partitions":[{"partition":0,"replicas":[1]}]}`, "topic: missing or empty"},
		{"wrong type", `{"partitions":[{"topic":"a","partition":"0","replicas":[1]}]}`, "want int64, got JSON string"},
		{"log dirs", `{"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, "log_dirs: a-0: 1 log dirs for 2 replicas"},
		{"empty", "  \n", "x.json:1: empty input"},
		{"negative size", `{"partitions":[{"topic":"a","partition":0,"replicas":[1],"size_bytes":-5}]}`, "size_bytes: a-0: -5 is negative"},
		{"size not a number", `{"partitions":[{"topic":"a","partition":0,"replicas":[1],"size_bytes":"5"}]}`, "want int64, got JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.body), "x.json")
			require.Error(t, err)
			var le *LoadError
			require.True(t, errors.As(err, &le), "%T %v", err, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

const describe2x = `Topic:orders	PartitionCount:3	ReplicationFactor:2	Configs:
	Topic: orders	Partition: 0	Leader: 1	Replicas: 1,2	Isr: 1,2
	Topic: orders	Partition: 1	Leader: 2	Replicas: 2,3	Isr: 2
	Topic: orders	Partition: 2	Leader: -1	Replicas: 3,1	Isr:
`

const describe4x = `Topic: pay	TopicId: 5qS2Vb4qQ9uJqf3pUxW5Zg	PartitionCount: 2	ReplicationFactor: 3	Configs: min.insync.replicas=2
	Topic: pay	Partition: 0	Leader: 3	Replicas: 3,1,2	Isr: 3,1,2	Elr: 	LastKnownElr: 
	Topic: pay	Partition: 1	Leader: none	Replicas: 1,2,3	Isr: 	Elr: 	LastKnownElr: 	Offline: 1,2,3
`

func TestLoadDescribe(t *testing.T) {
	c, err := Load(strings.NewReader(describe2x), "d.txt")
	require.NoError(t, err)
	require.Len(t, c.Partitions, 3)
	assert.True(t, c.Live)
	assert.Equal(t, []int32{2}, c.Partitions[1].ISR)
	assert.Equal(t, NoLeader, c.Partitions[2].Leader)
	assert.Equal(t, []int32{}, c.Partitions[2].ISR)

	c, err = Load(strings.NewReader(describe4x), "d.txt")
	require.NoError(t, err)
	require.Len(t, c.Partitions, 2)
	assert.Equal(t, []int32{3, 1, 2}, c.Partitions[0].Replicas)
	assert.Equal(t, NoLeader, c.Partitions[1].Leader)
	assert.Equal(t, []int32{1, 2, 3}, c.Partitions[1].Offline)
	assert.Len(t, c.Brokers, 3)

	// Spaces instead of tabs (a copy from a terminal).
	c, err = Load(strings.NewReader("Topic: x  Partition: 0  Leader: 2  Replicas: 2,1  Isr: 2,1\n"), "d.txt")
	require.NoError(t, err)
	assert.Equal(t, int32(2), c.Partitions[0].Leader)
}

func TestLoadDescribeErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{"Topic: a\tPartition: x\tLeader: 1\tReplicas: 1\tIsr: 1\n", "d.txt:1: Partition: \"x\" is not a partition number"},
		{"\n\tTopic: a\tPartition: 0\tLeader: 9\tReplicas: 1,2\tIsr: 1\n", "d.txt:2: Leader: \"9\" is not one of the replicas [1 2]"},
		{"Topic: a\tPartition: 0\tLeader: 1\tReplicas: 1,1\tIsr: 1\n", "Replicas: broker 1 named twice"},
		{"Topic: a\tPartition: 0\tLeader: 1\tReplicas: \tIsr: 1\n", "Replicas: \"\" is not a list"},
		{"Topic: a\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\nTopic: a\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "d.txt:2: Partition: duplicate topic-partition a-0"},
		{"Topic: a\tPartitionCount: 1\n", "no partition lines"},
		// A truncated copy: fewer partition lines than PartitionCount.
		{describe4x + "Topic: b\tTopicId: x\tPartitionCount: 3\tReplicationFactor: 1\tConfigs:\n\tTopic: b\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n",
			"d.txt:4: PartitionCount: topic b has 3 partitions but 1 partition line follow"},
		{strings.Replace(describe2x, "PartitionCount:3", "PartitionCount:2", 1), "d.txt:1: PartitionCount: topic orders has 2 partitions but 3 partition lines follow"},
		{"Topic: a\tPartitionCount: x\n", "d.txt:1: PartitionCount: \"x\" is not a partition count"},
	}
	for _, tt := range tests {
		_, err := Load(strings.NewReader(tt.body), "d.txt")
		require.Error(t, err, tt.body)
		assert.Contains(t, err.Error(), tt.want)
	}
}

func FuzzLoadJSON(f *testing.F) {
	f.Add(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2]}]}`)
	f.Add(`{"version":1,"partitions":[{"topic":"b","partition":0,"replicas":[3,1],"leader":1,"isr":[1]}]}`)
	f.Add(`{"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}`)
	f.Add(`{"version":1,"partitions":[`)
	f.Add(`{"version":1,"live":true,"brokers":[{"id":1,"rack":"a"},{"id":2}],"partitions":[{"topic":"t","partition":0,"replicas":[2,1],"leader":2,"isr":[2],"offline_replicas":[1]}]}`)
	for _, name := range []string{"thesis-fig3.3.json", "thesis-fig3.7.json", "thesis-6.4.json", "demo-cells.json"} {
		if b, err := os.ReadFile("../../testdata/layouts/" + name); err == nil {
			f.Add(string(b))
		}
	}
	if b, err := os.ReadFile("../../testdata/layouts/kafkakit-optimize-input.json"); err == nil {
		f.Add(string(b[:2000]))
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkLoaded(t, body)
		checkFastEqualsSlow(t, []byte(body))
	})
}

// checkFastEqualsSlow: the reflection-free reader either gives up or builds
// exactly what the encoding/json reader builds, and never accepts what it
// refuses.
func checkFastEqualsSlow(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := loadJSONFast(data)
	if !ok {
		return
	}
	slow, err := loadJSONSlow(data, "f")
	if err != nil {
		t.Fatalf("the fast reader accepted what the slow one refuses: %v", err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast and slow readers differ:\n%+v\n%+v", fast, slow)
	}
}

// TestLoadJSONFastEqualsSlow: on generated layouts written every way kplan
// writes them (with racks, live state, short ISRs, offline replicas, log
// dirs), the fast reader takes them all and equals the slow one; inputs it
// does not know go to the slow one, faults keep their line and column.
func TestLoadJSONFastEqualsSlow(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		c, err := Generate(GenOptions{Brokers: 3 + rng.IntN(6), Topics: 1 + rng.IntN(5), Partitions: 10 + rng.IntN(40), ReplicationFactor: 1 + rng.IntN(3), Racks: rng.IntN(3)}, rng)
		require.NoError(t, err)
		c.Live = seed%2 == 0
		for i := range c.Partitions {
			p := &c.Partitions[i]
			switch rng.IntN(4) {
			case 0:
				p.ISR = p.Replicas[:1]
			case 1:
				p.Leader = NoLeader
				p.Offline = p.Replicas[len(p.Replicas)-1:]
			case 2:
				p.LogDirs = make([]string, len(p.Replicas))
				for k := range p.LogDirs {
					p.LogDirs[k] = "any"
				}
			}
		}
		for _, write := range []func(*bytes.Buffer, *Cluster) error{
			func(b *bytes.Buffer, c *Cluster) error { return WriteLayout(b, c) },
			func(b *bytes.Buffer, c *Cluster) error { return WriteSnapshot(b, c) },
		} {
			var b bytes.Buffer
			require.NoError(t, write(&b, c))
			_, ok := loadJSONFast(b.Bytes())
			assert.True(t, ok, "seed %d: kplan's own output takes the fast reader", seed)
			checkFastEqualsSlow(t, b.Bytes())
		}
	}
	for _, body := range []string{
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"extra":1}]}`,
		`{"version":1,"brokers":[{"id":1,"rack":"r\u0031"}],"partitions":[{"topic":"a","partition":0,"replicas":[1]}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"leader":null}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`,
	} {
		_, ok := loadJSONFast([]byte(body))
		assert.False(t, ok, body)
		c, err := LoadJSON([]byte(body), "x.json")
		require.NoError(t, err, body)
		assert.NotEmpty(t, c.Partitions)
	}
	_, err := LoadJSON([]byte("{\"version\":1,\"partitions\":[\n {\"topic\":\"a\",\"partition\":0,\"replicas\":[1,1]}]}"), "bad.json")
	assert.EqualError(t, err, "bad.json:2:2: replicas: a-0 names broker 1 twice")
}

func FuzzLoadDescribe(f *testing.F) {
	f.Add(describe2x)
	f.Add(describe4x)
	f.Add("Topic: x  Partition: 0  Leader: 2  Replicas: 2,1  Isr: 2,1\n")
	f.Fuzz(func(t *testing.T, body string) {
		checkLoaded(t, body)
	})
}

// checkLoaded asserts what any successful load guarantees.
func checkLoaded(t *testing.T, body string) {
	c, err := Load(strings.NewReader(body), "f")
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error: %q", err)
		}
		return
	}
	seen := map[Key]bool{}
	for _, p := range c.Partitions {
		if seen[p.Key()] || len(p.Replicas) == 0 || p.Topic == "" || p.Partition < 0 {
			t.Fatalf("invalid partition accepted: %+v", p)
		}
		seen[p.Key()] = true
		if p.Leader != NoLeader {
			if _, ok := c.Broker(p.Leader); !ok {
				t.Fatalf("leader %d is not a broker", p.Leader)
			}
		}
	}
}

func TestLoadJSONDuplicatesSortedOrNot(t *testing.T) {
	for _, body := range []string{
		// sorted until the duplicate
		`{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":1,"replicas":[1]},{"topic":"a","partition":1,"replicas":[2]}]}`,
		// unsorted, the duplicate far from its twin
		`{"partitions":[{"topic":"b","partition":0,"replicas":[1]},{"topic":"a","partition":1,"replicas":[1]},{"topic":"c","partition":0,"replicas":[1]},{"topic":"b","partition":0,"replicas":[2]}]}`,
	} {
		_, err := Load(strings.NewReader(body), "d.json")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "duplicate topic-partition")
	}
	c, err := Load(strings.NewReader(`{"partitions":[{"topic":"b","partition":0,"replicas":[1]},{"topic":"a","partition":1,"replicas":[1]},{"topic":"a","partition":0,"replicas":[1]}]}`), "d.json")
	require.NoError(t, err)
	assert.Len(t, c.Partitions, 3)
}

func TestSnapshotRoundTrip(t *testing.T) {
	c, err := Load(strings.NewReader(describe4x+describe2x), "d.txt")
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, WriteSnapshot(&b, c))
	back, err := Load(strings.NewReader(b.String()), "snap.json")
	require.NoError(t, err)
	assert.Equal(t, c.Partitions, back.Partitions)
	assert.True(t, back.Live, "describe output is live state, and the snapshot says so")
	assert.Contains(t, b.String(), `"leader":-1,"isr":[],"offline_replicas":[1,2,3]`)
}

// TestNormalizeMarksMissing: brokers named only by replicas are missing
// when the input listed brokers of its own (a live cluster's metadata), and
// a saved snapshot leaves them out so reading it back marks them again.
func TestNormalizeMarksMissing(t *testing.T) {
	c := &Cluster{Live: true, Brokers: []Broker{{ID: 2, Rack: "b"}, {ID: 1, Rack: "a"}}, Partitions: []Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2}},
	}}
	c.Normalize()
	want := []Broker{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 3, Missing: true}}
	require.Equal(t, want, c.Brokers)
	require.Equal(t, 2, c.LiveBrokers())
	var b bytes.Buffer
	require.NoError(t, WriteSnapshot(&b, c))
	assert.NotContains(t, b.String(), `"id":3`)
	back, err := Load(&b, "snap.json")
	require.NoError(t, err)
	assert.Equal(t, want, back.Brokers)

	// Without a broker list every broker comes from the replicas: none is
	// missing.
	c = &Cluster{Partitions: []Partition{{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Leader: 1}}}
	c.Normalize()
	assert.Equal(t, 3, c.LiveBrokers())
}

// Found by FuzzLoad (testdata/fuzz/FuzzLoad/d161f0fe1c73075d): a topic
// name with a byte that is not UTF-8 loaded from describe text, and its
// snapshot came back with U+FFFD in its place. Names Kafka would refuse
// are refused at load, in both formats, naming the file and line.
func TestLoadRejectsTopicsKafkaCannotHold(t *testing.T) {
	long := strings.Repeat("t", 250)
	tests := []struct {
		name, body, want string
	}{
		{"describe, not UTF-8", "Topic:\xf7\tPartition:0\tLeader:3\tReplicas:3\n", "in.txt:1: Topic"},
		{"describe, space", "Topic: a b\tPartition: 0\tLeader: 1\tReplicas: 1\n", "in.txt:1: Topic"},
		{"describe, too long", "Topic: " + long + "\tPartition: 0\tLeader: 1\tReplicas: 1\n", "250 characters"},
		{"json, dot dot", `{"version":1,"partitions":[{"topic":"..","partition":0,"replicas":[1]}]}`, `".." is not a legal topic name`},
		{"json, slash", "{\"version\":1,\"partitions\":[\n{\"topic\":\"a/b\",\"partition\":0,\"replicas\":[1]}]}", "in.txt:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.body), "in.txt")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
			var le *LoadError
			require.ErrorAs(t, err, &le)
		})
	}
	for _, ok := range []string{"a", "A.b_c-9", "__consumer_offsets", strings.Repeat("x", 249)} {
		_, err := Load(strings.NewReader("Topic: "+ok+"\tPartition: 0\tLeader: 1\tReplicas: 1\n"), "in.txt")
		assert.NoError(t, err, ok)
	}
}

// TestReadAll: a file, a reader that knows its length and one that does not
// all read whole, the first two into one buffer of their size.
func TestReadAll(t *testing.T) {
	body := strings.Repeat(`{"version":1}`, 1000)
	path := t.TempDir() + "/l.json"
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read-only
	for _, r := range []io.Reader{f, strings.NewReader(body), io.MultiReader(strings.NewReader(body[:7]), strings.NewReader(body[7:]))} {
		got, err := readAll(r)
		require.NoError(t, err)
		assert.Equal(t, body, string(got))
	}
}
