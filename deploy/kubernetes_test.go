package deploy

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
)

// TestDockerfileBuildsAsTheMakefileDoes: the image's build stage runs `make build`'s go build with
// the same arguments (but the output path), with CGO off for a static binary, on the Go release
// go.mod asks for; the final stage is distroless or scratch and runs as a non-root user.
func TestDockerfileBuildsAsTheMakefileDoes(t *testing.T) {
	make := recipe(t, "../Makefile", "build")
	if len(make) != 1 {
		t.Fatalf("make build has %d commands, want 1: %q", len(make), make)
	}
	want := strings.Fields(strings.ReplaceAll(make[0], "$(GO)", "go"))

	stages := dockerStages(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}
	var build []string
	for _, line := range stages[0] {
		if cmd, ok := strings.CutPrefix(line, "RUN "); ok && strings.Contains(cmd, " build ") {
			build = strings.Fields(cmd)
		}
	}
	if len(build) == 0 || build[0] != "CGO_ENABLED=0" {
		t.Fatalf("the build stage's go build %q does not start with CGO_ENABLED=0", build)
	}
	build = build[1:]
	if len(build) != len(want) {
		t.Fatalf("Dockerfile builds with %q, the Makefile with %q", build, want)
	}
	for i := range want {
		if want[i] != build[i] && !(i > 0 && want[i-1] == "-o") {
			t.Errorf("Dockerfile builds with %q, the Makefile with %q: they differ at %q", build, want, build[i])
		}
	}

	goMod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if from := stages[0][0]; goVersion == nil || !strings.HasPrefix(from, "FROM golang:"+string(goVersion[1])+" ") {
		t.Errorf("the build stage is %q; want golang:%s as go.mod says", from, goVersion[1])
	}

	final := stages[len(stages)-1]
	if from := final[0]; !strings.HasPrefix(from, "FROM gcr.io/distroless/static") && from != "FROM scratch" {
		t.Errorf("the final stage is %q, want distroless static or scratch", from)
	}
	var user string
	for _, line := range final {
		if u, ok := strings.CutPrefix(line, "USER "); ok {
			user = u
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "root" || name == "0" {
		t.Errorf("the final stage runs as user %q, want a non-root one", user)
	}
}

// recipe returns the commands of a Makefile target.
func recipe(t *testing.T, path, target string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			out = append(out, strings.TrimSpace(line))
		case in:
			return out
		}
	}
	return out
}

// dockerStages returns a Dockerfile's instructions by stage, comments and blank lines left out.
func dockerStages(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "FROM "):
			stages = append(stages, []string{line})
		case len(stages) > 0:
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	return stages
}

