package measure

import (
	"bytes"
	"fmt"
	"regexp"
)

// electionTimeLine finds a plan's election-time lines.
var electionTimeLine = regexp.MustCompile(`(?m)^election-time[ \t]*:.*$`)

// SetElectionTime returns plan with its election-time line set to
// value (with comment), or the line appended when there is none. Every
// other line stays as it is. A plan that sets election-time twice is an
// error.
func SetElectionTime(plan []byte, value, comment string) ([]byte, error) {
	locs := electionTimeLine.FindAllIndex(plan, -1)
	if len(locs) > 1 {
		return nil, fmt.Errorf("election-time is set %d times", len(locs))
	}
	line := "election-time: " + value
	if comment != "" {
		line = fmt.Sprintf("election-time: %-14s # %s", value, comment)
	}
	if len(locs) == 0 {
		out := bytes.Clone(plan)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		return append(out, line+"\n"...), nil
	}
	var out []byte
	out = append(out, plan[:locs[0][0]]...)
	out = append(out, line...)
	return append(out, plan[locs[0][1]:]...), nil
}
