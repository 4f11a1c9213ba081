package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/topology"
)

// SourceSchema versions the sidecar file that records what a plan was
// computed from.
const SourceSchema = "kplan.reassign.source/v1"

// Source is the metadata a plan was computed from, as far as the plan
// touches it: the replicas of each plan partition and the id and rack of
// every broker those replicas and the plan's targets name. It lives in a
// sidecar file beside the plan (SourcePath), so the plan stays Kafka's
// reassignment JSON as kafka-reassign-partitions and other tools read it.
// apply compares it with the live cluster before it changes anything: the
// drift guard.
type Source struct {
	Schema string `json:"schema"`
	// Digest is the SHA-256 of the brokers and partitions below, in a
	// canonical text form (digestOf).
	Digest string `json:"digest"`
	// Plan is the SHA-256 of the plan's partitions and targets (PlanDigest),
	// so a sidecar left from another plan is not taken for this one's.
	Plan       string            `json:"plan_sha256"`
	Brokers    []topology.Broker `json:"brokers"`
	Partitions []SourcePartition `json:"partitions"`
}

// SourcePartition is a plan partition's replicas when the plan was made,
// and its target in the plan.
type SourcePartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Target    []int32 `json:"target"`
}

// Key returns the partition's key.
func (p SourcePartition) Key() topology.Key {
	return topology.Key{Topic: p.Topic, Partition: p.Partition}
}

// SourcePath is the sidecar of the plan file plan: PLAN.kplan.json beside
// PLAN.json.
func SourcePath(plan string) string { return strings.TrimSuffix(plan, ".json") + ".kplan.json" }

// StatePath is the state file of the plan file plan:
// PLAN.kplan-state.json beside PLAN.json.
func StatePath(plan string) string { return strings.TrimSuffix(plan, ".json") + ".kplan-state.json" }

