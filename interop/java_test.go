package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// appDir is the Maven project with every Java main class the suite runs
// (Kafka 4.4.0); the client-matrix projects build App.java against older
// Kafka Streams versions.
const (
	appDir    = "streams-app"
	app391Dir = "streams-app-3.9.1"
	app420Dir = "streams-app-4.2.0"
)

// mavenBuild is one project's build, done once per test binary.
type mavenBuild struct {
	once sync.Once
	cp   string
	err  string
}

var builds sync.Map // project dir -> *mavenBuild

func javaPath(t *testing.T) string {
	t.Helper()
	return testtool.Require(t, "java")
}

// classpath builds the Maven project in dir once per test binary (mvn
// package plus its dependency classpath) and returns its classpath.
func classpath(t *testing.T, dir string) string {
	t.Helper()
	mvn := testtool.Require(t, "mvn")
	v, _ := builds.LoadOrStore(dir, &mavenBuild{})
	mavenBuild := v.(*mavenBuild)
	mavenBuild.once.Do(func() {
		abs, err := filepath.Abs(dir)
		if err != nil {
			mavenBuild.err = err.Error()
			return
		}
		cpFile := filepath.Join(abs, "target", "classpath.txt")
		out, err := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(abs, "pom.xml"), "-DskipTests",
			"package", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile).CombinedOutput()
		if err != nil {
			mavenBuild.err = err.Error() + "\n" + string(out)
			return
		}
		deps, err := os.ReadFile(cpFile)
		if err != nil {
			mavenBuild.err = err.Error()
			return
		}
		mavenBuild.cp = filepath.Join(abs, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	if mavenBuild.err != "" {
		t.Fatalf("maven build of %s: %s", dir, mavenBuild.err)
	}
	return mavenBuild.cp
}
