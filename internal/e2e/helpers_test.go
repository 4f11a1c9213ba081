package e2e

import (
	"context"
	"path/filepath"
	"runtime"
	"time"

	"github.com/kplan-dev/kplan/internal/app"
	"github.com/kplan-dev/kplan/internal/cmdutil"
	"github.com/kplan-dev/kplan/internal/iostreams"
)

// kplan runs kplan in process and returns its exit code, stdout and stderr.
func kplan(ctx context.Context, args ...string) (int, string, string) {
	ios, _, out, errOut := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Version: "test", Now: time.Now}
	code := app.Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

// repo is a path of the repository, from this package's directory.
func repo(rel string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", rel)
}
