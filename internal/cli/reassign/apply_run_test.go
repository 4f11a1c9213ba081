package reassign

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kplan-dev/kplan/internal/cli/target"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/errkind"
	"github.com/kplan-dev/kplan/internal/iostreams"
	"github.com/kplan-dev/kplan/internal/reassign/apply"
	"github.com/kplan-dev/kplan/internal/reassign/apply/applytest"
	"github.com/kplan-dev/kplan/internal/report"
	"github.com/kplan-dev/kplan/internal/testutil/golden"
)

// runFake runs `kplan reassign apply` from options on a fake cluster and
// returns the exit code, stdout, stderr and the error's one line.
func runFake(t *testing.T, adm *applytest.Admin, plan string, mod func(*ApplyOptions)) (int, string, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(plan), 0o644))
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	o := &ApplyOptions{IO: ios, f: f, Format: report.Table, Plan: path, Mode: apply.ModeExecute,
		Options: target.Options{BootstrapServers: "k1:9092", Timeout: time.Second, LabDir: t.TempDir()}, Poll: time.Second, admin: adm, clock: applytest.NewClock()}
	if mod != nil {
		mod(o)
	}
	err := runApply(context.Background(), o)
	msg := ""
	if err != nil && !errors.Is(err, errkind.ErrSilent) {
		msg = err.Error()
	}
	return cmdutil.ExitCode(err), out.String(), errOut.String(), strings.ReplaceAll(msg, path, "PLAN")
}

const twoMoves = `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,3]},{"topic":"a","partition":1,"replicas":[1,3]}]}`

func skewed() *applytest.Admin {
	return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 1, 2), applytest.Part("a", 1, 1, 2))
}

