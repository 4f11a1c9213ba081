package measurereport

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kplan-dev/kplan/internal/measure"
	"github.com/kplan-dev/kplan/internal/measure/experiment"
	"github.com/kplan-dev/kplan/internal/report"
)

// PlannedDocument is what kplan measure will do, step by step.
func PlannedDocument(p experiment.Planned) report.Document {
	sec := report.Section{Title: "What kplan measure will do on " + p.Cluster, Header: []string{"step", "action"}}
	for i, a := range p.Actions {
		sec.Rows = append(sec.Rows, []string{strconv.Itoa(i + 1), a})
	}
	return report.Document{Title: "kplan measure: plan", Sections: []report.Section{sec}}
}

// PlanDocument is the measured plan: each input with its spread and how
// it was measured.
func PlanDocument(p *measure.Plan) report.Document {
	sec := report.Section{Title: "Measured inputs", Header: []string{"key", "symbol", "value", "spread"}}
	var notes []string
	for _, r := range p.Rows() {
		sec.Rows = append(sec.Rows, []string{r.Key, r.Symbol, r.Value, r.Spread})
		notes = append(notes, r.Symbol+": "+r.How)
	}
	sec.Notes = notes
	m := p.Machine
	return report.Document{
		Title:    fmt.Sprintf("kplan measure: %s (%d brokers, Kafka %s) from %s, %d cores, %s", m.Cluster, m.Brokers, m.KafkaVersion, m.Host, m.Cores, p.Date.UTC().Format(time.RFC3339)),
		Sections: []report.Section{sec},
	}
}
