package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/internal/run"
)

// target is the cluster a command talks to, and how to let go of it afterwards.
type target = run.Target

type targetFlags struct {
	kubeconfig, context string
	controlPlaneDir     string
	binDir              string
	apiServerArgs       []string
	controllerMgrArgs   []string
	schedulerArgs       []string
	// insecure turns TLS verification off for a cluster given by --kubeconfig or --context
	// (--insecure-skip-tls-verify). The local control plane is always verified: fakelet made its CA.
	insecure bool
	// inCluster targets the cluster a pod runs in, with its ServiceAccount (--in-cluster).
	inCluster bool
}

// addInClusterFlag adds --in-cluster, off by default.
func addInClusterFlag(f *pflag.FlagSet, tf *targetFlags) {
	f.BoolVar(&tf.inCluster, "in-cluster", false,
		"target the cluster this pod runs in, with its ServiceAccount (as in deploy/kubernetes); not with --kubeconfig or --context")
}

// inClusterTarget is the cluster the pod runs in.
func inClusterTarget(f targetFlags) (*target, error) {
	if f.kubeconfig != "" || f.context != "" {
		return nil, fmt.Errorf("--in-cluster targets the pod's own cluster: give it without --kubeconfig and --context")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("--in-cluster: %w", err)
	}
	if f.insecure {
		cfg.Insecure = true
		cfg.CAFile, cfg.CAData = "", nil
	}
	return &target{Config: cfg, Description: cfg.Host + " (in-cluster, the pod's ServiceAccount)",
		Release: func(context.Context) error { return nil }}, nil
}

// addInsecureFlag adds --insecure-skip-tls-verify, off by default.
func addInsecureFlag(f *pflag.FlagSet, tf *targetFlags) {
	f.BoolVar(&tf.insecure, "insecure-skip-tls-verify", false,
		"do not verify the apiserver's certificate of a cluster given by --kubeconfig or --context (throwaway test clusters only)")
}

// kubeconfigTarget is the cluster named by --kubeconfig and --context. TLS verification stays on
// unless --insecure-skip-tls-verify is given: a kubeconfig that turns it off is refused, so that
// only an explicit flag can.
func kubeconfigTarget(f targetFlags) (*target, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	raw, _ := cc.RawConfig()
	ctxName := f.context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	description := fmt.Sprintf("%s (context %s)", cfg.Host, ctxName)
	plain, err := isPlainHTTP(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", ctxName, err)
	}
	if plain {
		description += ", plain HTTP"
	}
	switch {
	case f.insecure:
		cfg.Insecure = true
		cfg.CAFile, cfg.CAData = "", nil // client-go refuses a CA together with Insecure
		description += ", TLS verification OFF (--insecure-skip-tls-verify)"
	case cfg.Insecure:
		return nil, fmt.Errorf("kubeconfig context %s turns TLS verification off (insecure-skip-tls-verify); "+
			"fakelet verifies the apiserver's certificate unless --insecure-skip-tls-verify is given", ctxName)
	}
	t := &target{Config: cfg, Description: description, Release: func(context.Context) error { return nil }}
	if plain {
		t.Warning = fmt.Sprintf("warning: kubeconfig context %s talks to %s over plain HTTP: requests and credentials go unencrypted, and nothing proves that the server is the cluster",
			ctxName, cfg.Host)
	}
	return t, nil
}

// isPlainHTTP tells whether cfg talks to its server without TLS: an http:// server, or a bare host
// with no TLS configured, which client-go also reaches over plain HTTP.
func isPlainHTTP(cfg *rest.Config) (bool, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return false, err
	}
	return u.Scheme == "http", nil
}

// resolveTarget picks the cluster: the pod's own with --in-cluster, the one named by --kubeconfig or
// --context, or else the local control plane, started if none is up and stopped at release if this
// run started it. $KUBECONFIG is never used unless one of the two flags asks for a kubeconfig, and
// the cluster around a pod only with --in-cluster.
func resolveTarget(ctx context.Context, f targetFlags, progress io.Writer) (*target, error) {
	if f.inCluster {
		return inClusterTarget(f)
	}
	if f.kubeconfig != "" || f.context != "" {
		t, err := kubeconfigTarget(f)
		if err == nil {
			err = refuseStandIn(ctx, t.Config)
		}
		if err == nil && t.Warning != "" {
			fmt.Fprintln(progress, t.Warning)
		}
		return t, err
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		// In a pod: the cluster around it is only ever targeted by --in-cluster, never by default.
		fmt.Fprintln(progress, "note: this runs in a pod (KUBERNETES_SERVICE_HOST is set), and the target is the local control plane: "+
			"give --in-cluster to target the pod's cluster")
	}
	opts := controlplane.Options{
		Dir: f.controlPlaneDir, BinDir: f.binDir, Progress: progress,
		APIServerArgs: f.apiServerArgs, ControllerManagerArgs: f.controllerMgrArgs, SchedulerArgs: f.schedulerArgs,
		UntilLastUser: true,
	}
	// Other runs may use the same control plane at once: each is counted as a user until release,
	// and one that a run started stops with the last of them.
	cp, err := controlplane.Join(ctx, f.controlPlaneDir)
	switch {
	case err == nil && len(f.apiServerArgs)+len(f.controllerMgrArgs)+len(f.schedulerArgs) > 0:
		if _, lerr := cp.Leave(context.WithoutCancel(ctx)); lerr != nil {
			fmt.Fprintln(progress, lerr)
		}
		return nil, fmt.Errorf("a control plane already runs in %s, so the component arguments cannot apply: stop it first (fakelet controlplane down --controlplane-dir %s)", cp.Dir, cp.Dir)
	case err != nil:
		fmt.Fprintln(progress, "starting the local control plane in", f.controlPlaneDir)
		if cp, err = controlplane.Up(ctx, opts); err != nil {
			return nil, err
		}
	}
	return &target{
		Config:      cp.AdminConfig(),
		Description: fmt.Sprintf("%s (local control plane in %s)", cp.APIServerURL, cp.Dir),
		Local:       cp,
		Release: func(ctx context.Context) error {
			left, err := cp.Leave(ctx)
			if err == nil {
				fmt.Fprintln(progress, left)
			}
			return err
		},
	}, nil
}