// The JSON of every run carries the schema the README promises, and the
// outcome and message of the run.
func TestApplyJSON(t *testing.T) {
	adm := skewed()
	adm.FinishPerPoll = 1
	code, out, errOut, msg := runFake(t, adm, twoMoves, func(o *ApplyOptions) {
		o.Format, o.Yes, o.Throttle = report.JSON, true, 10_000_000
	})
	require.Equal(t, cmdutil.ExitOK, code, msg)
	var got struct {
		Schema     string `json:"schema"`
		Mode       string `json:"mode"`
		Bootstrap  string `json:"bootstrap"`
		Throttle   int64  `json:"throttle_bytes_per_s"`
		Outcome    string `json:"outcome"`
		Complete   int    `json:"complete"`
		Message    string `json:"message"`
		Partitions []struct {
			Status string `json:"status"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "kplan.reassign.apply/v1", got.Schema)
	assert.Equal(t, "execute", got.Mode)
	assert.Equal(t, "k1:9092", got.Bootstrap)
	assert.Equal(t, int64(10_000_000), got.Throttle)
	assert.Equal(t, "complete", got.Outcome)
	assert.Equal(t, 2, got.Complete)
	assert.Equal(t, "complete: 2 partitions have their target replicas; every partition is led by its first replica", got.Message)
	assert.Len(t, got.Partitions, 2)
	assert.True(t, strings.HasPrefix(out, "{\n  \"schema\": \"kplan.reassign.apply/v1\""), out)
	assert.Equal(t, `Plan for k1:9092: 2 of 2 partitions to change, replication throttled to 10MB/s
  a/0: [1,2] -> [2,3] (pending)
  a/1: [1,2] -> [1,3] (pending)
kplan reassign apply: the controller accepted 2 partition moves
kplan reassign apply: 1 of 2 partitions complete, 1 in progress (0s)
kplan reassign apply: 2 of 2 partitions complete, 0 in progress (1s)
`, errOut)
}

// Each way a run ends: the exit code, the table's title or the error's one
// line, which names the plan file or the flag.
func TestApplyRun(t *testing.T) {
	leaderless := func() *applytest.Admin {
		f := skewed()
		f.Parts[1].Leader = -1
		return f
	}
	inProgress := func() *applytest.Admin {
		f := skewed()
		f.Moving[f.Parts[0].Key()] = []int32{2, 3}
		return f
	}
	done := func() *applytest.Admin {
		return applytest.New([]int32{1, 2, 3}, applytest.Part("a", 0, 2, 3), applytest.Part("a", 1, 1, 3))
	}
	for _, tc := range []struct {
		name string
		adm  func() *applytest.Admin
		plan string
		mod  func(*ApplyOptions)
		code int
		out  string // the table's first line
		err  string
	}{
		{"refused without --yes", skewed, twoMoves, nil, cmdutil.ExitRefused, "",
			"--yes: needed to execute 2 partition moves on a cluster that is not the local kplan lab; nothing was changed"},
		{"refused: no leader", leaderless, twoMoves, func(o *ApplyOptions) { o.Yes = true }, cmdutil.ExitRefused, "",
			"plan PLAN: refusing to execute: a/1 has no leader"},
		{"refused: unknown broker", skewed, `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,9]}]}`, func(o *ApplyOptions) { o.Yes = true }, cmdutil.ExitRefused, "",
			"plan PLAN: refusing to execute: a/0: target broker 9 is not a running broker of the cluster"},
		{"refused: in progress", inProgress, twoMoves, func(o *ApplyOptions) { o.Yes = true }, cmdutil.ExitRefused, "",
			"plan PLAN: refusing to execute: a/0 is already being reassigned (verify or cancel that first)"},
		{"missing partition", skewed, `{"version":1,"partitions":[{"topic":"a","partition":7,"replicas":[2,3]}]}`, nil, cmdutil.ExitUsage, "",
			"plan PLAN: a/7 does not exist on the cluster"},
		{"nothing to do", done, twoMoves, nil, cmdutil.ExitOK,
			"kplan reassign apply (execute): nothing to do: every partition already has its target replicas", ""},
		{"no wait, throttled", skewed, twoMoves, func(o *ApplyOptions) { o.Yes, o.NoWait, o.Throttle = true, true, 1000 }, cmdutil.ExitOK,
			"kplan reassign apply (execute): 2 partition moves started; run with --verify to follow them; the throttle stays until --verify or --cancel removes it; no preferred leader election without waiting (--verify elects once the plan is complete)", ""},
		{"wait timeout", skewed, twoMoves, func(o *ApplyOptions) { o.Yes, o.WaitTimeout = true, 3*time.Second }, cmdutil.ExitRuntime, "",
			"--wait-timeout: not complete after 3s: the reassignment goes on; follow it with --verify or stop it with --cancel"},
		{"verify: complete", done, twoMoves, func(o *ApplyOptions) { o.Mode = apply.ModeVerify }, cmdutil.ExitOK,
			"kplan reassign apply (verify): complete: 2 partitions have their target replicas; throttle removed; every partition is led by its first replica", ""},
		{"verify: in progress", inProgress, twoMoves, func(o *ApplyOptions) { o.Mode = apply.ModeVerify }, cmdutil.ExitFindings,
			"kplan reassign apply (verify): in progress: 0 of 2 partitions complete", ""},
		{"verify: differs", skewed, twoMoves, func(o *ApplyOptions) { o.Mode = apply.ModeVerify }, cmdutil.ExitRuntime,
			"kplan reassign apply (verify): 2 partitions differ from the plan and are not being reassigned", ""},
		{"cancel refused without --yes", inProgress, twoMoves, func(o *ApplyOptions) { o.Mode = apply.ModeCancel }, cmdutil.ExitRefused, "",
			"--yes: needed to cancel 1 reassignments on a cluster that is not the local kplan lab; nothing was changed"},
		{"cancel", inProgress, twoMoves, func(o *ApplyOptions) { o.Mode, o.Yes = apply.ModeCancel, true }, cmdutil.ExitOK,
			"kplan reassign apply (cancel): cancelled 1 reassignments in progress; throttle removed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := tc.adm()
			code, out, errOut, msg := runFake(t, adm, tc.plan, tc.mod)
			assert.Equal(t, tc.code, code, msg)
			assert.Equal(t, tc.err, msg)
			if tc.out == "" {
				assert.Empty(t, out)
			} else {
				first, _, _ := strings.Cut(out, "\n")
				assert.Equal(t, tc.out, first)
			}
			if tc.code == cmdutil.ExitRefused {
				assert.Contains(t, errOut, "Plan for k1:9092", "the plan is shown before a refusal")
				assert.NotContains(t, strings.Join(adm.Calls, ";"), "Reassign", "a refusal changed the cluster")
			}
		})
	}
}

var goldenExt = map[report.Format]string{report.Table: "txt", report.JSON: "json"}

// keepLeaders is a plan whose moves leave a/0 and a/1 led by broker 1,
// which stays among their replicas: Kafka keeps it, the plan wants 2 and 3.
const keepLeaders = `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,1]},{"topic":"a","partition":1,"replicas":[3,1]}]}`

// The regression: apply elects the plan's leaders after the move and says
// so, in the plan it shows, on stderr and in the result; the JSON carries
// the election object.
func TestApplyElects(t *testing.T) {
	for _, format := range []report.Format{report.Table, report.JSON} {
		t.Run(string(format), func(t *testing.T) {
			adm := skewed()
			adm.FinishPerPoll = 2
			code, out, errOut, msg := runFake(t, adm, keepLeaders, func(o *ApplyOptions) { o.Yes, o.Format = true, format })
			require.Equal(t, cmdutil.ExitOK, code, msg)
			assert.Equal(t, `Plan for k1:9092: 2 of 2 partitions to change
  a/0: [1,2] -> [2,1] (pending)
  a/1: [1,2] -> [3,1] (pending)
  then elect preferred leaders of 2 partitions
