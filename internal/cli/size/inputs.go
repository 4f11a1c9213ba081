// Package size implements `kplan size` and `kplan size sweep`.
package size

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/sizing"
	"github.com/kplan-dev/kplan/internal/units"
)

// kind says how an input's text is parsed.
type kind int

const (
	kindInt kind = iota
	kindRate
	kindDuration
)

// inputSpec describes one sizing input: its flag, symbol, parser and field.
type inputSpec struct {
	flag   string
	symbol string
	kind   kind
	usage  string
	set    sizing.Setter
	// optional inputs may stay empty.
	optional bool
}

var specs = []inputSpec{
	{flag: "throughput", symbol: "T", kind: kindRate, usage: "target throughput of the topic, e.g. 100MB/s", set: func(in *sizing.Input, v int64) { in.Throughput = v }},
	{flag: "consumers", symbol: "c", kind: kindInt, usage: "consumers in the consumer group", set: func(in *sizing.Input, v int64) { in.Consumers = v }},
	{flag: "replication-factor", symbol: "r", kind: kindInt, usage: "replication factor", set: func(in *sizing.Input, v int64) { in.ReplicationFactor = v }},
	{flag: "max-brokers", symbol: "B", kind: kindInt, usage: "brokers available", set: func(in *sizing.Input, v int64) { in.MaxBrokers = v }},
	{flag: "partition-produce-rate", symbol: "Tp", kind: kindRate, usage: "production throughput one partition sustains, e.g. 10MB/s", set: func(in *sizing.Input, v int64) { in.PartitionProduceRate = v }},
	{flag: "partition-consume-rate", symbol: "Tc", kind: kindRate, usage: "consumption throughput one partition sustains, e.g. 20MB/s", set: func(in *sizing.Input, v int64) { in.PartitionConsumeRate = v }},
	{flag: "max-handles", symbol: "Hmax", kind: kindInt, usage: "max partition replicas (open file handles) per broker", set: func(in *sizing.Input, v int64) { in.MaxHandles = v }},
	{flag: "replication-latency", symbol: "l_r", kind: kindDuration, usage: "replication latency of one partition, e.g. 5ms", set: func(in *sizing.Input, v int64) { in.ReplicationLatency = time.Duration(v) }},
	{flag: "max-replication-latency", symbol: "L", kind: kindDuration, usage: "replication latency threshold, e.g. 200ms", set: func(in *sizing.Input, v int64) { in.MaxReplicationLatency = time.Duration(v) }},
	{flag: "election-time", symbol: "u", kind: kindDuration, usage: "leader election time of one partition, e.g. 25ms", set: func(in *sizing.Input, v int64) { in.ElectionTime = time.Duration(v) }},
	{flag: "max-unavailability", symbol: "U", kind: kindDuration, usage: "unavailability threshold, e.g. 2s", set: func(in *sizing.Input, v int64) { in.MaxUnavailability = time.Duration(v) }},
	{flag: "record-size", symbol: "size", kind: kindInt, optional: true, usage: "record size in bytes, for Little's law (with --consumer-processing-time)", set: func(in *sizing.Input, v int64) { in.RecordSize = v }},
	{flag: "consumer-processing-time", symbol: "t", kind: kindDuration, optional: true, usage: "consumer processing time per record, for Little's law", set: func(in *sizing.Input, v int64) { in.ConsumerProcessingTime = time.Duration(v) }},
}

func specFor(flag string) (inputSpec, bool) {
	for _, s := range specs {
		if s.flag == flag {
			return s, true
		}
	}
	return inputSpec{}, false
}

// parseValue parses text as the spec's kind into an exact integer.
func (s inputSpec) parseValue(text string) (int64, error) {
	switch s.kind {
	case kindRate:
		return units.ParseRate(text)
	case kindDuration:
		d, err := units.ParseDuration(text)
		if err != nil {
			return 0, err
		}
		if d <= 0 {
			return 0, fmt.Errorf("duration %q must be positive", text)
		}
		return int64(d), nil
	default:
		v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", text)
		}
		if v <= 0 {
			return 0, fmt.Errorf("must be positive, got %d", v)
		}
		return v, nil
	}
}

// inputs holds the raw text of every sizing input and where it came from
// (a flag, or file:line of a plan), so errors can name the source.
type inputs struct {
	raw    map[string]*string
	origin map[string]string
	plan   string
}

