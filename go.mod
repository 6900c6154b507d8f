module fakelet.dev/fakelet

go 1.26.0

require (
	github.com/spf13/cobra v1.10.2
	go.uber.org/goleak v1.3.0
	k8s.io/client-go v0.37.2
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
