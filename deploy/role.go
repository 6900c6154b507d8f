package deploy

import (
	"fmt"
	"strings"
)

// role is one ClusterRole (no namespace) or Role, bound to the ServiceAccount fakelet/fakelet by a
// binding of the same name: every grant of the generated RBAC files is one.
type role struct {
	// comment is written above the role, each of its lines a "# " line.
	comment string
	// first is the first document of its file, written without a separator before it.
	first           bool
	name, namespace string
	rules           []rule
}

// rule is one rule of a role: verbs on resources of one API group, of any name or of those listed.
type rule struct {
	group     string
	resources []string
	verbs     []string
	names     []string
	// listed writes names one a line, as the roles that list a fleet's nodes do, however many.
	listed bool
}

func (r role) write(b *strings.Builder) {
	if !r.first {
		b.WriteString("---\n")
	}
	if r.comment != "" {
		b.WriteString("# " + strings.ReplaceAll(r.comment, "\n", "\n# ") + "\n")
	}
	kind, meta := "ClusterRole", ""
	if r.namespace != "" {
		kind, meta = "Role", "\n  namespace: "+r.namespace
	}
	fmt.Fprintf(b, "apiVersion: rbac.authorization.k8s.io/v1\nkind: %s\nmetadata:\n  name: %s%s\nrules:\n", kind, r.name, meta)
	for _, ru := range r.rules {
		fmt.Fprintf(b, "- apiGroups: [%q]\n  resources: %s\n  verbs: %s\n", ru.group, flowList(ru.resources), flowList(ru.verbs))
		switch {
		case ru.listed:
			b.WriteString("  resourceNames:\n")
			for _, n := range ru.names {
				b.WriteString("  - " + n + "\n")
			}
		case len(ru.names) > 0:
			b.WriteString("  resourceNames: " + flowList(ru.names) + "\n")
		}
	}
	fmt.Fprintf(b, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: %sBinding
metadata:
  name: %s%s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: %s
  name: %s
subjects:
- kind: ServiceAccount
  name: fakelet
  namespace: fakelet
`, kind, r.name, meta, kind, r.name)
}

// flowList is a YAML flow sequence of quoted strings: ["get", "list"].
func flowList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func writeRoles(b *strings.Builder, roles ...role) {
	for _, r := range roles {
		r.write(b)
	}
}