// PlanDigest is the SHA-256 of a plan: each partition and its target
// replicas, sorted by partition.
func PlanDigest(plan []topology.Partition) string {
	ps := plan
	if !slices.IsSortedFunc(ps, topology.ComparePartitions) {
		ps = slices.Clone(plan)
		slices.SortFunc(ps, topology.ComparePartitions)
	}
	h := sha256.New()
	var line []byte
	for _, p := range ps {
		// topic NUL partition NUL replicas NL
		line = append(line[:0], p.Topic...)
		line = append(line, 0)
		line = strconv.AppendInt(line, int64(p.Partition), 10)
		line = append(line, 0)
		line = appendIDs(line, p.Replicas)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendIDs appends ids to b comma-separated, as idList writes them.
func appendIDs(b []byte, ids []int32) []byte {
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return b
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// NewSource records what of c the plan touches: the replicas of each plan
// partition in c and the brokers of c those replicas and the plan's
// targets name (a broker c does not list, or lists as missing, is
// recorded without a rack). A plan partition c does not hold is left out.
func NewSource(c *topology.Cluster, plan []topology.Partition) *Source {
	racks := map[int32]string{}
	for _, b := range c.Brokers {
		if !b.Missing {
			racks[b.ID] = b.Rack
		}
	}
	s := &Source{Schema: SourceSchema, Plan: PlanDigest(plan), Partitions: make([]SourcePartition, 0, len(plan))}
	named := map[int32]bool{}
	// Each replica list is a sub-slice of one array: a million small
	// clones cost more than the rest.
	ids := make([]int32, 0, 2*len(plan)*3)
	hold := func(xs []int32) []int32 {
		at := len(ids)
		ids = append(ids, xs...)
		for _, b := range xs {
			named[b] = true
		}
		return ids[at:len(ids):len(ids)]
	}
	for i, p := range matchPlan(c.Partitions, plan) {
		if p < 0 {
			continue
		}
		m, q := plan[i], c.Partitions[p]
		s.Partitions = append(s.Partitions, SourcePartition{Topic: m.Topic, Partition: m.Partition, Replicas: hold(q.Replicas), Target: hold(m.Replicas)})
	}
	byKey := func(a, b SourcePartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	}
	if !slices.IsSortedFunc(s.Partitions, byKey) {
		slices.SortFunc(s.Partitions, byKey)
	}
	s.Brokers = make([]topology.Broker, 0, len(named))
	for id := range named {
		s.Brokers = append(s.Brokers, topology.Broker{ID: id, Rack: racks[id]})
	}
	slices.SortFunc(s.Brokers, func(a, b topology.Broker) int { return int(a.ID) - int(b.ID) })
	s.Digest = s.digestOf()
	return s
}

// matchPlan returns, for each plan partition, its index in parts, or -1
// when parts lacks it. Both sorted by topic and partition (a layout as
// kplan loads it, a plan as kplan writes it): one merge pass; otherwise a
// map of the plan's keys.
func matchPlan(parts, plan []topology.Partition) []int {
	at := make([]int, len(plan))
	for i := range at {
		at[i] = -1
	}
	if slices.IsSortedFunc(parts, topology.ComparePartitions) && slices.IsSortedFunc(plan, topology.ComparePartitions) {
		j := 0
		for i := range plan {
			for j < len(parts) && topology.ComparePartitions(parts[j], plan[i]) < 0 {
				j++
			}
			if j < len(parts) && parts[j].Topic == plan[i].Topic && parts[j].Partition == plan[i].Partition {
				at[i] = j
				if i > 0 && at[i-1] == j {
					at[i-1] = -1 // a key twice in the plan: the last one, as the map keeps it
				}
			}
		}
		return at
	}
	inPlan := make(map[topology.Key]int, len(plan))
	for i, m := range plan {
		inPlan[m.Key()] = i
	}
	for j, p := range parts {
		if i, ok := inPlan[p.Key()]; ok {
			at[i] = j
		}
	}
	return at
}

// digestOf is the SHA-256 of s's brokers and partitions, canonical.
func (s *Source) digestOf() string {
	h := sha256.New()
	var line []byte
	for _, br := range s.Brokers {
		// broker NUL id NUL rack NL
		line = append(line[:0], "broker\x00"...)
		line = strconv.AppendInt(line, int64(br.ID), 10)
		line = append(line, 0)
		line = append(line, br.Rack...)
		line = append(line, '\n')
		h.Write(line)
	}
	for _, p := range s.Partitions {
		// partition NUL topic NUL partition NUL replicas NUL target NL
		line = append(line[:0], "partition\x00"...)
		line = append(line, p.Topic...)
		line = append(line, 0)
		line = strconv.AppendInt(line, int64(p.Partition), 10)
		line = append(line, 0)
		line = appendIDs(line, p.Replicas)
		line = append(line, 0)
		line = appendIDs(line, p.Target)
		line = append(line, '\n')
		h.Write(line)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// WriteSourceFile writes the sidecar of the plan file planPath (see
// SourcePath), recording what of c the plan touches, atomically; it
// returns the sidecar's path. With planPath "" it writes nothing and
// returns "". The plan command calls it once it wrote the plan, with the
// cluster it computed the plan from (unchanged by the planning).
func WriteSourceFile(planPath string, c *topology.Cluster, plan []topology.Partition) (string, error) {
	if planPath == "" {
		return "", nil
	}
	path := SourcePath(planPath)
	return path, writeAtomic(path, NewSource(c, plan).appendJSON(nil))
}

// appendJSON appends s as the sidecar's JSON to b: the fields of Source's
// tags, one broker and one partition a line. It is what encoding/json
// decodes back to s (LoadSource), written without reflection: a plan of
// a million partitions has a sidecar of tens of megabytes.
func (s *Source) appendJSON(b []byte) []byte {
	b = slices.Grow(b, 128+24*len(s.Brokers)+80*len(s.Partitions))
	b = append(b, "{\"schema\":"...)
	b = topology.AppendJSONString(b, s.Schema)
	b = append(b, ",\"digest\":"...)
	b = topology.AppendJSONString(b, s.Digest)
	b = append(b, ",\"plan_sha256\":"...)
	b = topology.AppendJSONString(b, s.Plan)
	b = append(b, ",\n\"brokers\":["...)
	for i, br := range s.Brokers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  {\"id\":"...)
		b = strconv.AppendInt(b, int64(br.ID), 10)
		if br.Rack != "" {
			b = append(b, ",\"rack\":"...)
			b = topology.AppendJSONString(b, br.Rack)
		}
		b = append(b, '}')
	}
	b = append(b, "],\n\"partitions\":["...)
	for i, p := range s.Partitions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  {\"topic\":"...)
		b = topology.AppendJSONString(b, p.Topic)
		b = append(b, ",\"partition\":"...)
		b = strconv.AppendInt(b, int64(p.Partition), 10)
		b = append(b, ",\"replicas\":["...)
		b = appendIDs(b, p.Replicas)
		b = append(b, "],\"target\":["...)
		b = appendIDs(b, p.Target)
		b = append(b, "]}"...)
	}
	return append(b, "]}\n"...)
}

// LoadSource reads a sidecar and checks it against the plan: a file that
// is not one, whose digest does not match its content, or that was
// written for another plan is a usage error about the field "source".
// A part of the sidecar's plan (a wave file of kplan reassign --waves:
// every partition with the target the sidecar records) is that plan.
// A file that does not exist returns nil and no error.
func LoadSource(path string, plan []topology.Partition) (*Source, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, "source", err)
	}
	var s Source
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || s.Schema != SourceSchema {
		return nil, errkind.Usagef("source", "%s: not a kplan source file (want schema %q)", path, SourceSchema)
	}
	if s.Digest != s.digestOf() {
		return nil, errkind.Usagef("source", "%s: its digest does not match its content (edited by hand?)", path)
	}
	if s.Plan != PlanDigest(plan) && !s.covers(plan) {
		return nil, errkind.Usagef("source", "%s: written for another plan (the plan changed since)", path)
	}
	return &s, nil
}

// covers reports whether every partition of plan is one of s's with the
// same target.
func (s *Source) covers(plan []topology.Partition) bool {
	targets := map[topology.Key][]int32{}
	for _, p := range s.Partitions {
		targets[p.Key()] = p.Target
	}
	for _, m := range plan {
		t, ok := targets[m.Key()]
		if !ok || !slices.Equal(t, m.Replicas) {
			return false
		}
	}
	return true
}

// waveFile matches the wave files of kplan reassign --waves: PLAN.wave-N.json.
var waveFile = regexp.MustCompile(`^(.*)\.wave-[0-9]+\.json$`)

// SourceFor is the sidecar that guards the plan file plan: PLAN.kplan.json
// beside PLAN.json, and for a wave file PLAN.wave-N.json, the sidecar of
// PLAN.json when the wave has none of its own.
func SourceFor(plan string) string {
	own := SourcePath(plan)
	if _, err := os.Stat(own); err == nil {
		return own
	}
	if m := waveFile.FindStringSubmatch(plan); m != nil {
		return m[1] + ".kplan.json"
	}
	return own
}

// Drift is the first difference between a plan's Source and the live
// cluster: a plan partition whose replicas changed (Partition set), or a
// broker gone or moved to another rack.
type Drift struct {
	// Partition is the partition that differs (Broker -1), with its
	// replicas when the plan was made and now.
	Partition topology.Key
	Was, Now  []int32
	// Broker is the broker that differs (-1 for a partition): Gone, or
	// moved from rack WasRack to NowRack.
	Broker           int32
	Gone             bool
	WasRack, NowRack string
	// More counts the other differences.
	More int
}

func (d *Drift) Error() string {
	var what string
	switch {
	case d.Broker < 0:
		what = fmt.Sprintf("%s/%d has replicas [%s], the plan was made from [%s]", d.Partition.Topic, d.Partition.Partition, idList(d.Now), idList(d.Was))
	case d.Gone:
		what = fmt.Sprintf("broker %d is no longer in the cluster", d.Broker)
	default:
		what = fmt.Sprintf("broker %d is in rack %q, the plan was made with it in rack %q", d.Broker, d.NowRack, d.WasRack)
	}
	more := ""
	if d.More > 0 {
		more = fmt.Sprintf(" (and %d more differences)", d.More)
	}
	return "the cluster changed since the plan was made: " + what + more + "; make a new plan, or apply this one anyway with --ignore-drift"
}

// check compares s with the live cluster c and returns its first
// difference, or nil. Partitions are checked in plan order, then brokers
// in id order; a partition that already has its plan target is no
// difference (its move is done), nor is one skip accepts (one a resumed
// apply moved).
func (s *Source) check(c *topology.Cluster, plan []topology.Partition, skip func(topology.Key) bool) *Drift {
	live := map[topology.Key][]int32{}
	for _, p := range c.Partitions {
		live[p.Key()] = p.Replicas
	}
	was := map[topology.Key][]int32{}
	for _, p := range s.Partitions {
		was[p.Key()] = p.Replicas
	}
	var first *Drift
	n := 0
	note := func(d *Drift) {
		if first == nil {
			first = d
		}
		n++
	}
	for _, m := range plan {
		k := m.Key()
		w, ok := was[k]
		now, there := live[k]
		if !ok || !there || skip(k) || slices.Equal(now, w) || slices.Equal(now, m.Replicas) {
			continue
		}
		note(&Drift{Partition: k, Was: w, Now: now, Broker: -1})
	}
	brokers := map[int32]topology.Broker{}
	for _, b := range c.Brokers {
		if !b.Missing {
			brokers[b.ID] = b
		}
	}
	for _, b := range s.Brokers {
		now, ok := brokers[b.ID]
		switch {
		case !ok:
			note(&Drift{Broker: b.ID, Gone: true, WasRack: b.Rack})
		case now.Rack != b.Rack:
			note(&Drift{Broker: b.ID, WasRack: b.Rack, NowRack: now.Rack})
		}
	}
	if first != nil {
		first.More = n - 1
	}
	return first
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced and renamed over path.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
