package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/deploy"
)

// prometheusFlags are `fakelet controlplane up`'s Prometheus server flags.
type prometheusFlags struct {
	enabled bool
	binary  string
	targets []string
}

func addPrometheusFlags(f *pflag.FlagSet, pf *prometheusFlags) {
	f.BoolVar(&pf.enabled, "prometheus", false, "also start a Prometheus server on loopback scraping the control plane and fakelet, with deploy/prometheus's configuration in DIR/prometheus (needs a prometheus binary: apt-get install prometheus)")
	f.StringVar(&pf.binary, "prometheus-bin", "", "the prometheus binary for --prometheus (default: prometheus on $PATH)")
	addFakeletTargetFlag(f, &pf.targets)
}

func addFakeletTargetFlag(f *pflag.FlagSet, targets *[]string) {
	f.StringArrayVar(targets, "fakelet-target", []string{deploy.DefaultFakeletTarget}, "host:port of a fakelet run's --metrics-addr for Prometheus to scrape (repeatable)")
}

// options returns the Prometheus options of controlplane.Options: nil without --prometheus.
func (pf prometheusFlags) options() *controlplane.PrometheusOptions {
	if !pf.enabled {
		return nil
	}
	return &controlplane.PrometheusOptions{Binary: pf.binary, FakeletTargets: pf.targets}
}

func newControlPlanePrometheusConfigCommand() *cobra.Command {
	var dir, out string
	var targets []string
	cmd := &cobra.Command{
		Use:   "prometheus-config",
		Short: "Write the Prometheus configuration for the running control plane in --controlplane-dir",
		Long: `Write deploy/prometheus's configuration for the control plane running in --controlplane-dir: prometheus.yml,
rules.yml, targets/*.json with the components' ports and the --fakelet-target addresses, and tls/
with the control plane's CA and admin client certificate. Run a Prometheus server of your own on it,
or run it again after the control plane came up on new ports: a Prometheus server reads changed
targets by itself. ` + "`fakelet controlplane up --prometheus`" + ` writes the same into DIR/prometheus.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cp, err := controlplane.Attach(dir)
			if err != nil {
				return err
			}
			config, err := cp.WritePrometheusConfig(out, targets)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "wrote %s (with %s, targets/ and tls/ beside it)\n", config, deploy.RulesFile)
			if cp.PrometheusURL() != "" && filepath.Dir(config) == controlplane.PrometheusDir(cp.Dir) {
				fmt.Fprintf(w, "the Prometheus server at %s reads the new targets by itself\n", cp.PrometheusURL())
				return nil
			}
			fmt.Fprintf(w, "run: prometheus --config.file=%s --storage.tsdb.path=%s --web.listen-address=127.0.0.1:9090\n",
				config, filepath.Join(filepath.Dir(config), "data"))
			return nil
		},
	}
	addControlPlaneDirFlag(cmd, &dir)
	cmd.Flags().StringVar(&out, "out", "", "directory to write to (default: DIR/prometheus)")
	addFakeletTargetFlag(cmd.Flags(), &targets)
	return cmd
}