kplan reassign apply: the controller accepted 2 partition moves
kplan reassign apply: 2 of 2 partitions complete, 0 in progress (0s)
kplan reassign apply: preferred leader election: 2 of 2 partitions elected
`, errOut)
			golden.AssertString(t, "apply-elect."+goldenExt[format], out)
			assert.Equal(t, []int32{2, 3}, []int32{adm.Parts[0].Leader, adm.Parts[1].Leader})
		})
	}
}

// --no-elect moves the replicas only and prints how to elect the rest;
// --no-wait elects nothing and says so.
func TestApplyNoElect(t *testing.T) {
	adm := skewed()
	adm.FinishPerPoll = 2
	code, out, errOut, msg := runFake(t, adm, keepLeaders, func(o *ApplyOptions) { o.Yes, o.NoElect = true, true })
	require.Equal(t, cmdutil.ExitOK, code, msg)
	first, _, _ := strings.Cut(out, "\n")
	assert.Equal(t, "kplan reassign apply (execute): complete: 2 partitions have their target replicas; 2 partitions left led by another replica than their first (--no-elect)", first)
	assert.NotContains(t, errOut, "then elect")
	assert.Contains(t, errOut, "kplan reassign apply: 2 partitions are not led by their first replica; elect them with kafka-leader-election --bootstrap-server k1:9092 --election-type PREFERRED")
	assert.NotContains(t, strings.Join(adm.Calls, "\n"), "Elect")
	assert.Equal(t, []int32{1, 1}, []int32{adm.Parts[0].Leader, adm.Parts[1].Leader})

	adm = skewed()
	code, out, errOut, msg = runFake(t, adm, keepLeaders, func(o *ApplyOptions) { o.Yes, o.NoWait, o.Format = true, true, report.JSON })
	require.Equal(t, cmdutil.ExitOK, code, msg)
	assert.NotContains(t, errOut, "then elect")
	var got struct {
		Message  string `json:"message"`
		Election struct {
			Skipped string `json:"skipped"`
		} `json:"election"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "no-wait", got.Election.Skipped)
	assert.Contains(t, got.Message, "no preferred leader election without waiting")
}

