package fleet

import (
	"context"
	"errors"
	"net"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"fakelet.dev/fakelet/agent"
)

// Classify returns a request's code, as the tally and the metrics label it, and its index among the
// codes the tally knows (-1 if not there). A success has no status to read (client-go returns only
// the object), so it is labelled as the apiserver labels it: 201 for a create, 200 otherwise.
func Classify(verb string, err error) (int, string) {
	if err == nil {
		if verb == "create" {
			return 1, "201"
		}
		return 0, "200"
	}
	if status, ok := err.(apierrors.APIStatus); ok { // the usual case, without errors.As's allocation
		return httpCode(status.Status().Code)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return httpCode(status.Status().Code)
	}
	var netErr net.Error
	if errors.Is(err, agent.ErrPartitioned) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()) {
		return len(knownCodes) - 2, CodeTimeout
	}
	return len(knownCodes) - 1, CodeError
}

func httpCode(code int32) (int, string) {
	switch code {
	case 200:
		return 0, "200"
	case 201:
		return 1, "201"
	case 400:
		return 2, "400"
	case 401:
		return 3, "401"
	case 403:
		return 4, "403"
	case 404:
		return 5, "404"
	case 409:
		return 6, "409"
	case 422:
		return 7, "422"
	case 429:
		return 8, "429"
	case 500:
		return 9, "500"
	case 503:
		return 10, "503"
	case 504:
		return 11, "504"
	case 0:
		return len(knownCodes) - 1, CodeError // a Status without a code: not an HTTP answer
	}
	return -1, strconv.Itoa(int(code))
}
