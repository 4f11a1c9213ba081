package topology

import (
	"bytes"
)

// loadJSONFast reads the layouts kplan and Kafka's tools write, byte by
// byte without reflection: one object with "version", "live", "brokers"
// and "partitions", each partition an object of the fields jsonPartition
// names, integers, plain ASCII strings. It builds exactly what
// loadJSONSlow builds from the same input and validates each partition
// with the same code; anything else (an unknown or repeated key, null, an
// escape or a non-ASCII byte in a string, a number that is not a small
// integer, a fault of any kind) makes it give up (ok false), and the slow
// reader decides, naming the line and column. So it changes speed, never
// an answer: FuzzLoadJSON holds the two equal.
func loadJSONFast(data []byte) (c *Cluster, ok bool) {
	s := fastScanner{d: data}
	s.ws()
	if s.i < len(s.d) && s.d[s.i] == 0xef { // a UTF-8 byte order mark: leave it to the slow reader
		return nil, false
	}
	if !s.lit('{') {
		return nil, false
	}
	// Every partition is an object: counting '{' (one byte, counted with
	// vector instructions) bounds them closely, where counting "replicas"
	// (a string search) costs a tenth of the whole read.
	// No partition object is shorter than 40 bytes
	// ({"topic":"a","partition":0,"replicas":[1]}), so a file of braces
	// cannot reserve more than a few times its size.
	c = &Cluster{Partitions: make([]Partition, 0, min(bytes.Count(data, []byte{'{'}), len(data)/40+1))}
	topics := map[string]string{}
	var sawVersion, sawLive, sawBrokers, sawPartitions bool
	if s.lit('}') {
		return nil, false // no partitions: the slow reader says so
	}
	for {
		key, ok := s.str()
		if !ok || !s.lit(':') {
			return nil, false
		}
		switch string(key) {
		case "version":
			v, ok := s.int()
			if !ok || v != 1 || sawVersion {
				return nil, false
			}
			sawVersion = true
		case "live":
			if sawLive {
				return nil, false
			}
			sawLive = true
			switch {
			case s.word("true"):
				c.Live = true
			case s.word("false"):
			default:
				return nil, false
			}
		case "brokers":
			if sawBrokers || !s.brokers(c) {
				return nil, false
			}
			sawBrokers = true
		case "partitions":
			if sawPartitions || !s.partitions(c, topics) {
				return nil, false
			}
			sawPartitions = true
		default:
			return nil, false
		}
		if s.lit(',') {
			continue
		}
		if s.lit('}') {
			break
		}
		return nil, false
	}
	if !sawPartitions {
		return nil, false
	}
	c.Normalize()
	return c, true
}

// fastScanner reads JSON tokens from d at i.
type fastScanner struct {
	d []byte
	i int
}