// object is the part of a Kubernetes object these tests read.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Rules []struct {
		APIGroups     []string `yaml:"apiGroups"`
		Resources     []string `yaml:"resources"`
		Verbs         []string `yaml:"verbs"`
		ResourceNames []string `yaml:"resourceNames"`
	} `yaml:"rules"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name, Value string
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func decodeObjects(t *testing.T, b []byte) []object {
	t.Helper()
	var out []object
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
}

func readObjects(t *testing.T, path string) []object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeObjects(t, b)
}

// TestKubernetesRBACIsDeployRBAC: the StatefulSet's roles are deploy/rbac/fakelet.yaml's, and they
// grant what a run with --identity=node asks for (fleet.RunPermissions), fakelet cleanup
// (fleet.CleanupPermissions), Leases in kube-node-lease only, and what --start-at auto does with the
// start Lease in namespace fakelet (lockstep.Permissions); and nothing that none of those asks for.
func TestKubernetesRBACIsDeployRBAC(t *testing.T) {
	roles := func(objs []object) map[string]object {
		out := map[string]object{}
		for _, o := range objs {
			if o.Kind == "ClusterRole" || o.Kind == "Role" {
				out[o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name] = o
			}
		}
		return out
	}
	base, ref := roles(readObjects(t, "kubernetes/base/rbac.yaml")), roles(readObjects(t, "rbac/fakelet.yaml"))
	// fakelet's ClusterRole and Roles in kube-node-lease and fakelet, KubeletRBAC's three roles
	// for the 1000 nodes, and ClaimsRBAC's.
	if len(base) != 7 || len(base) != len(ref) {
		t.Fatalf("roles %v, want deploy/rbac's %v", keys(base), keys(ref))
	}
	for k, want := range ref {
		if got, ok := base[k]; !ok || !equalRules(got, want) {
			t.Errorf("%s: rules %+v, want deploy/rbac's %+v", k, got.Rules, want.Rules)
		}
	}
	byNamespace := map[string][]object{}
	for _, r := range base {
		byNamespace[r.Metadata.Namespace] = append(byNamespace[r.Metadata.Namespace], r)
	}
	perms := slices.Concat(fleet.RunPermissions(fleet.IdentityNode, "fakelet-00000"), fleet.RunPermissions(fleet.IdentityNode, "fakelet-00999"),
		fleet.CleanupPermissions(), lockstep.Permissions(lockstep.DefaultNamespace), fleet.ClaimPermissions(fleetname.ClaimName(fleetname.DefaultNamePrefix, fleetname.Shard{})))
	used := map[string]bool{} // namespace/group/resource/verb
	for _, p := range perms {
		roles, ok := byNamespace[p.Namespace]
		if !ok || p.Namespace != "" && p.Namespace != agent.LeaseNamespace && p.Namespace != lockstep.DefaultNamespace {
			t.Errorf("permission %+v outside kube-node-lease and %s", p, lockstep.DefaultNamespace)
		}
		if !slices.ContainsFunc(roles, func(r object) bool { return grants(r, p) }) {
			t.Errorf("no rule grants %s %s/%s %s in %q (%s)", p.Verb, p.Group, p.Resource, p.Name, p.Namespace, p.For)
		}
		used[p.Namespace+"/"+p.Group+"/"+p.Resource+"/"+p.Verb] = true
	}
	for k, r := range base {
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						if !used[r.Metadata.Namespace+"/"+g+"/"+res+"/"+v] {
							t.Errorf("%s grants %s %s.%s, which fakelet never asks for", k, v, res, g)
						}
					}
				}
			}
		}
	}
}

// grants says whether one of role's rules allows p.
func grants(role object, p access.Permission) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, p.Group) && slices.Contains(r.Resources, p.Resource) && slices.Contains(r.Verbs, p.Verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, p.Name)) {
			return true
		}
	}
	return false
}

func equalRules(a, b object) bool {
	if len(a.Rules) != len(b.Rules) {
		return false
	}
	for i := range a.Rules {
		x, y := a.Rules[i], b.Rules[i]
		if !slices.Equal(x.APIGroups, y.APIGroups) || !slices.Equal(x.Resources, y.Resources) ||
			!slices.Equal(x.Verbs, y.Verbs) || !slices.Equal(x.ResourceNames, y.ResourceNames) {
			return false
		}
	}
	return true
}

func keys(m map[string]object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// kustomize renders a kustomization directory with kustomize pinned in tools/kustomize (built once
// into the test's cache); it is for tests, and skips the test under -short since the first build
// takes minutes.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	bin := kustomizeBinary(t)
	out, err := exec.Command(bin, "build", dir).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("kustomize build %s: %s", dir, msg)
	}
	return out
}

func kustomizeBinary(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("FAKELET_KUSTOMIZE"); path != "" {
		return path
	}
	if testing.Short() {
		t.Skip("building kustomize (tools/kustomize) takes minutes: not under -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "kustomize")
	cmd := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/kustomize/kustomize/v5")
	cmd.Dir = filepath.Join(root, "tools", "kustomize")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kustomize: %v\n%s", err, out)
	}
	return bin
}

// TestKustomizations: each overlay renders, its StatefulSet's replicas equal the shard count of
// FAKELET_SHARD (auto/N), the whole fleet's --nodes splits into shards of at least one node and no
// more than the requests are sized for, it runs in the cluster (--in-cluster) a profile in lockstep
// (--start-at=auto) and then waits (--after-run=wait), the Leases' Role stays in kube-node-lease, and
// the users it may impersonate are exactly the kubelets of the fleet's --nodes.
func TestKustomizations(t *testing.T) {
	for _, tc := range []struct {
		overlay      string
		shards       int
		clusterRoles int // fakelet's and those of KubeletRBAC, two a chunk
		roles        int // fakelet's two, its claims' and KubeletRBAC's, one a chunk
	}{{"small", 1, 3, 4}, {"large", 5, 23, 14}} {
		t.Run(tc.overlay, func(t *testing.T) {
			objs := decodeObjects(t, kustomize(t, filepath.Join("kubernetes", "overlays", tc.overlay)))
			kinds := map[string]int{}
			users := map[string]bool{}
			var wantUsers []string
			for _, o := range objs {
				kinds[o.Kind]++
				switch o.Kind {
				case "ClusterRole":
					for _, r := range o.Rules {
						if slices.Contains(r.Resources, "users") {
							for _, u := range r.ResourceNames {
								users[u] = true
							}
						}
					}
				case "Role", "RoleBinding":
					want := map[string]string{"fakelet": "kube-node-lease", "fakelet-start": lockstep.DefaultNamespace}[o.Metadata.Name]
					if strings.HasPrefix(o.Metadata.Name, "fakelet-leases-") || strings.HasPrefix(o.Metadata.Name, "fakelet-claims-") {
						want = "kube-node-lease"
					}
					if o.Metadata.Namespace != want {
						t.Errorf("%s %s in namespace %q, want %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, want)
					}
				case "StatefulSet":
					c := o.Spec.Template.Spec.Containers[0]
					if o.Spec.Replicas == nil || *o.Spec.Replicas != tc.shards {
						t.Errorf("replicas %v, want %d", o.Spec.Replicas, tc.shards)
					}
					var shard string
					for _, e := range c.Env {
						if e.Name == fleetname.ShardEnv {
							shard = e.Value
						}
					}
					if want := "auto/" + strconv.Itoa(tc.shards); shard != want {
						t.Errorf("%s=%q, want %q", fleetname.ShardEnv, shard, want)
					}
					if !slices.Contains(c.Args, "--in-cluster") || c.Args[0] != "run" {
						t.Errorf("args %q, want run --in-cluster", c.Args)
					}
					for _, a := range c.Args {
						if n, ok := strings.CutPrefix(a, "--nodes="); ok {
							if err := (fleetname.Shard{Index: 0, Count: tc.shards}).Validate(atoi(t, n)); err != nil {
								t.Error(err)
							}
							_, perShard := (fleetname.Shard{Index: 0, Count: tc.shards}).Slice(atoi(t, n))
							if sized := atoi(t, o.Metadata.Annotations[sizedForAnnotation]); perShard > sized {
								t.Errorf("%s nodes in %d shards is %d per shard; the requests are sized for %d (%s)", n, tc.shards, perShard, sized, sizedForAnnotation)
							}
						}
					}
					if !slices.Contains(c.Args, "--start-at=auto") || !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--profile=") }) {
						t.Errorf("args %q, want a --profile played in lockstep with --start-at=auto", c.Args)
					}
					prefix := fleetname.DefaultNamePrefix
					for _, a := range c.Args {
						if p, ok := strings.CutPrefix(a, "--name-prefix="); ok {
							prefix = p
						}
					}
					for _, a := range c.Args {
						if n, ok := strings.CutPrefix(a, "--nodes="); ok {
							for i := range atoi(t, n) {
								wantUsers = append(wantUsers, "system:node:"+fleetname.NodeName(prefix, i))
							}
						}
					}
					if !slices.Contains(c.Args, "--after-run=wait") {
						t.Errorf("args %q, want --after-run=wait: a shard that exits is restarted and plays the profile again", c.Args)
					}
				}
			}
			got := slices.Sorted(maps.Keys(users))
			slices.Sort(wantUsers)
			if !slices.Equal(got, wantUsers) {
				t.Errorf("%d users may be impersonated, want exactly the %d kubelets of the fleet", len(got), len(wantUsers))
			}
			for k, n := range map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": tc.clusterRoles, "ClusterRoleBinding": tc.clusterRoles,
				"Role": tc.roles, "RoleBinding": tc.roles, "Service": 1, "StatefulSet": 1, "NetworkPolicy": 1} {
				if kinds[k] != n {
					t.Errorf("%d %s objects, want %d", kinds[k], k, n)
				}
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
