package testtool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var builds sync.Map // absolute project dir -> *mavenBuild

type mavenBuild struct {
	once      sync.Once
	classpath string
	err       error
}

// JavaMain builds the Maven project in dir (once per test binary) and runs
// its class mainClass with args, returning what it wrote to standard output.
// A missing java or mvn skips the test, or fails it under CI=true; a failed
// build or a non-zero exit fails it with the tool's output.
func JavaMain(tb testing.TB, dir, mainClass string, args ...string) []byte {
	tb.Helper()
	java := Require(tb, "java")
	cp := MavenClasspath(tb, dir)
	cmd := exec.Command(java, append([]string{"-cp", cp, mainClass}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("java %s %s: %v\n%s", mainClass, strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	return stdout.Bytes()
}

// JavaMainPerFile runs mainClass (as JavaMain) on input files and splits
// its output, where each file's answer follows a line "== NAME", into the
// answers by NAME: the protocol of the parity harnesses under interop/.
func JavaMainPerFile(tb testing.TB, dir, mainClass string, files ...string) map[string]string {
	tb.Helper()
	out := string(JavaMain(tb, dir, mainClass, files...))
	res := map[string]string{}
	for _, chunk := range strings.Split(out, "== ")[1:] {
		name, body, _ := strings.Cut(chunk, "\n")
		res[name] = body
	}
	return res
}

// MavenClasspath builds the Maven project in dir (once per test binary:
// mvn package plus its dependency classpath) and returns the classpath of
// its classes and dependencies. A missing mvn skips the test, or fails it
// under CI=true; a failed build fails it with the tool's output.
func MavenClasspath(tb testing.TB, dir string) string {
	tb.Helper()
	cp, err := buildMaven(Require(tb, "mvn"), dir)
	if err != nil {
		tb.Fatalf("maven build of %s: %v", dir, err)
	}
	return cp
}

func buildMaven(mvn, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	v, _ := builds.LoadOrStore(abs, &mavenBuild{})
	b := v.(*mavenBuild)
	b.once.Do(func() {
		cpFile := filepath.Join(abs, "target", "classpath.txt")
		cmd := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(abs, "pom.xml"), "-DskipTests",
			"package", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("%v\n%s", err, tail(string(out), 4000))
			return
		}
		deps, err := os.ReadFile(cpFile)
		if err != nil {
			b.err = err
			return
		}
		b.classpath = filepath.Join(abs, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	return b.classpath, b.err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