func (s *fastScanner) ws() {
	for s.i < len(s.d) {
		switch s.d[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes c after white space.
func (s *fastScanner) lit(c byte) bool {
	s.ws()
	if s.i < len(s.d) && s.d[s.i] == c {
		s.i++
		return true
	}
	return false
}

// word consumes the literal w (true, false) after white space.
func (s *fastScanner) word(w string) bool {
	s.ws()
	if bytes.HasPrefix(s.d[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

// str returns a string's bytes (a sub-slice of d): plain printable ASCII
// only, no escapes.
func (s *fastScanner) str() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.d) {
		switch b := s.d[s.i]; {
		case b == '"':
			s.i++
			return s.d[start : s.i-1], true
		case b == '\\' || b < 0x20 || b >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// int reads an integer of at most 18 digits (no fraction, no exponent, no
// leading zero).
func (s *fastScanner) int() (int64, bool) {
	s.ws()
	neg := s.i < len(s.d) && s.d[s.i] == '-'
	if neg {
		s.i++
	}
	digits := s.i
	var v int64
	for s.i < len(s.d) && s.d[s.i] >= '0' && s.d[s.i] <= '9' {
		v = v*10 + int64(s.d[s.i]-'0')
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 18 || (n > 1 && s.d[digits] == '0') {
		return 0, false
	}
	if s.i < len(s.d) && (s.d[s.i] == '.' || s.d[s.i] == 'e' || s.d[s.i] == 'E') {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// intArray reads [n, ...] into buf, reused (partition copies what it
// keeps); never nil, as encoding/json leaves a present array.
func (s *fastScanner) intArray(buf *[]int64) ([]int64, bool) {
	if !s.lit('[') {
		return nil, false
	}
	if *buf == nil {
		*buf = make([]int64, 0, 8)
	}
	out := (*buf)[:0]
	if !s.lit(']') {
		for {
			v, ok := s.int()
			if !ok {
				return nil, false
			}
			out = append(out, v)
			if s.lit(',') {
				continue
			}
			if s.lit(']') {
				break
			}
			return nil, false
		}
	}
	*buf = out
	return out, true
}

func (s *fastScanner) strArray() ([]string, bool) {
	if !s.lit('[') {
		return nil, false
	}
	out := []string{}
	if s.lit(']') {
		return out, true
	}
	for {
		b, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, string(b))
		if s.lit(',') {
			continue
		}
		if s.lit(']') {
			return out, true
		}
		return nil, false
	}
}

// brokers reads the "brokers" array; any fault gives up.
func (s *fastScanner) brokers(c *Cluster) bool {
	if !s.lit('[') {
		return false
	}
	if s.lit(']') {
		return true
	}
	ids := map[int64]bool{}
	for {
		if !s.lit('{') {
			return false
		}
		var id int64
		var rack string
		sawID, sawRack := false, false
		if !s.lit('}') {
			for {
				key, ok := s.str()
				if !ok || !s.lit(':') {
					return false
				}
				switch string(key) {
				case "id":
					if id, ok = s.int(); !ok || sawID {
						return false
					}
					sawID = true
				case "rack":
					b, ok := s.str()
					if !ok || sawRack {
						return false
					}
					rack, sawRack = string(b), true
				default:
					return false
				}
				if s.lit(',') {
					continue
				}
				if s.lit('}') {
					break
				}
				return false
			}
		}
		if !sawID || id < 0 || id > 1<<31-1 || ids[id] {
			return false
		}
		ids[id] = true
		c.Brokers = append(c.Brokers, Broker{ID: int32(id), Rack: rack})
		if s.lit(',') {
			continue
		}
		return s.lit(']')
	}
}

// partitions reads the "partitions" array, validating each entry as
// loadJSONSlow does; any fault gives up.
func (s *fastScanner) partitions(c *Cluster, topics map[string]string) bool {
	if !s.lit('[') {
		return false
	}
	if s.lit(']') {
		return true
	}
	var topic string
	var part, leader, size, local int64
	var reps, isr, offline []int64
	for {
		if !s.lit('{') {
			return false
		}
		var jp jsonPartition
		var seen uint16
		field := func(bit uint16) bool {
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			return true
		}
		if !s.lit('}') {
			for {
				key, ok := s.str()
				if !ok || !s.lit(':') {
					return false
				}
				switch string(key) {
				case "topic":
					b, ok := s.str()
					if !ok || !field(1) {
						return false
					}
					if t, ok := topics[string(b)]; ok {
						topic = t
					} else {
						topic = string(b)
					}
					jp.Topic = &topic
				case "partition":
					if part, ok = s.int(); !ok || !field(2) {
						return false
					}
					jp.Partition = &part
				case "replicas":
					if jp.Replicas, ok = s.intArray(&reps); !ok || !field(4) {
						return false
					}
				case "leader":
					if leader, ok = s.int(); !ok || !field(8) {
						return false
					}
					jp.Leader = &leader
				case "isr":
					if jp.ISR, ok = s.intArray(&isr); !ok || !field(16) {
						return false
					}
				case "offline_replicas":
					if jp.Offline, ok = s.intArray(&offline); !ok || !field(32) {
						return false
					}
				case "log_dirs":
					if jp.LogDirs, ok = s.strArray(); !ok || !field(64) {
						return false
					}
				case "size_bytes":
					if size, ok = s.int(); !ok || !field(128) {
						return false
					}
					jp.SizeBytes = &size
				case "local_bytes":
					if local, ok = s.int(); !ok || !field(256) {
						return false
					}
					jp.LocalBytes = &local
				default:
					return false
				}
				if s.lit(',') {
					continue
				}
				if s.lit('}') {
					break
				}
				return false
			}
		}
		p, _, msg := jp.partition(topics)
		if msg != "" {
			return false
		}
		// Duplicates: as long as the entries are strictly increasing none
		// can repeat; out of order, let the slow reader check.
		if n := len(c.Partitions); n > 0 && ComparePartitions(c.Partitions[n-1], p) >= 0 {
			return false
		}
		c.Partitions = append(c.Partitions, p)
		if s.lit(',') {
			continue
		}
		return s.lit(']')
	}
}
