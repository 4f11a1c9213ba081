package workload

// Topic is one topic's traffic: its rate and its keys.
type Topic struct {
	// Name is the topic as the layout names it.
	Name string `json:"topic"`
	// Rate is the topic's rate: bytes per second, or a relative weight.
	Rate float64 `json:"rate"`
	// Keys are the record keys' distribution.
	Keys Keys `json:"-"`
}
