package workload

import (
	"errors"
	"slices"
	"strings"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// TopicKeys are the record keys per topic for a prediction: ByTopic names
// topics, Default covers the others (keyless when not set).
type TopicKeys struct {
	ByTopic map[string]Keys
	Default Keys
}

// Of returns topic's keys.
func (k TopicKeys) Of(topic string) Keys {
	if v, ok := k.ByTopic[topic]; ok {
		return v
	}
	return k.Default
}

// Keyed reports whether any topic's records carry keys.
func (k TopicKeys) Keyed() bool {
	if k.Default.Keyed() {
		return true
	}
	for _, v := range k.ByTopic {
		if v.Keyed() {
			return true
		}
	}
	return false
}

// String returns the keys as ParseTopicKeys reads them, topics sorted.
func (k TopicKeys) String() string {
	if len(k.ByTopic) == 0 {
		return k.Default.String()
	}
	var parts []string
	if k.Default.Keyed() {
		parts = append(parts, "*="+k.Default.String())
	}
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range k.ByTopic {
			if !yield(t) {
				return
			}
		}
	}) {
		parts = append(parts, t+"="+k.ByTopic[t].String())
	}
	return strings.Join(parts, ",")
}

// ParseTopicKeys reads either one distribution for every topic
// (ParseKeys: none, uniform:N, zipf:S:N) or TOPIC=SPEC,...
// (*=SPEC for the topics not named). Errors are usage errors naming the
// field FieldKeys.
func ParseTopicKeys(s string) (TopicKeys, error) {
	out := TopicKeys{ByTopic: map[string]Keys{}}
	defaultSet := false
	if !strings.Contains(s, "=") {
		k, err := ParseKeys(s)
		out.Default = k
		return out, err
	}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		topic, spec, ok := strings.Cut(item, "=")
		topic = strings.TrimSpace(topic)
		if !ok || topic == "" {
			return TopicKeys{}, errkind.Usagef(FieldKeys, "keys %q: want TOPIC=SPEC", item)
		}
		k, err := ParseKeys(spec)
		if err != nil {
			var ke *errkind.Error
			if errors.As(err, &ke) {
				err = ke.Err
			}
			return TopicKeys{}, errkind.Usagef(FieldKeys, "%s: %w", topic, err)
		}
		if topic == "*" {
			if defaultSet {
				return TopicKeys{}, errkind.Usagef(FieldKeys, "keys for * given twice")
			}
			out.Default, defaultSet = k, true
			continue
		}
		if _, dup := out.ByTopic[topic]; dup {
			return TopicKeys{}, errkind.Usagef(FieldKeys, "keys for %s given twice", topic)
		}
		out.ByTopic[topic] = k
	}
	return out, nil
}
