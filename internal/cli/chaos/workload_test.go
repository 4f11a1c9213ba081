package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/chaos"
	"github.com/kplan-dev/kplan/internal/chaos/embedded"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/workload"
)

// thesis64 is the thesis's §6.4 cluster with replication factor 2: topic A
// led 1,2,2 and topic B led 2,3.
const thesis64 = "testdata/thesis-6-4.json"

var (
	assignA = [][]int32{{1, 2}, {2, 3}, {2, 1}}
	assignB = [][]int32{{2, 1}, {3, 1}}
	zipf    = workload.Keys{Kind: workload.KeysZipf, S: 1.1, N: 1000}
)

// writeFile writes body to name under dir and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestWorkloadOptions(t *testing.T) {
	dir := t.TempDir()
	ratesFile := writeFile(t, dir, "rates.txt", "# per topic\nA=3\nB 1\n")
	led := writeFile(t, dir, "led.json", `{"version":1,"partitions":[
  {"topic":"A","partition":0,"replicas":[1,2],"leader":2},
  {"topic":"A","partition":1,"replicas":[2,3],"leader":3}
]}`)
	for _, tc := range []struct {
		name    string
		argv    []string
		want    []chaos.WorkloadTopic
		brokers int
	}{
		{"weights share --rate", []string{"--layout", thesis64, "--rates", "A=2,B=1", "--rate", "300kB/s"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 200_000}, {Name: "B", Assignment: assignB, Rate: 100_000}}, 3},
		{"no rates: every topic weighs 1", []string{"--layout", thesis64},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 50_000}, {Name: "B", Assignment: assignB, Rate: 50_000}}, 3},
		{"no rates, unlimited", []string{"--layout", thesis64, "--rate", "unlimited"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA}, {Name: "B", Assignment: assignB}}, 3},
		{"bytes per second as they are", []string{"--layout", thesis64, "--rates", "A=2MB/s,B=1MB/s"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 2_000_000}, {Name: "B", Assignment: assignB, Rate: 1_000_000}}, 3},
		{"a topic not named is not written", []string{"--layout", thesis64, "--rates", "B=1MB/s"},
			[]chaos.WorkloadTopic{{Name: "B", Assignment: assignB, Rate: 1_000_000}}, 3},
		{"* for the others", []string{"--layout", thesis64, "--rates", "A=3,*=1", "--rate", "400kB/s"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 300_000}, {Name: "B", Assignment: assignB, Rate: 100_000}}, 3},
		{"rates file", []string{"--layout", thesis64, "--rates-file", ratesFile, "--rate", "400kB/s"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 300_000}, {Name: "B", Assignment: assignB, Rate: 100_000}}, 3},
		{"one key spec for every topic", []string{"--layout", thesis64, "--keys", "zipf:1.1:1000"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 50_000, Keys: zipf}, {Name: "B", Assignment: assignB, Rate: 50_000, Keys: zipf}}, 3},
		{"keys per topic", []string{"--layout", thesis64, "--keys", "A=zipf:1.1:1000,B=none"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 50_000, Keys: zipf}, {Name: "B", Assignment: assignB, Rate: 50_000}}, 3},
		{"keys default with *", []string{"--layout", thesis64, "--keys", "B=none,*=uniform:10"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 50_000, Keys: workload.Keys{Kind: workload.KeysUniform, N: 10}}, {Name: "B", Assignment: assignB, Rate: 50_000}}, 3},
		{"--brokers above the layout's ids", []string{"--layout", thesis64, "--brokers", "5"},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 50_000}, {Name: "B", Assignment: assignB, Rate: 50_000}}, 5},
		{"the layout's leader goes first", []string{"--layout", led},
			[]chaos.WorkloadTopic{{Name: "A", Assignment: [][]int32{{2, 1}, {3, 2}}, Rate: 100_000}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, append([]string{"--kill", "busiest"}, tc.argv...)...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.Config.Workload)
			assert.Nil(t, o.Config.Assignment, "a workload's topics carry their own assignments")
			assert.False(t, o.Config.Existing)
			assert.Equal(t, tc.brokers, o.Brokers, "the embedded cluster's size")
			assert.Equal(t, chaos.TotalRate(tc.want), o.Config.Rate, "the result reports the workload's total rate")
		})
	}
}

