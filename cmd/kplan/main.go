// Command kplan sizes, audits, rebalances and fault-tests Apache Kafka
// clusters. Everything lives in internal/app; main only exits with its code.
package main

import (
	"os"

	"github.com/kplan-dev/kplan/internal/app"
)

func main() {
	os.Exit(app.Main())
}