func newInputs() *inputs {
	in := &inputs{raw: map[string]*string{}, origin: map[string]string{}}
	for _, s := range specs {
		in.raw[s.flag] = new(string)
	}
	return in
}

// addFlags registers every input flag and --plan.
func (in *inputs) addFlags(fs *pflag.FlagSet) {
	for _, s := range specs {
		fs.StringVar(in.raw[s.flag], s.flag, "", fmt.Sprintf("%s (%s)", s.usage, s.symbol))
	}
	fs.StringVar(&in.plan, "plan", "", "plan file (YAML) with the same keys as the flags; flags override it")
}

// where names the source of a key for an error message.
func (in *inputs) where(key string) string {
	if o, ok := in.origin[key]; ok {
		return o
	}
	return "--" + key
}

// loadPlan reads --plan into every flag the user did not set. Keys are flag
// names; unknown keys are errors naming file:line.
func loadPlan(cmd *cobra.Command, in *inputs, allowed map[string]bool) error {
	if in.plan == "" {
		return nil
	}
	data, err := os.ReadFile(in.plan)
	if err != nil {
		return errkind.Usagef("", "--plan: %w", err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return errkind.Usagef("", "%s: %s", in.plan, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return errkind.Usagef("", "%s: empty plan", in.plan)
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return errkind.Usagef("", "%s:%d: a plan is a mapping of flag names to values", in.plan, m.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		loc := fmt.Sprintf("%s:%d", in.plan, k.Line)
		if seen[key] {
			return errkind.Usagef("", "%s: duplicate key %q", loc, key)
		}
		seen[key] = true
		f := cmd.Flags().Lookup(key)
		if f == nil || !allowed[key] {
			return errkind.Usagef("", "%s: unknown key %q%s", loc, key, suggest(key, allowed))
		}
		if v.Kind != yaml.ScalarNode {
			return errkind.Usagef("", "%s: %s: want a single value", loc, key)
		}
		if f.Changed {
			continue // flags override the file
		}
		if err := f.Value.Set(v.Value); err != nil {
			return errkind.Usagef("", "%s: %s: %w", loc, key, err)
		}
		in.origin[key] = fmt.Sprintf("%s:%d: %s", in.plan, k.Line, key)
	}
	return nil
}

// suggest proposes the closest allowed key for a misspelt one.
func suggest(key string, allowed map[string]bool) string {
	best, bestD := "", 4
	for k := range allowed {
		if d := levenshtein(key, k); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// build parses every input into a sizing.Input. Errors name the flag or the
// plan's file:line: key.
func (in *inputs) build(compat string) (sizing.Input, error) {
	var out sizing.Input
	for _, s := range specs {
		text := strings.TrimSpace(*in.raw[s.flag])
		if text == "" {
			if s.optional {
				continue
			}
			return out, errkind.Usagef("", "--%s is required (%s), as a flag or a --plan key", s.flag, s.usage)
		}
		v, err := s.parseValue(text)
		if err != nil {
			return out, errkind.Usagef("", "%s: %w", in.where(s.flag), err)
		}
		s.set(&out, v)
	}
	out.Compat = sizing.Compat(compat)
	if err := out.Validate(); err != nil {
		// A *sizing.FieldError: its field spelled as the flag or the
		// plan's file:line: key that set it.
		return out, errkind.Wrap(errkind.Usage, "", cmdutil.Spell(err, in.where))
	}
	return out, nil
}

// summary renders the inputs in the paper's symbols.
func summary(in sizing.Input) string {
	parts := []string{
		"T=" + units.FormatRate(in.Throughput),
		fmt.Sprintf("c=%d", in.Consumers),
		fmt.Sprintf("r=%d", in.ReplicationFactor),
		fmt.Sprintf("B=%d", in.MaxBrokers),
		"Tp=" + units.FormatRate(in.PartitionProduceRate),
		"Tc=" + units.FormatRate(in.PartitionConsumeRate),
		fmt.Sprintf("Hmax=%d", in.MaxHandles),
		"l_r=" + in.ReplicationLatency.String(),
		"L=" + in.MaxReplicationLatency.String(),
		"u=" + in.ElectionTime.String(),
		"U=" + in.MaxUnavailability.String(),
	}
	if in.RecordSize > 0 {
		parts = append(parts, fmt.Sprintf("size=%dB", in.RecordSize), "t="+in.ConsumerProcessingTime.String())
	}
	if in.Compat != "" {
		parts = append(parts, "compat="+string(in.Compat))
	}
	return strings.Join(parts, " ")
}
