package reassign

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/localkafka"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
)

// idAdmin is a fake admin whose cluster answers with id.
type idAdmin struct {
	*applytest.Admin
	id string
}

func (a idAdmin) ClusterID(context.Context) (string, error) { return a.id, nil }

// A stale lab.json whose brokers' addresses another cluster now answers at
// used to make `reassign apply` skip --yes there: the lab check compared
// addresses only. It compares the cluster id too.
func TestIsLabComparesClusterID(t *testing.T) {
	addrs := []string{"127.0.0.1:39092"}
	host, port, err := net.SplitHostPort(addrs[0])
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	adm := idAdmin{Admin: applytest.New([]int32{0}), id: "the-lab-id"}
	for _, tc := range []struct {
		name, id string
		want     bool
	}{
		{"same cluster id", "the-lab-id", true},
		{"another cluster at the lab's address", "a-stale-lab-id", false},
		{"lab without an id", "", false},
	} {
		adm := adm
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := localkafka.State{Version: 1, ClusterID: tc.id, Dir: dir, Nodes: []localkafka.Node{{ID: 0, Broker: true, Port: p, Addr: host}}}
			b, err := json.Marshal(st)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.json"), b, 0o644))
			o := &ApplyOptions{Options: target.Options{BootstrapServers: addrs[0], LabDir: dir}}
			assert.Equal(t, tc.want, o.isLab(context.Background(), adm))
			// An admin that cannot tell the cluster id is never the lab.
			assert.False(t, o.isLab(context.Background(), adm.Admin))
		})
	}
}
