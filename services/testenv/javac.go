package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// FlussClientJar is the jar that tells a directory holds the Fluss client and its dependencies
// (tools/install.sh resolves them into .cache/fluss/client-lib).
const FlussClientJar = "fluss-client-0.9.1-incubating.jar"

// CompileWithFlussClient compiles Java sources into dir against the jars in lib and returns the
// classpath that runs them: dir, then lib's jars. Benchmarks use it for the Fluss Java writer
// they compare against.
func CompileWithFlussClient(ctx context.Context, lib, dir string, sources ...string) (string, error) {
	if _, err := os.Stat(filepath.Join(lib, FlussClientJar)); err != nil {
		return "", fmt.Errorf("no Fluss client jars in %s (run tools/install.sh): %w", lib, err)
	}
	cp := filepath.Join(lib, "*")
	args := append([]string{"--release", "17", "-nowarn", "-d", dir, "-cp", cp}, sources...)
	if out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %v: %w\n%s", sources, err, out)
	}
	return dir + string(os.PathListSeparator) + cp, nil
}
