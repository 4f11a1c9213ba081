package experiment

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/kafka"
	"github.com/kplan-dev/kplan/internal/kafka/kafkatest"
	"github.com/kplan-dev/kplan/internal/loadgen"
	"github.com/kplan-dev/kplan/internal/measure"
)

// fakeInputs is an Inputs action on an in-process cluster of 3 brokers,
// with short settings; kfake judges no rate, so tests check the workflow
// (the sequence, the plan's fields, the cleanup), not the figures.
func fakeInputs(t *testing.T) (*Inputs, *[]string) {
	t.Helper()
	addrs, stop, err := kafkatest.FakeCluster(3)
	require.NoError(t, err)
	t.Cleanup(stop)
	m := loadgen.NewMeasurer(kafka.ConnOptions{BootstrapServers: strings.Join(addrs, ","), Timeout: 5 * time.Second}, "test")
	t.Cleanup(m.Close)
	info, err := m.Info(context.Background())
	require.NoError(t, err)
	var lines []string
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Inputs{Measurer: m, Info: info, Topics: NewInputTopics(date), ReplicationFactor: 3,
		Acks: loadgen.AcksAll, RecordSize: 100, Duration: 300 * time.Millisecond, Window: 50 * time.Millisecond,
		ReplicationSamples: 4, ReplicationRecordSize: 10, ElectionPartitions: 4, ElectionRounds: 2,
		Requirements: measure.Requirements{Consumers: 1, MaxReplicationLatency: 200 * time.Millisecond, MaxUnavailability: 2 * time.Second},
		Date:         date, Command: "kplan measure", Host: "h", Cores: 2,
		Progress: func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }}, &lines
}

func TestInputsRunOnFake(t *testing.T) {
	in, lines := fakeInputs(t)
	plan, err := in.Run(context.Background())
	require.NoError(t, err)
	require.NotNil(t, plan)
	assert.Equal(t, int64(3), plan.Requirements.ReplicationFactor)
	assert.Equal(t, int64(3), plan.Requirements.MaxBrokers, "MaxBrokers 0 is the cluster's brokers")
	assert.Equal(t, 3, plan.Machine.Brokers)
	assert.Equal(t, "kplan measure", plan.Command)
	assert.Positive(t, plan.Produce.BytesPerSec)
	assert.Positive(t, plan.Consume.BytesPerSec)
	require.NotNil(t, plan.Election, "u measured with ElectionPartitions > 0")
	assert.Empty(t, in.Measurer.Created(), "scratch topics deleted")
	var order []string
	for _, l := range *lines {
		for _, p := range []string{"Tp = ", "Tc = ", "l_r = ", "u = ", "deleted "} {
			if strings.HasPrefix(l, p) {
				order = append(order, p)
			}
		}
	}
	assert.Equal(t, []string{"Tp = ", "Tc = ", "l_r = ", "u = ", "deleted "}, order, "the sequence, then the cleanup: %q", *lines)
}

func TestInputsRefusesMaxBrokersBelowRF(t *testing.T) {
	in, _ := fakeInputs(t)
	in.Requirements.MaxBrokers = 2
	plan, err := in.Run(context.Background())
	require.Error(t, err)
	assert.Nil(t, plan)
	assert.Equal(t, errkind.Usage, errkind.KindOf(err))
	assert.Equal(t, "max-brokers", errkind.FieldOf(err))
	assert.Empty(t, in.Measurer.Created(), "nothing created")
}

func TestNewInputTopics(t *testing.T) {
	got := NewInputTopics(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	assert.Equal(t, InputTopics{"kplan-measure-20260102-020405-tp", "kplan-measure-20260102-020405-lr", "kplan-measure-20260102-020405-u"}, got)
}
