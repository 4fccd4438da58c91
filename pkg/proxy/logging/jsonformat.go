package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// JSONPattern turns the bootstrap's application_log_config.log_format
// json_format into the spdlog pattern of its records, as Envoy's
// setJsonLogFormat does: the struct as compact JSON (keys sorted), whose
// string values hold the --log-format flags. %v and %_ would put the raw
// message into the JSON and are refused; %j is the JSON-escaped message.
func JSONPattern(s *structpb.Struct) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Envoy's JSON printer leaves <, > and & as they are.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.AsMap()); err != nil {
		return "", err
	}
	pattern := strings.TrimSuffix(b.String(), "\n")
	if strings.Contains(pattern, "%v") {
		return "", errors.New("usage of %v is unavailable for JSON log formats (use %j)")
	}
	if strings.Contains(pattern, "%_") {
		return "", errors.New("usage of %_ is unavailable for JSON log formats (use %j)")
	}
	return pattern, nil
}
