# fakelet's image: a static binary on distroless, as a non-root user. Build from the repository's root:
#   docker build -t REGISTRY/fakelet:TAG .
# The build stage runs the Makefile's `make build` command (deploy/kubernetes_test.go keeps the two
# in step), with CGO off for a static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/fakelet ./cmd/fakelet

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fakelet /fakelet
USER 65532:65532
ENTRYPOINT ["/fakelet"]