// A partition the controller refuses and one whose leader never moves:
// the table lists both, the JSON names them, and the exit code is 1.
func TestApplyElectPartial(t *testing.T) {
	for _, format := range []report.Format{report.Table, report.JSON} {
		t.Run(string(format), func(t *testing.T) {
			adm := skewed()
			adm.FinishPerPoll = 2
			adm.ElectErrs[adm.Parts[1].Key()] = errors.New("PREFERRED_LEADER_NOT_AVAILABLE: Failed to elect leader for partition a-1")
			adm.LateLeaders = -1
			code, out, errOut, msg := runFake(t, adm, keepLeaders, func(o *ApplyOptions) { o.Yes, o.Format = true, format })
			assert.Equal(t, cmdutil.ExitRuntime, code, msg)
			assert.Empty(t, msg, "the report says it all")
			assert.Contains(t, errOut, "preferred leader election: 1 of 2 partitions elected, 1 refused\n")
			golden.AssertString(t, "apply-elect-partial."+goldenExt[format], out)
		})
	}
}

// The regression: an interrupt (SIGINT cancels the command's context)
// while apply waits used to end with "stopped waiting" alone, leaving the
// throttle on the brokers and printing nothing. Now the throttle is
// removed from the running brokers and the plan's topics, the last state
// seen is printed, and the error says what goes on and how to stop it.
func TestApplyInterrupted(t *testing.T) {
	const throttleLeft = "leader.replication.throttled.rate and follower.replication.throttled.rate on brokers 1,2,3 and " +
		"leader.replication.throttled.replicas and follower.replication.throttled.replicas on topic a; remove it with: " +
		"kafka-configs --bootstrap-server k1:9092 --alter --entity-type brokers --entity-name 1 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && " +
		"kafka-configs --bootstrap-server k1:9092 --alter --entity-type brokers --entity-name 2 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && " +
		"kafka-configs --bootstrap-server k1:9092 --alter --entity-type brokers --entity-name 3 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && " +
		"kafka-configs --bootstrap-server k1:9092 --alter --entity-type topics --entity-name a --delete-config leader.replication.throttled.replicas,follower.replication.throttled.replicas"
	for _, tc := range []struct {
		name     string
		throttle int64
		clearErr error
		calls    string
		note     string
	}{
		{"throttled", 1000, nil, "SetThrottle 1000 [1 2 3] map[a:[0:1 0:2 1:1 1:2]] map[a:[0:3 1:3]];Reassign a-0 [2 3];Reassign a-1 [1 3];ClearThrottle [1 2 3] [a]",
			"; the throttle was removed, so it runs unthrottled;"},
		{"clearing fails", 1000, errors.New("CLUSTER_AUTHORIZATION_FAILED"), "SetThrottle 1000 [1 2 3] map[a:[0:1 0:2 1:1 1:2]] map[a:[0:3 1:3]];Reassign a-0 [2 3];Reassign a-1 [1 3];ClearThrottle [1 2 3] [a]",
			"; removing the throttle failed (CLUSTER_AUTHORIZATION_FAILED), so it may still be set: " + throttleLeft + ";"},
		{"unthrottled", 0, nil, "Reassign a-0 [2 3];Reassign a-1 [1 3]", ";"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := skewed()
			adm.FinishPerPoll = 1
			if tc.clearErr != nil {
				adm.Errs["ClearThrottle"] = tc.clearErr
			}
			path := filepath.Join(t.TempDir(), "plan.json")
			require.NoError(t, os.WriteFile(path, []byte(twoMoves), 0o644))
			ios, _, out, errOut := iostreams.Test()
			f := cmdutil.NewTestFactory()
			f.IOStreams = ios
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := applytest.NewClock()
			clock.Cancel = cancel // the interrupt comes during the first wait
			o := &ApplyOptions{IO: ios, f: f, Format: report.Table, Plan: path, Mode: apply.ModeExecute,
				Options: target.Options{BootstrapServers: "k1:9092", Timeout: time.Second, LabDir: t.TempDir()}, Poll: time.Second, admin: adm, clock: clock, Yes: true, Throttle: tc.throttle}
			err := runApply(ctx, o)
			require.Error(t, err)
			assert.Equal(t, cmdutil.ExitRuntime, cmdutil.ExitCode(err))
			assert.Equal(t, "interrupted (context canceled) with 1 of 2 partitions complete: the reassignment of the other 1 goes on in the cluster"+tc.note+
				" follow it with kplan reassign apply "+path+" --verify or stop it with --cancel", err.Error())
			assert.Equal(t, tc.calls, strings.Join(adm.Calls, ";"))
			first, _, _ := strings.Cut(out.String(), "\n")
			assert.Equal(t, "kplan reassign apply (execute): in progress: 1 of 2 partitions complete", first, "the partial result")
			assert.Contains(t, errOut.String(), "1 of 2 partitions complete, 1 in progress")
		})
	}
}