func TestWorkloadExistingOptions(t *testing.T) {
	o, err := parse(t, "--kill", "busiest", "--cluster", "lab", "--topics", "^orders-", "--sequential", "--rates", "orders-1=2,orders-2=1", "--keys", "zipf:1.1:1000")
	require.NoError(t, err)
	assert.True(t, o.Config.Existing)
	assert.True(t, o.Config.Sequential)
	assert.Nil(t, o.Config.Workload, "listed on the cluster at run time")
	assert.Nil(t, o.Config.Assignment)
	require.NotNil(t, o.Workload)
	assert.Equal(t, "^orders-", o.Workload.Topics.String())
	assert.Equal(t, map[string]float64{"orders-1": 2, "orders-2": 1}, o.Workload.Rates.ByTopic)
	assert.Equal(t, zipf, o.Workload.Keys.Default)

	o, err = parse(t, "--kill", "none", "--bootstrap-server", "k:9092", "--topics", ".", "--sequential")
	require.NoError(t, err)
	assert.Equal(t, "remote", o.Cluster)
	assert.True(t, o.Config.Existing)
}

// The embedded cluster's topics stand in for a lab's: --topics lists them
// through internal/kafka and the workload gets their names, no
// assignment (the engine reads it), and the rates and keys given.
func TestExistingWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster")
	}
	ctx := context.Background()
	c, err := embedded.NewCluster(3, "test")
	require.NoError(t, err)
	defer c.Close()
	for _, name := range []string{"orders-1", "orders-2", "payments"} {
		require.NoError(t, c.CreateTopic(ctx, name, [][]int32{{1, 2}, {2, 3}}))
	}
	o, err := parse(t, "--kill", "busiest", "--cluster", "lab", "--topics", "^orders-", "--sequential", "--rates", "orders-1=3,orders-2=1", "--rate", "400kB/s", "--keys", "orders-2=uniform:5")
	require.NoError(t, err)
	w, err := existingWorkload(ctx, c, o.Config, o.Workload)
	require.NoError(t, err)
	assert.Equal(t, []chaos.WorkloadTopic{{Name: "orders-1", Rate: 300_000}, {Name: "orders-2", Rate: 100_000, Keys: workload.Keys{Kind: workload.KeysUniform, N: 5}}}, w)

	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--topics", "^nothing"}, `--topics: no topic of embedded matches "^nothing"`},
		{[]string{"--topics", "^orders-", "--rates", "payments=1"}, `--rates: topic "payments" is not among the topics matching --topics "^orders-"`},
		{[]string{"--topics", "^orders-", "--keys", "payments=none"}, `--keys: topic "payments" is not among the topics`},
	} {
		o, err := parse(t, append([]string{"--kill", "busiest", "--cluster", "lab", "--sequential"}, tc.argv...)...)
		require.NoError(t, err, tc.argv)
		_, err = existingWorkload(ctx, c, o.Config, o.Workload)
		require.Error(t, err, tc.argv)
		assert.ErrorContains(t, err, tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
	}
}

func TestWorkloadBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.json", "{\"version\":1,\n\"partitions\":[}")
	zero := writeFile(t, dir, "zero.json", `{"version":1,"partitions":[{"topic":"A","partition":0,"replicas":[0,1]}]}`)
	big := writeFile(t, dir, "big.json", `{"version":1,"partitions":[{"topic":"A","partition":0,"replicas":[101,1]}]}`)
	gap := writeFile(t, dir, "gap.json", `{"version":1,"partitions":[{"topic":"A","partition":0,"replicas":[1]},{"topic":"A","partition":2,"replicas":[2]}]}`)
	uneven := writeFile(t, dir, "uneven.json", `{"version":1,"partitions":[{"topic":"A","partition":0,"replicas":[1,2]},{"topic":"A","partition":1,"replicas":[2]}]}`)
	badRates := writeFile(t, dir, "rates.txt", "A=1\nB=fast\n")
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"--layout", filepath.Join(dir, "missing.json")}, "--layout: open "},
		{[]string{"--layout", bad}, "--layout: " + bad + ":2"},
		{[]string{"--layout", zero}, "--layout: " + zero + ": A/0 names broker 0 (the embedded cluster's brokers are numbered 1 to 100)"},
		{[]string{"--layout", big}, "--layout: " + big + ": A/0 names broker 101"},
		{[]string{"--layout", gap}, "--layout: " + gap + ": topic A: partition 1 is missing"},
		{[]string{"--layout", uneven}, "--layout: " + uneven + ": topic A: partition 1 has 1 replicas, partition 0 has 2"},
		{[]string{"--layout", thesis64, "--assignment", "1,2"}, "--layout and --assignment: give one"},
		{[]string{"--layout", thesis64, "--partitions", "4"}, "--layout and --partitions: give one"},
		{[]string{"--topics", "^a", "--replication-factor", "2"}, "--topics and --replication-factor: give one"},
		{[]string{"--layout", thesis64, "--topics", "^a"}, "--layout and --topics: give one"},
		{[]string{"--rates", "A=1"}, "--rates: needs a workload"},
		{[]string{"--keys", "none"}, "--keys: needs a workload"},
		{[]string{"--rates-file", badRates}, "--rates-file: needs a workload"},
		{[]string{"--layout", thesis64, "--rates", "C=1"}, `--rates: topic "C" is not in the layout ` + thesis64},
		{[]string{"--layout", thesis64, "--rates", "A=0,B=0"}, "--rates: no topic in the layout " + thesis64 + " has a positive rate"},
		{[]string{"--layout", thesis64, "--rates", "A=1", "--rate", "unlimited"}, "--rates: relative weights need --rate"},
		{[]string{"--layout", thesis64, "--rates", "A=1MB/s", "--rate", "1MB/s"}, "--rates and --rate: rates in bytes/s are each topic's own"},
		{[]string{"--layout", thesis64, "--rates", "A=1,B=2MB/s"}, "--rates: mix of rates with units and plain weights"},
		{[]string{"--layout", thesis64, "--rates", "A"}, `--rates: "A": want topic=rate`},
		{[]string{"--layout", thesis64, "--rates-file", filepath.Join(dir, "none.txt")}, "--rates-file: open "},
		{[]string{"--layout", thesis64, "--rates-file", badRates}, "--rates-file: " + badRates + ":2: B:"},
		{[]string{"--layout", thesis64, "--rates", "A=1", "--rates-file", badRates}, "--rates and --rates-file: give one"},
		{[]string{"--layout", thesis64, "--keys", "zipf:x:10"}, `--keys: keys "zipf:x:10": exponent`},
		{[]string{"--layout", thesis64, "--keys", "A=zipf:1:0"}, `--keys: A: keys "zipf:1:0": key count`},
		{[]string{"--layout", thesis64, "--keys", "A=none,A=none"}, "--keys: keys for A given twice"},
		{[]string{"--layout", thesis64, "--keys", "=none"}, `--keys: keys "=none": want TOPIC=SPEC`},
		{[]string{"--layout", thesis64, "--keys", "C=none"}, `--keys: topic "C" is not in the layout`},
		{[]string{"--layout", thesis64, "--brokers", "2"}, "--brokers: 2 brokers, but --layout names broker 3"},
		{[]string{"--topics", "^a", "--cluster", "lab"}, "--topics: needs --sequential"},
		{[]string{"--topics", "^a", "--sequential"}, "--topics: existing topics only on --cluster lab or a --bootstrap-server cluster"},
		{[]string{"--topics", "(", "--cluster", "lab", "--sequential"}, "--topics: error parsing regexp"},
		{[]string{"--workload", "a.yaml", "--file", "b.yaml"}, "--workload and --file: give one"},
		{[]string{"--workload-from", observedLab, "--layout", thesis64}, "--workload-from and --layout: give one"},
		{[]string{"--workload-from", observedLab, "--rates", "A=1MB/s"}, "--workload-from and --rates: give one"},
		{[]string{"--workload-from", filepath.Join(dir, "none.json")}, "--workload-from: open "},
		{[]string{"--workload-from", observedLab, "--scale", "-1"}, "--scale: want a positive factor, got -1"},
		{[]string{"--workload-from", observedLab, "--scale", "0"}, "--scale: want a positive factor, got 0"},
		{[]string{"--scale", "0.5"}, "--scale: needs rates in bytes/s to scale"},
		{[]string{"--layout", thesis64, "--rates", "A=1", "--rate", "1MB/s", "--scale", "2"}, "--scale: scales rates in bytes/s"},
		{[]string{"--workload", filepath.Join(dir, "missing.yaml")}, "--workload: open "},
		{[]string{"--file", filepath.Join(dir, "missing.yaml")}, "--file: open "},
	} {
		_, err := parse(t, append([]string{"--kill", "busiest"}, tc.argv...)...)
		require.Error(t, err, tc.argv)
		assert.ErrorContains(t, err, tc.want, tc.argv)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.argv)
	}
}

