package controlplane

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadKiB reads the field of a /proc file whose lines are "Field:   1234 kB" (/proc/meminfo,
// /proc/<pid>/status), in bytes.
func ReadKiB(file, field string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s of %s: %w", field, file, err)
			}
			return kib << 10, nil
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in %s", field, file)
}