// TestApplySecondSignal: SIGINT while apply waits starts removing the
// throttle; the cluster does not answer, and a second signal (SIGTERM)
// cuts the removal short. The partial result (with throttle_left in JSON)
// is printed and the last line names every config left on every broker and
// topic, with the kafka-configs commands that delete them; exit 1.
func TestApplySecondSignal(t *testing.T) {
	adm := skewed()
	adm.FinishPerPoll = 1
	adm.Hang = map[string]bool{"ClearThrottle": true}
	adm.Hung = make(chan string, 1)
	path := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(twoMoves), 0o644))
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewTestFactory()
	f.IOStreams = ios
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	clock := applytest.NewClock()
	clock.Cancel = func() { // the first signal: app's signal context ends
		sigs <- syscall.SIGINT
		cancel(errors.New("interrupt signal received"))
	}
	go func() { <-adm.Hung; sigs <- syscall.SIGTERM }()
	o := &ApplyOptions{IO: ios, f: f, Format: report.JSON, Plan: path, Mode: apply.ModeExecute,
		Options: target.Options{BootstrapServers: "k1:9092", CommandConfig: "client.properties", Timeout: time.Hour, LabDir: t.TempDir()}, Poll: time.Second, admin: adm, clock: clock, Yes: true, Throttle: 1000, signals: sigs}
	err := runApply(ctx, o)
	require.Error(t, err)
	assert.Equal(t, cmdutil.ExitRuntime, cmdutil.ExitCode(err))
	assert.Equal(t, "interrupted (interrupt signal received) with 1 of 2 partitions complete: the reassignment of the other 1 goes on in the cluster; "+
		"removing the throttle was cut short by a second signal, so it may still be set: leader.replication.throttled.rate and follower.replication.throttled.rate on brokers 1,2,3 and "+
		"leader.replication.throttled.replicas and follower.replication.throttled.replicas on topic a; remove it with: "+
		"kafka-configs --bootstrap-server k1:9092 --command-config client.properties --alter --entity-type brokers --entity-name 1 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && "+
		"kafka-configs --bootstrap-server k1:9092 --command-config client.properties --alter --entity-type brokers --entity-name 2 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && "+
		"kafka-configs --bootstrap-server k1:9092 --command-config client.properties --alter --entity-type brokers --entity-name 3 --delete-config leader.replication.throttled.rate,follower.replication.throttled.rate && "+
		"kafka-configs --bootstrap-server k1:9092 --command-config client.properties --alter --entity-type topics --entity-name a --delete-config leader.replication.throttled.replicas,follower.replication.throttled.replicas; "+
		"follow it with kplan reassign apply "+path+" --verify or stop it with --cancel", err.Error())
	assert.Contains(t, errOut.String(), "kplan reassign apply: interrupted; removing the replication throttle (interrupt again to leave it in place)\n")
	var res struct {
		Outcome      string `json:"outcome"`
		ThrottleLeft struct {
			Brokers       []int32  `json:"brokers"`
			BrokerConfigs []string `json:"broker_configs"`
			Topics        []string `json:"topics"`
			TopicConfigs  []string `json:"topic_configs"`
		} `json:"throttle_left"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Equal(t, "in-progress", res.Outcome)
	assert.Equal(t, []int32{1, 2, 3}, res.ThrottleLeft.Brokers)
	assert.Equal(t, []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}, res.ThrottleLeft.BrokerConfigs)
	assert.Equal(t, []string{"a"}, res.ThrottleLeft.Topics)
	assert.Equal(t, []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}, res.ThrottleLeft.TopicConfigs)
}