// TestWorkloadFile: an experiment file names its layout relative to itself
// and may give rates and keys as mappings; --workload and --file read it
// alike.
func TestWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	layout, err := os.ReadFile(thesis64)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "layouts"), 0o755))
	writeFile(t, dir, "layouts/t.json", string(layout))
	writeFile(t, dir, "rates.txt", "A=3\nB=1\n")
	path := writeFile(t, dir, "w.yaml", `kill: busiest
layout: layouts/t.json
rates:
  A: 2MB/s
  B: 1MB/s
keys:
  A: zipf:1.1:1000
  B: none
partitioner: [roundrobin, node]
`)
	want := []chaos.WorkloadTopic{{Name: "A", Assignment: assignA, Rate: 2_000_000, Keys: zipf}, {Name: "B", Assignment: assignB, Rate: 1_000_000}}
	for _, flag := range []string{"--workload", "--file"} {
		wd := t.TempDir() // the layout is found from the file, not the working directory
		t.Chdir(wd)
		o, err := parse(t, flag, path)
		require.NoError(t, err, flag)
		assert.Equal(t, want, o.Config.Workload, flag)
		assert.Equal(t, 3, o.Brokers, flag)
		assert.Equal(t, []string{"roundrobin", "node"}, o.Config.Partitioners)
	}
	// The command line overrides the file, mapping values included.
	o, err := parse(t, "--workload", path, "--rates", "A=1,B=1", "--rate", "200kB/s")
	require.NoError(t, err)
	assert.Equal(t, int64(100_000), o.Config.Workload[0].Rate)

	// A rates-file path is read from the file's directory too.
	path2 := writeFile(t, dir, "w2.yaml", "kill: none\nlayout: layouts/t.json\nrates-file: rates.txt\nrate: 400kB/s\n")
	o, err = parse(t, "--workload", path2)
	require.NoError(t, err)
	assert.Equal(t, int64(300_000), o.Config.Workload[0].Rate)

	for _, tc := range []struct{ body, want string }{
		{"kill: none\nlayout: layouts/t.json\nrates:\n  A: fast\n", "x.yaml:3: rates: A: "},
		{"kill: none\nlayout: layouts/t.json\nrates:\n  C: 1MB/s\n", `x.yaml:3: rates: topic "C" is not in the layout`},
		{"kill: none\nlayout: layouts/t.json\nkeys:\n  A: [1]\n", "x.yaml:4: keys: want TOPIC: VALUE entries"},
		{"kill: none\nlayout: layouts/t.json\nkeys:\n  A: zipf:x:1\n", `x.yaml:3: keys: A: keys "zipf:x:1"`},
		{"kill: none\nlayout: layouts/t.json\nkeys:\n  A,B: none\n", "x.yaml:4: keys: A,B: a topic or value with ','"},
		{"kill: none\nlayout: missing.json\n", "x.yaml:2: layout: open "},
		{"kill: none\nlayout: layouts/t.json\nbrokers: 2\n", "x.yaml:3: brokers: 2 brokers, but x.yaml:2: layout names broker 3"},
		{"kill: none\nlayout: layouts/t.json\nassignment: \"1,2\"\n", "x.yaml:2: layout and x.yaml:3: assignment: give one"},
		{"kill: none\npartitioner: {a: b}\n", "x.yaml:2: partitioner: want a value or a list of values"},
		{"kill: none\nworkload: other.yaml\n", `x.yaml:2: unknown key "workload"`},
	} {
		p := writeFile(t, dir, "x.yaml", tc.body)
		_, err := parse(t, "--workload", p)
		require.Error(t, err, tc.body)
		assert.ErrorContains(t, err, strings.ReplaceAll(tc.want, "x.yaml", p), tc.body)
		assert.Equal(t, cmdutil.ExitUsage, cmdutil.ExitCode(err), tc.body)
	}
}

// --partitioner lists sqf-shared, and the CLI passes it to the experiment
// as it passes any other name.
func TestSQFShared(t *testing.T) {
	cmd := NewCmdChaos(cmdutil.NewTestFactory(), nil)
	assert.Contains(t, cmd.Flags().Lookup("partitioner").Usage, chaos.SQFShared)
	o, err := parse(t, "--kill", "busiest", "--layout", thesis64, "--partitioner", "sqf,sqf-shared")
	require.NoError(t, err)
	assert.Equal(t, []string{"sqf", chaos.SQFShared}, o.Config.Partitioners)
}

// observedLab is a kplan observe --out snapshot of a real lab run.
const observedLab = "testdata/observed-lab.json"

// TestWorkloadFromSnapshot: --workload-from SNAPSHOT creates the observed
// topics with their assignment and writes each at its observed bytes/s,
// as --layout SNAPSHOT --rates-file SNAPSHOT does; --scale multiplies
// every rate.
func TestWorkloadFromSnapshot(t *testing.T) {
	want, err := parse(t, "--kill", "busiest", "--layout", observedLab, "--rates-file", observedLab)
	require.NoError(t, err)
	require.NotEmpty(t, want.Config.Workload)
	got, err := parse(t, "--kill", "busiest", "--workload-from", observedLab)
	require.NoError(t, err)
	assert.Equal(t, want.Config.Workload, got.Config.Workload)

	scaled, err := parse(t, "--kill", "busiest", "--workload-from", observedLab, "--scale", "0.1")
	require.NoError(t, err)
	require.Len(t, scaled.Config.Workload, len(want.Config.Workload))
	for i, w := range want.Config.Workload {
		s := scaled.Config.Workload[i]
		assert.Equal(t, w.Name, s.Name)
		assert.Equal(t, w.Assignment, s.Assignment)
		require.Positive(t, w.Rate)
		assert.InDelta(t, float64(w.Rate)/10, float64(s.Rate), 1, "%s: a tenth of the observed rate", w.Name)
	}
	assert.Equal(t, chaos.TotalRate(scaled.Config.Workload), scaled.Config.Rate)
}
